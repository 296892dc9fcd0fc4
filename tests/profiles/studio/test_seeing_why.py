"""Issue 23, "seeing why": the editor shows the rank, score and matched terms of every
retrieved item (cut or not), separates budget cuts from the rules' limits, collapses what
did not matter, links reason codes to their explanation and shows scores with 3 decimals."""

import re

import pytest

from tests.profiles.studio.formdata import editor_form_data

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
