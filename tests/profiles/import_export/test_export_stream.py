"""The streamed export: chunk by chunk, the same bytes as serializing the whole document."""

import json

import pytest
from rest_framework.renderers import JSONRenderer

from profiles.import_export.export_stream import (
    UnknownLayer,
    workspace_document_read,
    workspace_export_chunks,
)
from profiles.import_export.imports import workspace_import
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver.documents import dump_yaml
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db


def awkward_workspace() -> dict:
    """A workspace with what serializers trip on: unicode, line separators, long lines,
    nested metadata, a layer without items and one whose items are not in path order."""
    document = small_workspace(layers=4, items=3)
    document["layers"][0]["items"][0]["body"] = (
        "Ünïcödé — “quotes”, a line\u2028separator and a\nnewline. " + "long words " * 30
    )
    document["layers"][0]["items"][1]["metadata"] = {"tags": ["a", "b"], "nested": {"x": 1.5}}
    document["layers"][2]["items"] = []
    document["layers"][3]["items"].reverse()
    return document


def whole_document() -> dict:
    return map_rows_to_document(workspace_rows_get())


@pytest.mark.parametrize(
    "document", [awkward_workspace(), small_workspace(layers=1, items=1, profiles=1)]
)
def test_workspace_export_chunks__any_workspace__joins_to_the_whole_document_bytes(document):
    workspace_import(document=document)
    whole = whole_document()

    yaml_text = "".join(workspace_export_chunks(format="yaml"))
    json_text = "".join(workspace_export_chunks(format="json"))
    compact = "".join(workspace_export_chunks(format="json-compact"))

    assert yaml_text == dump_yaml(whole)
    assert json_text == json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
    assert compact.encode() == JSONRenderer().render(whole)


def test_workspace_export_chunks__empty_database__is_the_empty_document():
    whole = whole_document()

    assert "".join(workspace_export_chunks(format="yaml")) == dump_yaml(whole)
    assert "".join(workspace_export_chunks(format="json")) == (
        json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
    )
    assert "".join(workspace_export_chunks(format="json-compact")).encode() == (
        JSONRenderer().render(whole)
    )


def test_workspace_export_chunks__one_layer__gives_only_that_layer():
    workspace_import(document=awkward_workspace())
    whole = whole_document()

    document = workspace_document_read(layer="layer-001")

    assert document == {"version": 1, "layers": [whole["layers"][1]]}
    with pytest.raises(UnknownLayer):
        workspace_document_read(layer="missing")


@pytest.mark.parametrize("layers", [2, 40])
def test_workspace_export_chunks__any_size__costs_a_constant_number_of_queries(
    layers, django_assert_max_num_queries
):
    workspace_import(document=small_workspace(layers=layers, items=5))

    with django_assert_max_num_queries(8):
        chunks = list(workspace_export_chunks(format="yaml"))

    assert len(chunks) == layers + 2


def test_api_export__one_layer_and_unknown_layer__streams_it_or_404(editor_api_client):
    workspace_import(document=awkward_workspace())

    one = editor_api_client.get("/api/v1/workspace?format=yaml&layer=layer-001")
    missing = editor_api_client.get("/api/v1/workspace?layer=nope")

    assert one.status_code == 200
    assert b"".join(one.streaming_content).decode() == dump_yaml(
        workspace_document_read(layer="layer-001")
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["path"] == "layer"


@pytest.fixture
def editor_api_client(django_user_model):
    from rest_framework.test import APIClient

    user = django_user_model.objects.create_superuser("exporter", password="x")
    client = APIClient()
    client.force_authenticate(user)
    return client
