"""The profile list's search, filters and sort; two profiles compared; the API token page."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest

from profiles.models import ApiKey, Profile, Rule
from profiles.models.keys import key_hash
from tests.profiles.conftest import api_key_for
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db


def listed(html: str) -> list[str]:
    return re.findall(r'<tr data-profile="([^"]+)"', html)


def test_profile_list__search__matches_key_name_consumer_or_objective(editor_client, workspace):
    html = editor_client.get("/profiles/?q=qa").content.decode()

    assert listed(html) == ["qa-review"]
    assert "1 of 2 profiles matches." in html


def test_profile_list__filters__consumer_objective_environment_and_status(editor_client, workspace):
    everything = listed(editor_client.get("/profiles/").content.decode())
    by_status = listed(editor_client.get("/profiles/?status=RESOLVED").content.decode())
    without_scenario = listed(editor_client.get("/profiles/?status=none").content.decode())
    by_objective = listed(
        editor_client.get(f"/profiles/?objective={workspace.objective}").content.decode()
    )
    by_environment = listed(editor_client.get("/profiles/?environment=none").content.decode())

    assert sorted(everything) == ["qa-review", "support-answer"]
    assert (by_status, without_scenario, by_objective) == (
        ["support-answer"],
        ["qa-review"],
        ["support-answer"],
    )
    expected = [
        p.key for p in Profile.objects.filter(environment__isnull=True).order_by("position")
    ]
    assert by_environment == expected


def test_profile_list__sort__by_budget_both_ways(editor_client, workspace):
    ascending = listed(editor_client.get("/profiles/?sort=budget").content.decode())
    descending = listed(editor_client.get("/profiles/?sort=-budget").content.decode())

    budgets = {p.key: p.budget for p in Profile.objects.all()}
    assert ascending == sorted(budgets, key=budgets.get)
    assert descending == list(reversed(ascending))


def test_profile_list__htmx_filter__returns_only_the_results(editor_client, workspace):
    response = editor_client.get(
        "/profiles/?q=support",
        headers={"HX-Request": "true", "HX-Target": "profile-results"},
    )

    html = response.content.decode()
    assert "<form" not in html and listed(html) == ["support-answer"]


def test_compare__two_profiles__rules_that_differ_and_resolution_diff(editor_client, workspace):
    other = Profile.objects.exclude(pk=workspace.pk).first()

    html = editor_client.get(
        f"/profiles/_compare/?a={workspace.key}&b={other.key}"
    ).content.decode()

    assert "Rules that differ" in html and "Per layer" in html
    assert html.count("status-pill") >= 2
    # A layer with a rule in one profile only shows as rule vs default rule.
    only_a = set(Rule.objects.filter(profile=workspace).values_list("layer__key", flat=True)) - set(
        Rule.objects.filter(profile=other).values_list("layer__key", flat=True)
    )
    for layer in only_a:
        assert (
            f'<tr data-layer="{layer}"><th scope="row"><code>{layer}</code></th><td>rule</td>'
            in html
        )


def test_compare__same_profile_twice__nothing_differs(editor_client, workspace):
    html = editor_client.get(
        f"/profiles/_compare/?a={workspace.key}&b={workspace.key}"
    ).content.decode()

    assert "have the same rules and selection" in html
    assert "Both put the same units in the context." in html
    assert "differs</span>" not in html


def test_tokens__create__shown_once_then_only_its_prefix(editor_client, editor, workspace):
    created = editor_client.post("/tokens/create/")
    later = editor_client.get("/tokens/")

    key = re.search(r'id="new-token" tabindex="0">([^<]+)</pre>', created.content.decode())[1]
    stored = ApiKey.objects.get(owner=editor, kind="user", revoked_at=None)
    assert stored.hash == key_hash(key)
    assert "no-store" in created["Cache-Control"]
    assert key not in later.content.decode()
    assert f"<code>{stored.prefix}…</code>" in later.content.decode()


def test_tokens__revoke__token_gone_and_api_refuses_it(client, editor_client, editor, workspace):
    key = api_key_for(editor)

    editor_client.post("/tokens/revoke/")

    assert not ApiKey.objects.filter(owner=editor, revoked_at=None).exists()
    response = client.post(
        "/api/v1/resolve",
        {"profile": "support-answer"},
        content_type="application/json",
        headers={"Authorization": f"Token {key}"},
    )
    assert response.status_code == 401


def test_compare__typed_sample__wins_over_the_scenario_unless_loaded(editor_client, workspace):
    scenario = workspace.scenarios.first()
    typed = f"/profiles/_compare/?a={workspace.key}&b={workspace.key}&scenario={scenario.pk}"

    edited = editor_client.get(typed + "&message=typed+by+hand").content.decode()
    loaded = editor_client.get(typed + "&message=typed+by+hand&load=1").content.decode()

    assert "typed by hand</textarea>" in edited
    assert "typed by hand" not in loaded


# --- compare across formats (issue 38 item 15) -------------------------------------------------


def admitted_row(html: str, layer: str) -> str:
    return html.split(f'data-admitted-layer="{layer}"')[1].split("</tr>")[0]


def test_compare__different_formats__says_so_admitted_items_per_layer_text_diff_on_demand(
    editor_client, workspace
):
    # Given support-answer (markdown) and qa-review (xml), on the saved scenario
    scenario = workspace.scenarios.get()
    html = editor_client.get(
        f"/profiles/_compare/?a=support-answer&b=qa-review&scenario={scenario.pk}&load=1"
    ).content.decode()

    # Then the page says the formats differ and why the text diff is not the comparison
    notice = html.split("data-formats-differ>")[1].split("</p>")[0]
    assert "support-answer renders markdown, qa-review renders xml:" in notice
    assert "a text diff would be all formatting" in notice
    # ... names the input both resolved, with its values
    used = html.split("data-input-used>")[1].split("</p>")[0]
    assert "scenario “Dana&#x27;s card refund”" in used
    assert "customer_id: <code>C-7</code>" in used
    # ... compares the admitted items per layer, with how each side admits them
    assert "refunds/cards.md" in admitted_row(html, "policies").split('data-side="both"')[1]
    only_a = admitted_row(html, "glossary").split('data-side="a"')[1].split("</td>")[0]
    assert '<code>chargeback</code> <span class="muted small">on request</span>' in only_a
    only_b = admitted_row(html, "tickets").split('data-side="b"')[1].split("</td>")[0]
    assert "<code>T-0950</code>" in only_b
    kb = admitted_row(html, "kb").split('data-side="both"')[1]
    assert "inline in support-answer, reference (BEYOND_MAX_ITEMS) in qa-review" in kb
    # ... and keeps the text diff one click away
    assert '<details class="text-diff-toggle"' in html
    assert html.index('id="admitted-diff"') < html.index('id="text-diff"')


def test_compare__different_formats__no_item_outside_a_layers_filter(editor_client, workspace):
    # tickets and customer filter by customer_id: C-9's rows are never anyone's to see here
    scenario = workspace.scenarios.get()
    html = editor_client.get(
        f"/profiles/_compare/?a=support-answer&b=qa-review&scenario={scenario.pk}&load=1"
    ).content.decode()

    admitted = html.split('id="admitted-diff"')[1].split("</section>")[0]
    assert "T-1001" in admitted or "T-0990" in admitted
    assert "T-2002" not in html and "C-9" not in html


def test_compare__same_format_typed_input__text_diff_shown_no_notice(editor_client, workspace):
    html = editor_client.get(
        "/profiles/_compare/?a=support-answer&b=support-answer&message=refund&input:customer_id=C-7"
    ).content.decode()

    assert "data-formats-differ" not in html and "text-diff-toggle" not in html
    assert 'id="text-diff"' in html and 'id="admitted-diff"' in html
    used = html.split("data-input-used>")[1].split("</p>")[0]
    assert "typed input" in used and "message: <code>refund</code>" in used
