"""Held layers' texts mapped from a file (issue 20, item 3): read only for what is rendered.

A worker compiles a held layer from its items' metadata and stored terms; each body is a
reference into the file of the layer's version, which the first worker writes and the others
map. The answers are those of the stored document, byte for byte, through loads, edits, rows
written since a file, and change sets; a worker holds none of the texts it did not render.
"""

import logging
import os
import stat
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from django.db import connection
from django.utils.timezone import now
from rest_framework.test import APIClient

from ctxstudio.warmup import worker_warm
from profiles.import_export.imports import workspace_import
from profiles.material.items import item_update
from profiles.models import Item, Layer
from profiles.resolution.services import profile_resolve
from profiles.safechange.change_sets import change_set_preview
from profiles.workspace import cache, held_texts
from profiles.workspace.held_texts import MappedText
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver import compile_workspace
from tests.profiles.conftest import api_key_for

pytestmark = pytest.mark.django_db

REQUEST = {
    "profile": "support",
    "input": {"message": "refund card"},
    "now": "2026-11-20T00:00:00Z",
}


def kb_document(articles: int, *, body_chars: int = 200) -> dict:
    return {
        "version": 1,
        "consumers": [{"key": "assistant"}],
        "layers": [
            {
                "key": "kb",
                "items": [
                    {
                        "path": f"kb/{n:05d}",
                        "title": f"Article {n}",
                        "body": (f"Refund of card {n}. " * body_chars)[: body_chars * 4]
                        + f"\n\nÉtapes {n}: ünïcode ✓.",
                        "metadata": {"updated": "2026-11-01"},
                    }
                    for n in range(articles)
                ]
                + [{"path": "kb/empty", "title": "No body"}],
            }
        ],
        "profiles": [
            {
                "key": "support",
                "consumer": "assistant",
                "objective": "answer",
                "budget": 400,
                "rules": {"kb": {"mode": "retrieve", "facets": ["excerpt", "body"]}},
            }
        ],
    }


def stored_answer(request=REQUEST) -> dict:
    return compile_workspace(map_rows_to_document(workspace_rows_get())).resolve(request)


def bodies(layer_key="kb") -> list:
    compiled = cache.workspace_get().compiled
    index = next(index for index in compiled.indexes if index.layer.key == layer_key)
    return [item.body for item in index.items if item is not None]


def test_a_held_layer__compiled__maps_its_texts_and_answers_as_the_stored_document():
    workspace_import(document=kb_document(300))
    cache.workspace_cache_clear()
    built = held_texts.built

    answer = profile_resolve(profile="support", request=REQUEST)

    assert answer == stored_answer()
    assert answer["layers"][0]["rendered"]["items"]  # something was rendered from the file
    held = bodies()
    assert sum(isinstance(body, MappedText) for body in held) == 300
    assert held.count("") == 1  # an empty body needs no reference
    assert held_texts.built == built + 1
    # A second worker (the same process, its cache cleared) maps the file: nothing written.
    cache.workspace_cache_clear()
    assert profile_resolve(profile="support", request=REQUEST) == answer
    assert held_texts.built == built + 1


def test_a_row_written_since_its_layer_s_file__is_read_with_its_text():
    workspace_import(document=kb_document(50))
    cache.workspace_cache_clear()
    cache.workspace_get()
    item = Item.objects.get(path="kb/00007")
    # A write the file does not hold (its updated_at moved), at the same content token.
    Item.objects.filter(pk=item.pk).update(body="Refund card: a new text.", updated_at=now())
    cache.workspace_cache_clear()

    answer = profile_resolve(profile="support", request=REQUEST)

    assert answer == stored_answer()
    compiled = cache.workspace_get().compiled
    index = compiled.indexes[0]
    edited = index.items[index.position("kb/00007")]
    assert edited.body == "Refund card: a new text."  # held, read from its row


def test_an_item_edit__after_a_mapped_load__patches_and_answers_as_the_stored_document():
    workspace_import(document=kb_document(100))
    cache.workspace_cache_clear()
    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()
    item_update(
        layer="kb", path="kb/00042", changes={"body": "Refund card refund card: rewritten."}
    )
    answer = profile_resolve(profile="support", request=REQUEST)

    assert answer == stored_answer()
    assert cache.compiled_document is False  # patched, not compiled again
    held = bodies()
    assert sum(isinstance(body, MappedText) for body in held) == 99
    assert "Refund card refund card: rewritten." in held


def test_a_change_set__on_a_mapped_layer__compares_texts_and_reuses_the_unchanged_items():
    workspace_import(document=kb_document(60))
    cache.workspace_cache_clear()
    snapshot = cache.workspace_get()
    changes = [
        {
            "op": "update",
            "kind": "item",
            "layer": "kb",
            "path": "kb/00003",
            "value": {"body": "Refund card, new."},
        }
    ]

    preview = change_set_preview(changes, snapshot=snapshot)

    (change,) = preview.changes
    assert [field["path"] for field in change.as_dict()["fields"]] == ["body"]
    assert change.before["body"].startswith("Refund of card 3.")  # the text, not a reference
    kb = next(layer for layer in preview.document["layers"] if layer["key"] == "kb")
    assert all(not isinstance(item.get("body"), MappedText) for item in kb["items"])


def worker_memory() -> int:
    """Return the memory a fresh compilation of the stored workspace keeps (bytes)."""
    cache.workspace_cache_clear()
    tracemalloc.start()
    try:
        cache.workspace_get()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held


def test_a_worker__held_layer_texts__holds_none_of_them(settings):
    """The texts of 2,000 articles (~4 MB) take no memory of a worker that maps them."""
    workspace_import(document=kb_document(2_000, body_chars=500))
    texts = sum(len(body) + 49 for (body,) in Item.objects.values_list("body"))  # str objects
    assert texts > 4_000_000
    settings.MAPPED_TEXTS_MIN_ITEMS = None
    holding = worker_memory()
    settings.MAPPED_TEXTS_MIN_ITEMS = 1

    mapping = worker_memory()

    # What mapping saves is the texts, less a reference per item (under 100 bytes).
    assert holding - mapping > texts - 2_000 * 100
    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()


def test_mapping_off__every_text_is_held(settings):
    settings.MAPPED_TEXTS_MIN_ITEMS = None
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()

    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()
    assert all(isinstance(body, str) for body in bodies())


def test_the_files_of_earlier_versions__are_removed_when_a_new_one_is_written(settings):
    workspace_import(document=kb_document(30))
    cache.workspace_cache_clear()
    cache.workspace_get()
    layer = Layer.objects.get(key="kb")
    folder = held_texts._directory()
    assert [path.name for path in folder.glob(f"layer-{layer.pk}-*.texts")] == [
        f"layer-{layer.pk}-{layer.content_token}.texts"
    ]
    workspace_import(document=kb_document(31))  # the layer's items rewritten: a new version
    cache.workspace_get()
    layer.refresh_from_db()
    assert [path.name for path in folder.glob(f"layer-{layer.pk}-*.texts")] == [
        f"layer-{layer.pk}-{layer.content_token}.texts"
    ]
    assert connection.vendor in ("sqlite", "postgresql")


def test_texts_that_cannot_be_written__are_held(settings, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    settings.MATERIAL_TEXTS_DIR = str(blocked)  # mkdir fails: no file can be written
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()

    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()
    assert all(isinstance(body, str) for body in bodies())
    assert "is not a directory" in held_texts.texts_problem()  # for the readiness door


def test_a_file_removed_before_it_is_mapped__is_written_again():
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()
    cache.workspace_get()
    layer = Layer.objects.get(key="kb")
    (held_texts._directory() / f"layer-{layer.pk}-{layer.content_token}.texts").unlink()
    built = held_texts.built
    cache.workspace_cache_clear()

    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()
    assert held_texts.built == built + 1
    assert sum(isinstance(body, MappedText) for body in bodies()) == 20


# --- the files are the service's own, verified before use (issue 33, items 7 and 8) ---------


def the_file() -> Path:
    layer = Layer.objects.get(key="kb")
    return held_texts._directory() / f"layer-{layer.pk}-{layer.content_token}.texts"


def replaced(path, data: bytes, *, mode: int = 0o600) -> None:
    """Put ``data`` in place of the file as another writer would (a new file renamed over
    it: a file this process has mapped is never changed in place, not even by a test)."""
    other = path.with_name("replacement.tmp")
    other.write_bytes(data)
    os.chmod(other, mode)
    os.replace(other, path)


def mapped_and_answering(caplog) -> None:
    """Compile as a new worker does; the answer is the stored document's, from a verified file."""
    cache.workspace_cache_clear()
    built = held_texts.built
    with caplog.at_level(logging.WARNING, logger="profiles.workspace.held_texts"):
        answer = profile_resolve(profile="support", request=REQUEST)
    assert answer == stored_answer()
    assert answer["layers"][0]["rendered"]["items"]
    assert held_texts.built == built + 1  # the bad file was rebuilt from the database
    assert sum(isinstance(body, MappedText) for body in bodies()) == 40
    assert "did not verify" in caplog.text and "discarded and rebuilt" in caplog.text
    assert held_texts.last_rebuilt.startswith(the_file().name)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:40], id="truncated-in-the-header"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: os.urandom(len(data)), id="garbage"),
        pytest.param(lambda data: data.replace(b"Refund", b"Rxfund"), id="texts-changed"),
        pytest.param(lambda data: data[:-8] + bytes(8), id="offsets-changed"),
        pytest.param(lambda data: b"CTXTEXT1" + data[8:], id="older-format"),
    ],
)
def test_a_damaged_texts_file__when_mapped__is_discarded_and_rebuilt(damage, caplog):
    workspace_import(document=kb_document(40))
    cache.workspace_cache_clear()
    cache.workspace_get()
    path = the_file()
    replaced(path, damage(path.read_bytes()))

    mapped_and_answering(caplog)


def test_a_file_of_another_version__swapped_in__does_not_verify_and_is_rebuilt(caplog):
    # Given the file of one version of the layer, kept aside by another writer
    workspace_import(document=kb_document(40))
    cache.workspace_cache_clear()
    cache.workspace_get()
    earlier = the_file().read_bytes()
    # When the layer changes (same ids, other texts) and the earlier file is put in its place
    for item in Item.objects.filter(path__in=["kb/00001", "kb/00002"]):
        item_update(layer="kb", path=item.path, changes={"body": "Refund card: newer."})
    cache.workspace_cache_clear()
    cache.workspace_get()
    replaced(the_file(), earlier)

    # Then its digest (of the layer's content token and texts) does not match: rebuilt
    mapped_and_answering(caplog)


def test_a_texts_file_others_may_read__is_not_trusted_and_is_rebuilt_private(caplog):
    workspace_import(document=kb_document(40))
    cache.workspace_cache_clear()
    cache.workspace_get()
    path = the_file()
    replaced(path, path.read_bytes(), mode=0o644)

    mapped_and_answering(caplog)
    assert stat.S_IMODE(the_file().stat().st_mode) == 0o600


def test_the_texts_folder__created_by_the_service__0700_and_files_0600(settings, tmp_path):
    settings.MATERIAL_TEXTS_DIR = str(tmp_path / "data" / "texts")
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()

    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()

    folder = held_texts._directory()
    assert stat.S_IMODE((tmp_path / "data" / "texts").stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = [path for path in folder.iterdir() if path.suffix == ".texts"]
    assert files and all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)
    assert stat.S_IMODE((folder / "write.lock").stat().st_mode) == 0o600
    assert sum(isinstance(body, MappedText) for body in bodies()) == 20
    assert held_texts.texts_problem() == ""


def test_the_default_texts_folder__the_project_s_own__not_the_shared_temporary_one():
    env = {key: value for key, value in os.environ.items() if key != "MATERIAL_TEXTS_DIR"}
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ctxstudio import settings; print(settings.MATERIAL_TEXTS_DIR)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    ).stdout.strip()

    # The project's own folder (a checkout may itself lie under the temporary directory: the
    # point is a folder of the service's, not the shared one's top).
    assert Path(shown) == Path(__file__).resolve().parents[3] / "var" / "texts"
    assert Path(shown).parent.parent != Path(tempfile.gettempdir())


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_texts_folder_others_can_write__refused_texts_held_and_said(
    settings, tmp_path, caplog, mode, monkeypatch
):
    monkeypatch.setattr(held_texts, "mapping_problem", "")  # this process's state, restored
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    settings.MATERIAL_TEXTS_DIR = str(shared)
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()

    with caplog.at_level(logging.ERROR, logger="profiles.workspace.held_texts"):
        answer = profile_resolve(profile="support", request=REQUEST)

    assert answer == stored_answer()
    assert all(isinstance(body, str) for body in bodies())  # held in memory
    assert list(shared.iterdir()) == []  # nothing written there
    assert "may be written by its group or others" in caplog.text
    assert str(shared) in held_texts.texts_problem()
    # Once the folder is made private, the next compile maps again and the problem is gone.
    os.chmod(shared, 0o700)
    cache.workspace_cache_clear()
    assert profile_resolve(profile="support", request=REQUEST) == answer
    assert held_texts.texts_problem() == ""
    assert sum(isinstance(body, MappedText) for body in bodies()) == 20


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_texts_folder_of_another_user__refused_texts_held(
    settings, tmp_path, caplog, monkeypatch
):
    monkeypatch.setattr(held_texts, "mapping_problem", "")  # this process's state, restored
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)  # nobody's
    settings.MATERIAL_TEXTS_DIR = str(theirs)
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()

    with caplog.at_level(logging.ERROR, logger="profiles.workspace.held_texts"):
        assert profile_resolve(profile="support", request=REQUEST) == stored_answer()

    assert all(isinstance(body, str) for body in bodies())
    assert "owned by user 65534" in held_texts.texts_problem()
    assert list(theirs.iterdir()) == []


def test_a_per_database_folder_left_open__is_made_private_again(settings, tmp_path):
    settings.MATERIAL_TEXTS_DIR = str(tmp_path / "texts")
    workspace_import(document=kb_document(20))
    cache.workspace_cache_clear()
    cache.workspace_get()
    folder = held_texts._directory()
    os.chmod(folder, 0o755)
    cache.workspace_cache_clear()

    assert profile_resolve(profile="support", request=REQUEST) == stored_answer()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.django_db(transaction=True)  # the warm-up closes its connections
def test_a_truncated_file__a_new_worker_warms_and_every_door_answers(admin_user, caplog):
    # Given a file cut short (the issue: a new worker failed to warm, every resolve answered 500)
    workspace_import(document=kb_document(40))
    cache.workspace_cache_clear()
    cache.workspace_get()
    path = the_file()
    replaced(path, path.read_bytes()[:100])
    cache.workspace_cache_clear()

    # When a new worker warms and is asked to resolve, preview and expand through the API
    assert worker_warm(heartbeat=lambda: None) is True
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(admin_user)}")
    resolved = client.post("/api/v1/resolve", REQUEST, format="json")
    previewed = client.post(
        "/api/v1/profiles/support/preview",
        {"input": REQUEST["input"], "now": REQUEST["now"]},
        format="json",
    )

    # Then it answers from the rebuilt file, as the stored document does
    assert resolved.status_code == 200, resolved.content
    assert resolved.json()["output"] == stored_answer()["output"]
    assert previewed.status_code == 200, previewed.content
    assert held_texts.last_rebuilt.startswith(path.name)
    assert sum(isinstance(body, MappedText) for body in bodies()) == 40
