"""The editor's budget sweep (one pass of the engine, shown as a partial) and the playground
(one sample input against every profile, a page of rows, counted per profile resolved)."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest
from django.core.cache import cache as django_cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from profiles.import_export.imports import workspace_import
from profiles.studio.views.playground import PLAYGROUND_PAGE
from profiles.studio.views.sweep import budget_ticks
from tests.profiles.conftest import load_case_01
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

EDITOR = "/profiles/support-answer/"
SWEEP = EDITOR + "preview/sweep/"
PLAYGROUND = "/profiles/_playground/"
HTMX = {"HX-Request": "true"}

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_counters():
    django_cache.clear()
    yield
    django_cache.clear()


def saved_form(client) -> dict:
    return editor_form_data(client.get(EDITOR).content.decode())


def no_template_syntax(html: str) -> None:
    assert "{%" not in html and "{{" not in html and "%}" not in html


def test_editor__preview__offers_the_sweep_loaded_on_demand(editor_client, workspace):
    html = editor_client.get(EDITOR).content.decode()

    assert (
        'id="budget-sweep"' in html and 'hx-post="/profiles/support-answer/preview/sweep/"' in html
    )


def test_sweep__saved_profile__slider_chart_table_and_where_required_content_fits(
    editor_client, workspace
):
    data = saved_form(editor_client)

    response = editor_client.post(SWEEP, data, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    no_template_syntax(html)
    assert 'type="range"' in html and 'id="sweep-at"' in html and "data-no-preview" in html
    assert f'value="{workspace.budget}"' in html  # the slider starts at the profile's budget
    assert "<table" in html and "First in at" in html  # the chart's text alternative
    assert "required content" in html
    assert f"At {workspace.budget} est. tokens:" in html


def test_sweep__slider_at_one_token__only_the_at_part_and_fewer_units(editor_client, workspace):
    data = saved_form(editor_client)
    full = editor_client.post(SWEEP, data, headers=HTMX).content.decode()
    admitted_at_budget = int(re.search(r"(\d+) of \d+ units? admitted", full).group(1))

    response = editor_client.post(SWEEP, data | {"sweep_at": "1", "part": "at"}, headers=HTMX)

    html = response.content.decode()
    no_template_syntax(html)
    assert 'type="range"' not in html  # the slider is not replaced while it is dragged
    assert '<div id="sweep-table" hx-swap-oob="true">' in html and "In at 1</th>" in html
    assert "At 1 est. tokens:" in html
    assert "0 of" in html and admitted_at_budget > 0
    assert "fewer than at the profile’s budget" in html


def test_sweep__slider_not_digits__the_profile_budget(editor_client, workspace):
    data = saved_form(editor_client)

    html = editor_client.post(SWEEP, data | {"sweep_at": "１٢", "part": "at"}, headers=HTMX)

    assert f"At {workspace.budget} est. tokens:" in html.content.decode()


def test_sweep__invalid_draft__asks_to_fix_the_fields(editor_client, workspace):
    data = saved_form(editor_client) | {"budget": "0"}

    response = editor_client.post(SWEEP, data, headers=HTMX)

    assert response.status_code == 200
    assert "Fix the highlighted fields first." in response.content.decode()


def test_sweep__reader__may_sweep(client, viewer, workspace):
    client.force_login(viewer)
    data = saved_form(client)

    assert client.post(SWEEP, data, headers=HTMX).status_code == 200


def test_sweep__preview_rate_used_up__429(editor_client, workspace, settings):
    data = saved_form(editor_client)
    django_cache.clear()
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "preview": "1/minute"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    first = editor_client.post(SWEEP, data, headers=HTMX)
    second = editor_client.post(SWEEP, data, headers=HTMX)

    assert (first.status_code, second.status_code) == (200, 429)


def test_sweep__chart__axis_ticks_labels_legend_and_use_this_budget(editor_client, workspace):
    data = saved_form(editor_client) | {"sweep_at": "300"}

    html = editor_client.post(SWEEP, data, headers=HTMX).content.decode()

    # The budget axis: round ticks from 0 to the ceiling, with its title.
    ceiling = int(re.search(r'id="sweep-at"[^>]* max="(\d+)"', html)[1])
    ticks = [int(v) for v in re.findall(r'class="sweep-tick[^"]*"[^>]*>(\d+)</span>', html)]
    assert ticks[0] == 0 and ticks[-1] <= ceiling and len(ticks) >= 3
    assert "budget (est. tokens)" in html
    # A label per run beside its bar, and a legend naming the bars and both lines.
    assert html.count('class="sweep-label"') == html.count('<rect class="sweep-run')
    assert f"the profile’s budget ({workspace.budget})" in html
    assert "the budget to try (300)" in html and "a run of a required layer" in html
    # The drawing is hidden; the table below is its equivalent.
    assert 'class="sweep-plot" aria-hidden="true"' in html and "First in at" in html
    assert '<button type="button" class="button small" id="use-sweep-budget"' in html


@pytest.mark.parametrize(
    ("ceiling", "ticks"),
    [
        (1000, [0, 200, 400, 600, 800, 1000]),
        (2400, [0, 500, 1000, 1500, 2000]),
        (7, [0, 2, 4, 6]),
        (1, [0, 1]),
    ],
)
def test_budget_ticks__ceiling__round_values_from_zero(ceiling, ticks):
    assert [tick["value"] for tick in budget_ticks(ceiling)] == ticks
    assert budget_ticks(ceiling)[0]["x"] == 0


# --- the playground ------------------------------------------------------------------------------


def rows(html: str) -> list[str]:
    return re.findall(r'<th scope="row"><a href="/profiles/([^/]+)/', html)


def test_playground__reader__every_profile_with_status_tokens_and_editor_link(
    client, viewer, workspace
):
    client.force_login(viewer)

    response = client.get(PLAYGROUND + "?message=card+refund&input%3Acustomer_id=C-1")

    html = response.content.decode()
    assert response.status_code == 200
    no_template_syntax(html)
    assert sorted(rows(html)) == ["qa-review", "support-answer"]
    assert 'href="/profiles/support-answer/?message=card+refund&amp;input%3Acustomer_id=C-1' in html
    # The status as the profile list shows it (a coloured pill; issue 38 item 14).
    assert "status-pill status-" in html and "est. tokens" in html.lower()


def test_playground__same_input_as_the_editor__same_status_and_tokens(editor_client, workspace):
    # The editor's preview of the default scenario and the playground's row agree.
    case = load_case_01()
    request = case["request"]
    query = f"message={request['input']['message']}&now={request['now']}"
    for key, value in request["input"].items():
        if key != "message":
            query += f"&input%3A{key}={value}"
    expected = case["expect"]

    html = editor_client.get(PLAYGROUND + "?" + query.replace(" ", "+")).content.decode()

    row = html[html.index('<a href="/profiles/support-answer/') :]
    row = row[: row.index("</tr>")]
    assert f"status-{expected['status']}" in row
    assert f"{expected['budget']['estimatedTokens']} / " in row


def test_playground__one_consumer_objective__only_its_environments(editor_client, workspace):
    html = editor_client.get(PLAYGROUND).content.decode()
    pairs = re.findall(r'<option value="([^"]+/[^"]+)"', html)
    chosen = f"{workspace.consumer.key}/{workspace.objective}"
    assert chosen in pairs and len(pairs) == 2

    filtered = editor_client.get(PLAYGROUND + f"?selection={chosen}").content.decode()

    assert rows(filtered) == ["support-answer"]


def test_playground__more_profiles_than_a_page__fifty_resolved_and_a_pager(editor_client, db):
    document = load_case_01()["workspace"]
    base = document["profiles"][0]
    document["profiles"] = [
        {**base, "key": f"p-{n:03}", "objective": f"o-{n:03}", "environment": None}
        for n in range(PLAYGROUND_PAGE + 3)
    ]
    workspace_import(document=document, mode="replace")

    first = editor_client.get(PLAYGROUND).content.decode()
    second = editor_client.get(PLAYGROUND + "?page=2").content.decode()

    assert len(rows(first)) == PLAYGROUND_PAGE and 'rel="next"' in first
    assert rows(second) == ["p-050", "p-051", "p-052"]


def test_playground__counts_one_resolution_per_profile(editor_client, workspace, settings):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "resolve": "3/minute"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    typed = PLAYGROUND + "?message=card+refund"  # an input typed: every profile resolves it
    first = editor_client.get(typed)  # two profiles: 2 of 3
    second = editor_client.get(typed)  # two more would be 4

    assert (first.status_code, second.status_code) == (200, 429)
    assert int(second["Retry-After"]) >= 1


def test_playground__bad_now__each_row_names_the_field(editor_client, workspace):
    response = editor_client.get(PLAYGROUND + "?now=yesterday")

    html = response.content.decode()
    assert response.status_code == 200
    assert sorted(rows(html)) == ["qa-review", "support-answer"]
    assert html.count("status-ERROR") == 2 and html.count("<code>now</code>") == 2


def test_playground__fifty_profiles__as_many_queries_as_two(editor_client, workspace):
    editor_client.get(PLAYGROUND)  # the workspace snapshot is read and cached once
    with CaptureQueriesContext(connection) as two:
        editor_client.get(PLAYGROUND)
    document = load_case_01()["workspace"]
    base = document["profiles"][0]
    document["profiles"] = [
        {**base, "key": f"p-{n:03}", "objective": f"o-{n:03}", "environment": None}
        for n in range(PLAYGROUND_PAGE)
    ]
    workspace_import(document=document, mode="replace")
    editor_client.get(PLAYGROUND)
    django_cache.clear()  # the counters, not the snapshot (a process-local cache)
    with CaptureQueriesContext(connection) as fifty:
        html = editor_client.get(PLAYGROUND).content.decode()

    assert len(rows(html)) == PLAYGROUND_PAGE
    assert len(fifty.captured_queries) <= len(two.captured_queries)


def test_playground__opened_without_input__each_profile_on_its_default_scenario(
    editor_client, workspace
):
    # Given support-answer with its default scenario, qa-review with none,
    scenario = workspace.scenarios.get(is_default=True)
    listed = editor_client.get("/profiles/").content.decode()

    # when the playground opens without an input,
    html = editor_client.get(PLAYGROUND).content.decode()

    # then support-answer shows its default scenario's status as the profile list does,
    # with a link to the editor on that scenario; qa-review asks for an input.
    no_template_syntax(html)
    assert sorted(rows(html)) == ["qa-review", "support-answer"]
    assert "each profile shows its default scenario" in html
    row = html[html.index('<tr data-profile="support-answer">') :]
    row = row[: row.index("</tr>")]
    pill = re.search(r'<span class="status-pill status-(\w+)">', row)
    assert pill and f'<span class="status-pill status-{pill[1]}">' in listed
    assert scenario.name.replace("'", "&#x27;") in row
    assert f'href="/profiles/support-answer/?scenario={scenario.pk}"' in row
    other = html[html.index('<tr data-profile="qa-review">') :]
    assert "No saved scenario: type an input above to resolve it." in other[: other.index("</tr>")]


def test_playground__no_profile_has_a_scenario__says_type_an_input_first(editor_client, workspace):
    workspace.scenarios.all().delete()

    html = editor_client.get(PLAYGROUND).content.decode()

    assert "Type an input first" in html
    assert "status-pill" not in html


def test_playground__default_scenarios__one_resolution_per_scenario(
    editor_client, workspace, settings
):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "resolve": "2/minute"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    statuses = [editor_client.get(PLAYGROUND).status_code for _ in range(3)]

    assert statuses == [200, 200, 429]  # one profile of two has a scenario: 1 a page
