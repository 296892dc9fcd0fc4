"""The small things a new user trips over: icon, login button, field shapes, names, admin."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import json
import re

import pytest
from django.contrib.staticfiles import finders

from profiles.models import Item, Rule
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db


def test_favicon__browser_asks_for_ico__sent_to_the_svg_icon(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 301
    assert response.url.endswith("/favicon.svg")
    assert finders.find("favicon.svg")


def test_pages__any_studio_page__links_the_icon(client):
    html = client.get("/accounts/login/").content.decode()

    assert 'rel="icon"' in html and "favicon.svg" in html


def test_login__page__button_styled_like_the_others(client):
    html = client.get("/accounts/login/").content.decode()

    assert '<button type="submit" class="button primary">Sign in</button>' in html


def test_layer_edit__name__single_line_input(editor_client, workspace):
    html = editor_client.get("/layers/kb/").content.decode()

    assert '<input type="text" name="name"' in html
    assert '<textarea name="name"' not in html


def test_item_edit__title__single_line_input(editor_client, workspace):
    item = Item.objects.get(layer__key="kb", path="kb/chargebacks.md")

    html = editor_client.get(f"/layers/kb/items/{item.pk}/").content.decode()

    assert '<input type="text" name="title"' in html


def test_item_list__metadata__shown_as_json(editor_client, workspace):
    item = Item.objects.filter(layer__key="kb").order_by("position").first()
    item.metadata = {"updated": "2026-11-20", "tags": ["refund"], "pinned": True}
    item.save()

    html = editor_client.get("/layers/kb/items/").content.decode()

    item.refresh_from_db()  # PostgreSQL's jsonb orders the keys its own way
    shown = json.dumps(item.metadata, separators=(", ", ": ")).replace('"', "&quot;")
    assert shown in html
    assert "{&#x27;" not in html and "True" not in html


def test_recent_changes__imported_rows_and_saved_rule__document_names_and_actor(
    editor_client, workspace
):
    data = editor_form_data(editor_client.get("/profiles/support-answer/").content.decode())
    data.update({"tickets-maxItems": "1", "kb-currentness.maxAgeDays": "30"})
    editor_client.post("/profiles/support-answer/save/", data)

    html = editor_client.get("/profiles/support-answer/").content.decode()
    history = html.split('class="history-list"')[1].split("</ol>")[0]

    assert "maxItems: 2 → 1" in history and "currentness.maxAgeDays" in history
    assert "max_items" not in history and "currentness_max_age_days" not in history
    # The workspace was imported without a user: the entry says so instead of "—".
    assert '<span class="muted">an import</span> created' in history
    assert "<strong>editor</strong> changed rule tickets" in history


def test_admin_profile_change__rules_inline__every_control_named_and_required_like_studio(
    editor_client, workspace
):
    html = editor_client.get(f"/admin/profiles/profile/{workspace.pk}/change/").content.decode()

    rule = Rule.objects.get(profile=workspace, layer__key="kb")
    index = list(workspace.rules.order_by("position", "id")).index(rule)
    for field, name in (("required", "required"), ("max_items", "maxItems"), ("layer", "layer")):
        assert re.search(f'name="rules-{index}-{field}"[^>]*aria-label="kb {name}"', html)
    assert 'aria-label="delete the kb rule"' in html
    assert ">Unknown<" not in html
    assert '<option value="unknown" selected>(false)</option>' in html
    assert '<option value="">(auto)</option>' in html


def test_admin_index__rule_saved_in_the_studio__listed_in_recent_actions(editor_client, workspace):
    data = editor_form_data(editor_client.get("/profiles/support-answer/").content.decode())
    data["tickets-maxItems"] = "1"
    editor_client.post("/profiles/support-answer/save/", data)

    html = editor_client.get("/admin/").content.decode()

    changes = html.split('id="workspace-changes"')[1].split("</ul>")[0]
    first = changes.split("</li>")[0]
    assert "support-answer · rule tickets" in first
    assert "Rule changed by editor" in first


def test_recent_changes__consumer_changed__named_by_key_not_id(editor_client, workspace):
    from profiles.authoring import profiles as services
    from profiles.models import Consumer

    Consumer.objects.create(key="night-shift")
    services.profile_update(key="support-answer", changes={"consumer": "night-shift"})

    html = editor_client.get("/profiles/support-answer/").content.decode()

    history = html.split('class="history-list"')[1].split("</ol>")[0]
    assert f"consumer: {workspace.consumer.key} → night-shift" in history


def test_admin_rule_change__required_not_given__shown_like_the_studio(editor_client, workspace):
    rule = Rule.objects.filter(profile=workspace, required__isnull=True).first()

    html = editor_client.get(f"/admin/profiles/rule/{rule.pk}/change/").content.decode()

    assert '<option value="unknown" selected>(false)</option>' in html
    assert ">Unknown<" not in html
