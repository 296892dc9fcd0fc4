"""Create, edit and delete consumers, layers, items and profiles in the studio: the write
services behind every page, errors in words beside the fields, deletes that ask first and
explain (409) what still uses the object."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from profiles.models import ChangeRequest, Consumer, Environment, Item, Layer, Profile, Rule
from profiles.workspace.concurrency import layer_etag
from tests.profiles.conftest import CASE_01_PROFILE as PROFILE_KEY
from tests.profiles.conftest import join_editors
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db


def labels(html: str) -> set[str]:
    return set(re.findall(r"<label for=\"[^\"]+\">([^<]+)</label>", html))


def field_error(html: str, name: str) -> str:
    """Return the error messages shown in the form row of field ``name``."""
    row = html.split(f'name="{name}"')[1].split('<div class="form-row')[0]
    return " ".join(re.findall(r'<span class="field-error"[^>]*>([^<]*)</span>', row))


# --- consumers --------------------------------------------------------------------------------


def test_consumer_create__page__fields_and_button_named_for_people(editor_client, workspace):
    html = editor_client.get("/consumers/_new/").content.decode()

    assert {"Key", "Name"} <= labels(html)
    assert ">Create consumer</button>" in html
    assert 'data-key-from="id_name"' in html  # the key is suggested from the name


def test_consumer_create__valid__created_and_listed(editor_client, workspace):
    response = editor_client.post(
        "/consumers/_new/", {"name": "Billing bot", "key": "billing-bot", "render_format": "xml"}
    )

    assert response.status_code == 302
    consumer = Consumer.objects.get(key="billing-bot")
    assert (consumer.name, consumer.render_format) == ("Billing bot", "xml")
    assert consumer.history.first().history_user.username == "editor"
    assert "billing-bot" in editor_client.get("/consumers/").content.decode()


def test_consumer_create__bad_key__explained_in_words_not_a_pattern(editor_client, workspace):
    response = editor_client.post("/consumers/_new/", {"name": "Billing", "key": "Billing Bot"})

    html = response.content.decode()
    assert response.status_code == 400
    message = field_error(html, "key")
    assert "lowercase letters, digits" in message
    assert "^[a-z0-9]" not in html
    assert not Consumer.objects.filter(name="Billing").exists()


def test_consumer_create__key_taken__error_beside_the_key(editor_client, workspace):
    taken = Consumer.objects.first().key

    response = editor_client.post("/consumers/_new/", {"key": taken})

    assert response.status_code == 400
    assert "already exists" in field_error(response.content.decode(), "key")


def test_consumer_delete__used_by_a_profile__409_names_the_profile_and_keeps_it(
    editor_client, workspace
):
    key = workspace.consumer.key

    page = editor_client.get(f"/consumers/{key}/delete/").content.decode()
    response = editor_client.post(f"/consumers/{key}/delete/")

    assert "Profiles still use this consumer" in page and "profile support-answer" in page
    assert 'class="button danger"' not in page  # nothing to confirm while it is in use
    assert response.status_code == 409
    assert "support-answer" in response.content.decode()
    assert Consumer.objects.filter(key=key).exists()


def test_consumer_delete__unused__asks_then_deletes(editor_client, workspace):
    Consumer.objects.create(key="spare")

    page = editor_client.get("/consumers/spare/delete/").content.decode()
    response = editor_client.post("/consumers/spare/delete/")

    assert "Delete consumer <code>spare</code>?" in page
    assert response.status_code == 302
    assert not Consumer.objects.filter(key="spare").exists()


def test_consumer_edit__stale_etag__409_and_nothing_saved(editor_client, workspace):
    consumer = Consumer.objects.first()
    html = editor_client.get(f"/consumers/{consumer.key}/").content.decode()
    etag = re.search(r'name="etag" value="([^"]*)"', html).group(1)
    Consumer.objects.filter(pk=consumer.pk).update(name="Changed by someone else")

    response = editor_client.post(
        f"/consumers/{consumer.key}/", {"name": "Mine", "etag": etag.replace("&quot;", '"')}
    )

    assert response.status_code == 409
    assert "Someone else changed this" in response.content.decode()
    assert Consumer.objects.get(pk=consumer.pk).name == "Changed by someone else"


# --- layers -----------------------------------------------------------------------------------


def test_layer_create__valid__created_with_conditions_and_on_to_its_items(editor_client, workspace):
    response = editor_client.post(
        "/layers/_new/",
        {
            "name": "Order history",
            "key": "order-history",
            "availability": "auto",
            "requires_input_text": "customer_id",
            "item_filter_text": "customer_id = customer_id",
        },
    )

    assert response.status_code == 302
    assert response.url == "/layers/order-history/items/"
    layer = Layer.objects.get(key="order-history")
    assert (layer.requires_input, layer.item_filter) == (
        ["customer_id"],
        {"customer_id": "customer_id"},
    )


def test_layer_create__page__named_fields_and_button(editor_client, workspace):
    html = editor_client.get("/layers/_new/").content.decode()

    assert {"Key", "Name", "Description", "Availability"} <= labels(html)
    assert ">Create layer</button>" in html


def joiners_section(html: str) -> dict[str, str]:
    """Return the layer form's "Profiles a new layer joins" list: each line by environment."""
    section = html.split('<section class="joiners"')[1].split("</section>")[0]
    lines = {}
    for item in re.findall(r"<li>(.*?)</li>", section, flags=re.S):
        text = " ".join(re.sub(r"<[^>]+>", " ", item).split())
        lines[text.split(" ", 1)[0]] = text
    return lines


@pytest.fixture
def demo_loaded(db):
    """The demo as make run loads it: production protected with one approval."""
    call_command("load_demo", "--no-user", stdout=StringIO())


def test_layer_create__page_on_the_demo__names_the_profiles_it_joins_and_their_protection(
    editor_client, demo_loaded
):
    html = editor_client.get("/layers/_new/").content.decode()

    lines = joiners_section(html)
    assert list(lines) == ["production", "staging", "no"]
    assert lines["production"] == ("production protected, 1 approval : ops-triage , support-answer")
    assert lines["staging"] == (
        "staging (not protected) : ops-triage-staging , support-answer-staging"
    )
    assert lines["no"].startswith("no environment (not protected) : draft-reply")
    assert '<a href="/profiles/support-answer/">support-answer</a>' in html
    assert "creating it then needs a change request" in html


def test_layer_create__page_nothing_protected__names_the_joiners_and_says_they_change_at_once(
    editor_client, workspace
):
    html = editor_client.get("/layers/_new/").content.decode()

    assert list(joiners_section(html)) == ["no"]
    assert "creating the layer changes their answers at once" in html


def test_layer_create__on_the_demo__refused_and_offered_as_a_change_request(
    editor_client, demo_loaded
):
    response = editor_client.post(
        "/layers/_new/", {"name": "Release FAQ", "key": "release-faq", "availability": "auto"}
    )

    html = response.content.decode()
    assert not Layer.objects.filter(key="release-faq").exists()
    proposal = html.split('<fieldset class="proposal"')[1].split("</fieldset>")[0]
    assert "ops-triage" in proposal and "support-answer" in proposal
    assert "Propose change request" in proposal


def test_layer_list__writer__links_new_layer_and_counts_items(editor_client, workspace):
    html = editor_client.get("/layers/").content.decode()

    assert '<a class="button primary" href="/layers/_new/">New layer</a>' in html
    kb = html.split('data-layer-row="kb"')[1].split("</tr>")[0]
    assert f'<td class="num">{Item.objects.filter(layer__key="kb").count()}</td>' in kb


def test_layer_delete__rules_use_it__409_explains_and_keeps_it(editor_client, workspace):
    response = editor_client.post("/layers/kb/delete/")

    html = response.content.decode()
    assert response.status_code == 409
    assert "Nothing was deleted." in html and "support-answer" in html
    assert "default rule" in html  # what to do about it
    assert Layer.objects.filter(key="kb").exists()


def test_layer_delete__unused__deleted_with_its_items(editor_client, workspace):
    Rule.objects.filter(layer__key="kb").delete()
    items = Item.objects.filter(layer__key="kb").count()

    page = editor_client.get("/layers/kb/delete/").content.decode()
    response = editor_client.post("/layers/kb/delete/")

    assert f"Its {items} items go with it." in page
    assert response.status_code == 302
    assert not Layer.objects.filter(key="kb").exists()
    assert not Item.objects.filter(layer__key="kb").exists()


KB_USERS = ["qa-review", "support-answer"]  # the profiles with a rule for kb


def remove_rules_form(key: str, profiles: list[str], **extra) -> dict:
    """The "Remove its rules and delete" form as the page posts it."""
    return {
        "remove_rules": "1",
        "etag": layer_etag(Layer.objects.get(key=key)),
        "profile": profiles,
        **extra,
    }


def test_layer_delete__rules_use_it__lists_profiles_and_offers_remove_rules(
    editor_client, workspace
):
    html = editor_client.get("/layers/kb/delete/").content.decode()

    row = html.split('data-profile="support-answer"')[1].split("</tr>")[0]
    assert "/profiles/support-answer/" in row and "protected" not in row.replace(">no<", "")
    assert 'name="remove_rules" value="1">Remove its rules and delete</button>' in html
    assert '<input type="hidden" name="profile" value="support-answer">' in html


def test_layer_delete__remove_rules__rules_removed_layer_deleted_and_said(editor_client, workspace):
    response = editor_client.post("/layers/kb/delete/", remove_rules_form("kb", KB_USERS))

    assert response.status_code == 302 and response["Location"] == "/layers/"
    assert not Layer.objects.filter(key="kb").exists()
    assert not Rule.objects.filter(layer__key="kb").exists()
    page = editor_client.get("/layers/").content.decode()
    assert (
        "Layer kb deleted; its rule was removed from 2 profiles: qa-review, support-answer." in page
    )


def test_layer_delete__remove_rules_stale_etag__409_nothing_changed(editor_client, workspace):
    form = remove_rules_form("kb", KB_USERS, etag='"stale"')

    response = editor_client.post("/layers/kb/delete/", form)

    assert response.status_code == 409
    assert "nothing was changed" in response.content.decode()
    assert Layer.objects.filter(key="kb").exists()
    assert Rule.objects.filter(profile__key=PROFILE_KEY, layer__key="kb").exists()


def test_layer_delete__remove_rules_in_protected_profile__change_request_opened_nothing_written(
    client, workspace
):
    # Given support-answer in a protected environment, and an editor (not staff)
    Profile.objects.filter(key=PROFILE_KEY).update(environment="production")
    Environment.objects.create(key="production", requires_change_request=True)
    editor = User.objects.create_user("author", password="author-password-1")
    join_editors(editor)
    client.force_login(editor)

    page = client.get("/layers/kb/delete/").content.decode()
    response = client.post("/layers/kb/delete/", remove_rules_form("kb", KB_USERS))

    assert "this opens a change request" in page and 'name="proposal_title"' in page
    change_request = ChangeRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/changes/{change_request.pk}/"
    assert [(c["kind"], c["op"], c["key"]) for c in change_request.entity_changes] == [
        ("profile", "update", "qa-review"),
        ("profile", "update", PROFILE_KEY),
        ("layer", "delete", "kb"),
    ]
    assert Layer.objects.filter(key="kb").exists()
    assert Rule.objects.filter(profile__key=PROFILE_KEY, layer__key="kb").exists()
    shown = client.get(response["Location"]).content.decode()
    assert "Nothing has changed yet." in shown


def test_layer_edit__valid__saved_through_the_service_with_the_etag(editor_client, workspace):
    layer = Layer.objects.get(key="kb")
    response = editor_client.post(
        "/layers/kb/",
        {
            "name": "Help center",
            "availability": "unknown",
            "objectives": "answer-ticket",
            "etag": layer_etag(layer),
        },
    )

    assert response.status_code == 302
    layer.refresh_from_db()
    assert (layer.name, layer.availability, layer.applies_to_objectives) == (
        "Help center",
        "unknown",
        ["answer-ticket"],
    )


# --- items ------------------------------------------------------------------------------------


def test_item_create__page__named_fields_and_button(editor_client, workspace):
    html = editor_client.get("/layers/kb/items/_new/").content.decode()

    assert {"Path", "Title", "Body", "Metadata"} <= labels(html)
    assert ">Create item</button>" in html
    item_list = editor_client.get("/layers/kb/items/").content.decode()
    assert '<a class="button primary" href="/layers/kb/items/_new/">New item</a>' in item_list


def test_item_create__valid__added_at_the_end_of_the_layer(editor_client, workspace):
    response = editor_client.post(
        "/layers/kb/items/_new/",
        {
            "path": "kb/new-article.md",
            "title": "A new article",
            "body": "About refunds.",
            "metadata_text": '{"updated": "2026-11-28"}',
        },
    )

    assert response.status_code == 302
    item = Item.objects.get(layer__key="kb", path="kb/new-article.md")
    assert item.metadata == {"updated": "2026-11-28"}
    last = Item.objects.filter(layer__key="kb").order_by("-position").first()
    assert last == item


def test_item_create__path_taken__error_beside_the_path(editor_client, workspace):
    path = Item.objects.filter(layer__key="kb").first().path

    response = editor_client.post("/layers/kb/items/_new/", {"path": path, "title": "Again"})

    assert response.status_code == 400
    assert "already exists" in field_error(response.content.decode(), "path")


def test_item_create__metadata_not_an_object__error_in_words(editor_client, workspace):
    response = editor_client.post(
        "/layers/kb/items/_new/", {"path": "kb/x.md", "metadata_text": "[1, 2]"}
    )

    assert response.status_code == 400
    assert "must be a JSON object" in field_error(response.content.decode(), "metadata_text")
    assert not Item.objects.filter(path="kb/x.md").exists()


def test_item_delete__asks_then_deletes(editor_client, workspace):
    item = Item.objects.filter(layer__key="kb").first()

    page = editor_client.get(f"/layers/kb/items/{item.pk}/delete/").content.decode()
    response = editor_client.post(f"/layers/kb/items/{item.pk}/delete/")

    assert f"Delete item <code>kb/{item.path}</code>?" in page
    assert response.status_code == 302
    assert not Item.objects.filter(pk=item.pk).exists()


# --- profiles ---------------------------------------------------------------------------------


def test_profile_edit__new_environment__saved_and_back_to_the_editor(editor_client, workspace):
    html = editor_client.get("/profiles/support-answer/details/").content.decode()
    etag = re.search(r'name="etag" value="([^"]*)"', html).group(1).replace("&quot;", '"')

    response = editor_client.post(
        "/profiles/support-answer/details/",
        {
            "name": "Support answer",
            "consumer": workspace.consumer.pk,
            "objective": workspace.objective,
            "environment": "staging",
            "budget": "600",
            "etag": etag,
        },
    )

    assert response.status_code == 302
    assert response.url == "/profiles/support-answer/"
    assert Profile.objects.get(key="support-answer").environment == "staging"


def test_profile_edit__selection_of_another_profile__error_names_it_without_a_path(
    editor_client, workspace
):
    other = Profile.objects.exclude(pk=workspace.pk).first()

    response = editor_client.post(
        "/profiles/support-answer/details/",
        {
            "consumer": other.consumer.pk,
            "objective": other.objective,
            "environment": other.environment or "",
            "budget": "600",
        },
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert f"another profile (&quot;{other.key}&quot;)" in html
    assert "profiles[" not in html


def test_entry_lists__more_than_a_page__paginated(editor_client, workspace):
    Consumer.objects.bulk_create([Consumer(key=f"c-{n:03}", position=100 + n) for n in range(30)])

    first = editor_client.get("/consumers/").content.decode()
    second = editor_client.get("/consumers/?page=2").content.decode()

    assert "Page 1 of 2" in first and 'rel="next"' in first
    assert "c-029" in second and "c-029" not in first
