"""Context Studio's Python client: resolve and expand over the API, resilient and local
where the material allows (docs/client.md).

    from ctxstudio_client import Client
    client = Client("https://studio.example.com", key="ctx_…", timeout=2.0)
    answer = client.resolve(profile="support-answer", input={"message": "…"})
    answer.text, answer.origin, answer.data  # the context, where it came from, the bytes
"""

from ctxstudio_client.answers import (
    Answer,
    Budget,
    ExpandedItem,
    Issue,
    LayerRecord,
    Origin,
    Output,
    ProfileRef,
    Reference,
    Resolution,
)
from ctxstudio_client.client import AsyncClient, Client, __version__
from ctxstudio_client.errors import (
    ApiError,
    ClientError,
    LocalEvaluationRefused,
    ServerUnavailable,
)

__all__ = [
    "Answer",
    "ApiError",
    "AsyncClient",
    "Budget",
    "Client",
    "ClientError",
    "ExpandedItem",
    "Issue",
    "LayerRecord",
    "LocalEvaluationRefused",
    "Origin",
    "Output",
    "ProfileRef",
    "Reference",
    "Resolution",
    "ServerUnavailable",
    "__version__",
]
