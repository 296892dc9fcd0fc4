"""The studio's import page: a progress bar that polls itself (htmx), then the result."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from profiles.models import ImportJob
from resolver.documents import dump_yaml
from tests.profiles.conftest import small_workspace
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[3] / "profiles" / "demo" / "workspace.yaml"


def test_import_job_page__running__progress_bar_that_polls_its_fragment(editor_client, editor):
    job = ImportJob.objects.create(
        user=editor, status="running", phase="checking and writing", progress=40
    )
    url = f"/workspace/imports/{job.pk}/"

    page = editor_client.get(url).content.decode()
    fragment = editor_client.get(url, headers={"HX-Request": "true"}).content.decode()

    assert '<progress id="import-progress" max="100" value="40">' in page
    assert f'hx-get="{url}" hx-trigger="every 1s"' in page
    assert "<script" not in fragment and "<html" not in fragment
    assert fragment.strip().startswith('<div id="import-job"')


def test_import_job_page__finished__result_and_no_more_polling(editor_client, editor):
    job = ImportJob.objects.create(
        user=editor,
        status="succeeded",
        progress=100,
        summary={
            "mode": "merge",
            "changed": True,
            "items": {"created": 7, "updated": 0, "deleted": 0, "unchanged": 2},
        },
    )

    page = editor_client.get(f"/workspace/imports/{job.pk}/").content.decode()

    assert "hx-trigger" not in page.split('id="import-job"')[1]
    assert '<th scope="row">items</th><td>7</td>' in page


def test_import_job_page__another_users_job__404_unless_you_administer(
    editor_client, django_user_model
):
    # Given a member of the editors group (may import, does not administer)
    from django.contrib.auth.models import Group
    from django.test import Client

    member = django_user_model.objects.create_user("member")
    member.groups.add(Group.objects.get_or_create(name="editors")[0])
    someone = django_user_model.objects.create_user("someone")
    job = ImportJob.objects.create(user=someone)
    client = Client()
    client.force_login(member)

    assert client.get(f"/workspace/imports/{job.pk}/").status_code == 404
    assert editor_client.get(f"/workspace/imports/{job.pk}/").status_code == 200


def test_import_job_page__uploaded_file_changed_rows__names_them_with_and_n_more(editor_client):
    # Given a file of one layer with 60 items and a profile
    document = small_workspace(layers=1, items=60, profiles=1)
    upload = SimpleUploadedFile("w.yaml", dump_yaml(document).encode())

    page = editor_client.post(
        "/workspace/upload/", {"file": upload, "mode": "merge"}, follow=True
    ).content.decode()

    assert "Imported." in page
    assert "<li>Profiles created: <code>profile-0</code></li>" in page
    assert "<li>Layers created: <code>layer-000</code></li>" in page
    assert "<code>layer-000/docs/item-0049.md</code> and 10 more</li>" in page
    assert "layer-000/docs/item-0050.md" not in page


def test_import_job_page__rule_error_through_an_alias__lists_profile_and_line(editor_client):
    text = DEMO.read_text(encoding="utf-8").replace("maxItems: 3", "maxItems: -3", 1)
    line = text[: text.index("maxItems: -3")].count("\n") + 1
    alias_line = text[: text.index("tickets: *tickets")].count("\n") + 1
    upload = SimpleUploadedFile("demo.yaml", text.encode())

    page = editor_client.post(
        "/workspace/upload/", {"file": upload, "mode": "merge"}, follow=True
    ).content.decode()

    assert "Nothing was imported: 2 errors." in page
    assert (
        "<code>profiles[1].rules.tickets.maxItems</code>: must be an integer &gt;= 0 — "
        f"rule support-answer-staging/tickets, line {line}, column 17, "
        f"through the alias on line {alias_line}, column 14</li>"
    ) in page
