"""The API tests' users, clients and release workspace, for the import's dry run over the API."""

from tests.profiles.api.conftest import (  # noqa: F401  (fixtures)
    editor,
    editor_client,
    reader,
    reader_client,
    release,
    reviewer,
    reviewer_client,
)
