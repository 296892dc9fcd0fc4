"""The editor's views through the Django test client: fragments, drafts, saves, queries."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from profiles.import_export.imports import workspace_import
from profiles.models import Profile, Rule
from tests.profiles.conftest import join_editors
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

EDITOR = "/profiles/support-answer/"
PREVIEW = "/profiles/support-answer/preview/"
SAVE = "/profiles/support-answer/save/"
DISCARD = "/profiles/support-answer/discard/"
SCENARIO_SAVE = "/profiles/support-answer/scenario/save/"
SCENARIO_LOAD = "/profiles/support-answer/scenario/load/"

pytestmark = pytest.mark.django_db


def saved_form(client) -> dict:
    response = client.get(EDITOR)
    assert response.status_code == 200
    return editor_form_data(response.content.decode())


def preview(client, data: dict):
    return client.post(PREVIEW, data, headers={"HX-Request": "true"})


def history_count() -> int:
    return Rule.history.count() + Profile.history.count()


def test_editor__anonymous__redirects_to_login(client, workspace):
    response = client.get(EDITOR)
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_preview__anonymous__refused(client, workspace):
    response = client.post(PREVIEW, {"budget": "10"}, headers={"HX-Request": "true"})
    assert response.status_code == 302
    assert "/accounts/login/" in response.url


def test_home__signed_in__redirects_to_profiles(editor_client):
    response = editor_client.get("/")
    assert response.status_code == 302
    assert response.url == "/profiles/"


def test_editor__saved_profile__every_layer_has_a_row_and_default_rules_are_marked(
    editor_client, workspace
):
    # Given a layer without a rule in the profile
    Rule.objects.filter(profile=workspace, layer__key="runbooks").delete()
    html = editor_client.get(EDITOR).content.decode()

    for layer in ("policies", "customer", "tickets", "kb", "runbooks", "status-page"):
        for field in ("participation", "mode", "required", "priority", "maxItems", "order"):
            assert f'aria-label="{layer} {field}"' in html
    runbooks_row = html.split('data-rule-layer="runbooks"')[1].split("</tbody>")[0]
    assert "default rule" in runbooks_row
    assert 'id="preview" aria-live="polite"' in html
    assert 'role="meter"' in html and 'aria-valuemax="600"' in html


def test_preview__htmx__returns_only_the_preview_and_the_unsaved_badge(editor_client, workspace):
    data = saved_form(editor_client)
    data["kb-participation"] = "exclude"

    response = preview(editor_client, data)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<form" not in html and 'id="preview"' not in html
    kb_entry = html.split('data-layer="kb"')[1].split("</li>\n            \n")[0]
    assert "EXCLUDED_BY_PROFILE" in kb_entry
    assert 'id="unsaved-badge"' in html and 'hx-swap-oob="true"' in html
    assert "Unsaved changes" in html
    assert "What changed" in html


def test_preview__unsaved_edit__writes_nothing(editor_client, workspace):
    data = saved_form(editor_client)
    data["kb-participation"] = "exclude"
    data["budget"] = "100"
    before = history_count()

    preview(editor_client, data)

    assert Rule.objects.get(profile=workspace, layer__key="kb").participation == "auto"
    assert Profile.objects.get(key="support-answer").budget == 600
    assert history_count() == before


def test_preview__unchanged_form__says_saved_and_shows_no_diff(editor_client, workspace):
    response = preview(editor_client, saved_form(editor_client))

    html = response.content.decode()
    assert "All changes saved" in html
    assert "What changed" not in html


def test_preview__invalid_value__error_names_the_field(editor_client, workspace):
    data = saved_form(editor_client)
    data["customer-maxTokens"] = "0"

    html = preview(editor_client, data).content.decode()

    assert "<code>customer maxTokens</code>: must be an integer &gt;= 1" in html
    assert "customer maxTokens" in html.split("data-field-errors=")[1].split(">")[0]


def preview_query_counts(client) -> list[int]:
    """Return the queries of previews of the saved form and of three different drafts."""
    data = saved_form(client)
    preview(client, data)  # compile once, as a running server would have
    counts = []
    for participation, budget in (("auto", "600"), ("exclude", "90"), ("include", "40")):
        data["kb-participation"] = participation
        data["budget"] = budget
        with CaptureQueriesContext(connection) as queries:
            assert preview(client, data).status_code == 200
        counts.append(len(queries))
    return counts


def test_preview__query_count__constant_whatever_the_edit_and_workspace_size(
    editor_client, workspace
):
    small = preview_query_counts(editor_client)
    workspace_import_bigger()  # ten times the items in one layer
    bigger = preview_query_counts(editor_client)

    assert small == bigger
    # Drafts cost the same whatever they change (the saved profile is resolved too).
    assert small[1] == small[2]
    # Session, user, profile, workspace version, the loaded scenario (is the sample still it?)
    # and the served statement (the customer's tickets, checked fresh on every request, once
    # for all the preview's resolutions).
    assert max(small) <= 6


def workspace_import_bigger() -> dict:
    from tests.profiles.conftest import load_case_01

    document = load_case_01()["workspace"]
    kb = next(layer for layer in document["layers"] if layer["key"] == "kb")
    kb["items"] += [
        {"path": f"kb/extra-{n}.md", "title": f"Extra {n}", "body": f"Refund note {n}."}
        for n in range(60)
    ]
    workspace_import(document=document, mode="merge")
    return document


def test_save__valid_edit__writes_rule_budget_and_history(editor_client, workspace):
    data = saved_form(editor_client)
    data["tickets-maxItems"] = "1"
    data["budget"] = "700"

    response = editor_client.post(SAVE, data)

    assert response.status_code == 302
    rule = Rule.objects.get(profile=workspace, layer__key="tickets")
    assert rule.max_items == 1
    assert rule.history.first().history_user.username == "editor"
    assert Profile.objects.get(key="support-answer").budget == 700
    page = editor_client.get(EDITOR).content.decode()
    assert "editor</strong> changed rule tickets" in page
    assert "maxItems: 2 → 1" in page


def test_save__invalid_value__error_beside_field_and_nothing_written(editor_client, workspace):
    data = saved_form(editor_client)
    data["customer-maxTokens"] = "0"
    data["tickets-maxItems"] = "1"  # a valid edit in the same save is not written either
    before = history_count()

    response = editor_client.post(SAVE, data)

    html = response.content.decode()
    assert response.status_code == 400
    error_span = html.split('data-error-for="customer maxTokens"')[1].split("</span>")[0]
    assert "must be an integer &gt;= 1" in error_span
    assert 'value="0"' in html.split('aria-label="customer maxTokens"')[0].rsplit("<input", 1)[1]
    assert Rule.objects.get(profile=workspace, layer__key="tickets").max_items == 2
    assert history_count() == before


def test_save__required_and_excluded__error_on_required(editor_client, workspace):
    data = saved_form(editor_client)
    data["customer-participation"] = "exclude"

    html = editor_client.post(SAVE, data).content.decode()

    error_span = html.split('data-error-for="customer required"')[1].split("</span>")[0]
    assert "cannot have participation exclude" in error_span


def test_save__someone_else_saved_first__refused_and_edits_kept(editor_client, workspace):
    data = saved_form(editor_client)
    data["tickets-maxItems"] = "1"
    # Someone saves another change after this form was rendered.
    Rule.objects.filter(profile=workspace, layer__key="kb").update(max_items=5)
    Rule.objects.get(profile=workspace, layer__key="kb").save()

    response = editor_client.post(SAVE, data)

    assert response.status_code == 409
    assert "Someone else saved this profile" in response.content.decode()
    assert Rule.objects.get(profile=workspace, layer__key="tickets").max_items == 2


def test_save__reader__forbidden(client, viewer, workspace):
    client.force_login(viewer)
    data = saved_form(client)
    data["tickets-maxItems"] = "1"

    response = client.post(SAVE, data)

    assert response.status_code == 403
    assert Rule.objects.get(profile=workspace, layer__key="tickets").max_items == 2


def test_save__editors_group_member__allowed(client, viewer, workspace):
    join_editors(viewer)
    client.force_login(viewer)
    data = saved_form(client)
    data["tickets-maxItems"] = "1"

    assert client.post(SAVE, data).status_code == 302
    assert Rule.objects.get(profile=workspace, layer__key="tickets").max_items == 1


def test_save__emptied_rule_fields__layer_back_on_default_rule_values(editor_client, workspace):
    data = saved_form(editor_client)
    data["tickets-maxItems"] = ""
    data["tickets-order"] = ""

    editor_client.post(SAVE, data)

    rule = Rule.objects.get(profile=workspace, layer__key="tickets")
    assert (rule.max_items, rule.order, rule.priority) == (None, None, 80)


def test_discard__after_edits__editor_shows_saved_profile(editor_client, workspace):
    data = saved_form(editor_client)
    data["kb-participation"] = "exclude"
    data["message"] = "safari login"

    response = editor_client.post(DISCARD, data, follow=True)

    form = editor_form_data(response.content.decode())
    assert form["kb-participation"] == "auto"
    assert form["message"] == "safari login"  # the sample input stays
    assert Rule.objects.get(profile=workspace, layer__key="kb").participation == "auto"


def test_save_scenario__then_load__sample_input_comes_back(editor_client, workspace):
    data = saved_form(editor_client)
    data["message"] = "wallet refund"
    data["input:customer_id"] = "C-9"
    data["avail:kb"] = "unavailable"
    data["scenario_name"] = "Lee asks about wallets"
    assert editor_client.post(SCENARIO_SAVE, data).status_code == 200

    scenario = workspace.scenarios.get(name="Lee asks about wallets")
    assert scenario.input == {"message": "wallet refund", "customer_id": "C-9"}
    assert scenario.availability == {"kb": "unavailable"}

    data = saved_form(editor_client)
    data["scenario"] = str(scenario.pk)
    form = editor_form_data(editor_client.post(SCENARIO_LOAD, data).content.decode())
    assert (form["message"], form["input:customer_id"], form["avail:kb"]) == (
        "wallet refund",
        "C-9",
        "unavailable",
    )


def test_preview__missing_required_input__banner_explains_in_words(editor_client, workspace):
    data = saved_form(editor_client)
    data["input:customer_id"] = ""

    html = preview(editor_client, data).content.decode()

    assert "BLOCKED" in html
    assert (
        "Blocked: the required layer <em>Customer profile</em> is missing — input "
        "<code>customer_id</code> was not provided." in html
    )
    assert "No output: the resolution is blocked" in html


def test_preview__item_text_with_markup__escaped_in_output_and_timeline(editor_client, workspace):
    # Given an item whose title and body hold HTML
    from profiles.models import Item

    item = Item.objects.get(layer__key="policies", path="refunds/cards.md")
    item.title = "<script>alert(1)</script>Cards"
    item.body = "Refunds <b>fast</b>."
    item.save()

    html = editor_client.get(EDITOR).content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;Cards" in html
    assert "Refunds &lt;b&gt;fast&lt;/b&gt;." in html


def test_preview__format_xml__output_switches(editor_client, workspace):
    data = saved_form(editor_client)
    data["format"] = "xml"

    html = preview(editor_client, data).content.decode()

    output = html.split('id="output-text"')[1].split("</pre>")[0]
    assert "&lt;context&gt;" in output
    assert 'class="badge">xml<' in html


def test_preview__stale_item_kept_with_warning__line_highlighted(editor_client, workspace):
    # Case 01: the wallet policy is older than 365 days and kept with a warning.
    html = editor_client.get(EDITOR).content.decode()

    output = html.split('id="output-text"')[1].split("</pre>")[0]
    assert '<span class="line not-current">Not current (updated 2025-01-10' in output


def test_preview__version_token__read_once_per_request(editor_client, workspace):
    # Given a warm cache, when a draft is previewed,
    data = saved_form(editor_client)
    preview(editor_client, data)
    data["budget"] = "90"
    with CaptureQueriesContext(connection) as queries:
        preview(editor_client, data)
    # then the content version is read once, however many parts of the preview need it, and
    # so is the served statement (which checks the held token again with the customer's rows).
    # (On PostgreSQL the served statement is prepared: Django logs it as "QUERY = '…' -
    # PARAMS = (…)", its generic form for a server-bound statement.)
    served = [q for q in queries if "WITH h AS" in q["sql"]]
    version_reads = [
        q for q in queries if "profiles_workspaceversion" in q["sql"] and q not in served
    ]
    assert (len(version_reads), len(served)) == (1, 1)


def test_editor__after_loading_a_scenario__a_new_visit_opens_the_default_scenario(
    editor_client, workspace
):
    # Given the default scenario (Dana's card refund) and another one, loaded in the editor,
    other = workspace.scenarios.create(name="Lee", input={"message": "wallet top-up"})
    data = saved_form(editor_client)
    data["scenario"] = str(other.pk)
    assert editor_client.post(SCENARIO_LOAD, data).status_code == 200

    # when the editor is opened again without naming a scenario,
    form = saved_form(editor_client)

    # then it shows the default scenario; a link naming the other one opens that one.
    assert form["message"] == workspace.scenarios.get(is_default=True).input["message"]
    named = editor_client.get(f"{EDITOR}?scenario={other.pk}").content.decode()
    assert editor_form_data(named)["message"] == "wallet top-up"


def test_save__sample_input__comes_back_after_the_save_through_the_link(editor_client, workspace):
    data = saved_form(editor_client)
    data["budget"] = "1500"
    data["message"] = "safari login"

    response = editor_client.post(SAVE, data)

    assert response.status_code == 302
    assert response.url.startswith(f"{EDITOR}?message=safari+login&")
    form = editor_form_data(editor_client.get(response.url).content.decode())
    assert (form["budget"], form["message"]) == ("1500", "safari login")
