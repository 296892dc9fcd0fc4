"""Issue 23, "seeing why": the editor shows the rank, score and matched terms of every
retrieved item (cut or not), separates budget cuts from the rules' limits, collapses what
did not matter, links reason codes to their explanation and shows scores with 3 decimals."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest

from profiles.models import Scenario
from profiles.resolution import explain
from profiles.studio import item_rows, presenters
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

EDITOR = "/profiles/support-answer/"
PREVIEW = EDITOR + "preview/"
ROWS = EDITOR + "preview/rows/"
HTMX = {"HX-Request": "true"}

pytestmark = pytest.mark.django_db


def saved_form(client) -> dict:
    return editor_form_data(client.get(EDITOR).content.decode())


def group(html: str, name: str) -> str:
    return html.split(f'data-group="{name}"')[1].split("</table>")[0]


def test_rows__item_beyond_max_items__rank_score_and_matched_terms_shown(editor_client, workspace):
    data = saved_form(editor_client) | {"layer": "kb", "kb-maxItems": "1"}

    html = editor_client.post(ROWS, data, headers=HTMX).content.decode()

    beyond = group(html, "BEYOND_MAX_ITEMS")
    rows = re.findall(
        r'<td class="num rank">([^<]*)</td><td class="num score">([^<]*)</td>'
        r'<td class="small">([^<]*)</td>',
        beyond,
    )
    assert rows and rows[0][0] == "2"
    assert all(re.fullmatch(r"\d+\.\d{3}", score) for _, score, _ in rows)
    assert all(matched != "—" for _, _, matched in rows)
    admitted = group(html, "admitted")
    assert '<td class="num rank">1</td>' in admitted


def test_meter__budget_and_max_items_cut__counted_apart(editor_client, workspace):
    data = saved_form(editor_client) | {"budget": "120", "kb-maxItems": "1"}

    html = editor_client.post(PREVIEW, data, headers=HTMX).content.decode()

    total = int(re.search(r'id="trimmed-count">(\d+)<', html)[1])
    budget = int(re.search(r'id="trimmed-budget">(\d+)<', html)[1])
    rules = int(re.search(r'id="trimmed-rules">(\d+)<', html)[1])
    assert budget > 0 and rules > 0 and budget + rules == total
    assert "trimmed by the budget" in html and "cut by the rules’ limits" in html


def test_timeline__excluded_layer__one_line_instead_of_skipped_stages(editor_client, workspace):
    data = saved_form(editor_client) | {"kb-participation": "exclude"}

    html = editor_client.post(PREVIEW, data, headers=HTMX).content.decode()

    kb = html.split('data-layer="kb"')[1].split("</li>")[0]
    assert 'class="tl-collapsed"' in kb and "The profile excludes this layer." in kb
    assert "data-stage" not in kb and "Not evaluated" not in kb
    assert "4 stages not evaluated" in kb
    assert "scope includes" not in kb  # excluded whatever its scope: not said
    tickets = html.split('data-layer="tickets"')[1].split('class="tl-entry')[0]
    assert tickets.count("data-stage=") == 7  # a selected layer keeps its seven stages


def test_what_changed__only_the_reason_code_differs__layer_not_listed():
    def resolution(reason):
        layer = {
            "layer": "kb",
            "name": "KB",
            "decision": {"kind": "omitted", "reason": reason, "detail": None},
            "rendered": {"items": []},
        }
        return {
            "layers": [layer],
            "references": [],
            "budget": {"estimatedTokens": 10},
            "status": "RESOLVED",
        }

    changes = presenters.what_changed(
        resolution("LAYER_UNAVAILABLE"), resolution("EXCLUDED_BY_PROFILE")
    )

    assert changes["decisions"] == [] and changes["reason_only"] == 1
    assert changes["empty"]


def test_timeline__every_reason_code__links_to_its_glossary_entry(editor_client, workspace):
    data = saved_form(editor_client) | {"kb-participation": "exclude", "budget": "120"}

    html = editor_client.post(PREVIEW, data, headers=HTMX).content.decode()
    glossary = editor_client.get("/help/reasons/").content.decode()

    timeline = html.split('class="timeline"')[1].split("</ol>\n")[0]
    codes = re.findall(r'<code class="(?:reason|reason detail|stage-code)">', timeline)
    linked = re.findall(
        r'<a class="reason-link" href="/help/reasons/#reason-([A-Z_]+)"><code', timeline
    )
    assert codes and len(linked) >= len(codes)
    assert "EXCLUDED_BY_PROFILE" in linked and "BUDGET_TRIMMED" in linked
    assert all(f'id="reason-{code}"' in glossary for code in linked)


def test_glossary__every_reason_code__in_exactly_one_section():
    listed = [code for _, codes in explain.GLOSSARY_SECTIONS for code in codes]

    assert sorted(listed) == sorted(explain.REASON_SENTENCES)


def test_glossary_page__codes_with_an_argument__shown_with_its_name(editor_client):
    html = editor_client.get("/help/reasons/").content.decode()

    assert "<code>INPUT_NOT_PROVIDED:key</code>" in html
    assert "Input <code>key</code> was not provided." in html


def test_profile_list__blocked_default_scenario__first_blocker_beside_the_status(
    editor_client, workspace
):
    Scenario.objects.filter(profile=workspace).update(input={})

    html = editor_client.get("/profiles/").content.decode()

    row = html.split('data-profile="support-answer"')[1].split("</tr>")[0]
    assert "BLOCKED" in row
    assert "Blocked: the required layer" in row
    assert 'href="/help/reasons/#reason-MISSING_REQUIRED_CONTEXT"' in row


def test_score_text__six_decimals__three_on_screen():
    assert item_rows.score_text(1.234567) == "1.235"
    assert item_rows.score_text(0) == "0.000"
    assert item_rows.score_text(None) == "—"


def materialized_sentence(html: str, layer: str) -> str:
    entry = html.split(f'data-layer="{layer}"')[1].split('class="tl-entry')[0]
    stage = entry.split('data-stage="Materialized"')[1].split("</li>")[0]
    return " ".join(re.sub(r"<[^>]+>", " ", stage).split())


def test_timeline__items_not_retrieved__counted_apart_from_those_offered_as_references(
    editor_client, workspace
):
    # Given kb retrieves 2 of its 4 items (the other 2 match no query term), and keeps 1
    data = saved_form(editor_client) | {"kb-maxItems": "1"}

    # When the preview (a summary) shows the kb layer's timeline
    html = editor_client.post(PREVIEW, data, headers=HTMX).content.decode()

    # Then the item beyond maxItems is offered as a reference, the 2 others not retrieved
    sentence = materialized_sentence(html, "kb")
    assert "1 item kept; 1 other item offered as references; 2 not retrieved." in sentence


def test_timeline__only_items_not_retrieved__none_offered_as_references(editor_client, workspace):
    html = editor_client.get(EDITOR).content.decode()

    sentence = materialized_sentence(html, "kb")

    assert "2 items kept; 2 not retrieved." in sentence
    assert "offered" not in sentence


def test_layer_stages__full_resolution__reasons_counted_from_the_record():
    record = {
        "layer": "kb",
        "available": {"state": "MATERIAL_PRESENT", "items": 40},
        "applicable": {"state": "APPLICABLE", "reason": "IN_SCOPE", "candidates": 40},
        "currentness": {"state": "NOT_ASSESSED"},
        "decision": {"kind": "inline", "reason": "INCLUDED_APPLICABLE", "detail": None},
        "materialized": {
            "items": [{"item": "a"}, {"item": "b"}, {"item": "c"}],
            "references": [{"item": f"o{n}", "reason": "BEYOND_MAX_ITEMS"} for n in range(16)]
            + [{"item": f"n{n}", "reason": "NOT_RETRIEVED"} for n in range(21)],
        },
        "projected": {"facets": ["title"], "derived": {}},
        "rendered": {"items": ["a", "b", "c"], "trimmed": [], "estimatedTokens": 90},
    }

    stages = {stage["name"]: stage for stage in presenters.layer_stages(record)}

    assert str(stages["Materialized"]["sentence"]) == (
        "3 items kept; 16 other items offered as references; 21 not retrieved."
    )


def test_layer_stages__summary_without_reasons__says_both_together():
    # A summary record counts its references in one number: never all "offered".
    record = {
        "layer": "kb",
        "available": {"state": "MATERIAL_PRESENT", "items": 40},
        "applicable": {"state": "APPLICABLE", "reason": "IN_SCOPE", "candidates": 40},
        "currentness": {"state": "NOT_ASSESSED"},
        "decision": {"kind": "inline", "reason": "INCLUDED_APPLICABLE", "detail": None},
        "materialized": {"items": [{"item": "a"}], "references": []},
        "projected": {"facets": ["title"], "derived": {}},
        "rendered": {"items": ["a"], "trimmed": [], "estimatedTokens": 30},
        "counts": {"items": 1, "references": 37, "trimmed": 0},
    }

    stages = {stage["name"]: stage for stage in presenters.layer_stages(record)}

    assert str(stages["Materialized"]["sentence"]) == (
        "1 item kept; 37 other items offered as references or not retrieved."
    )
