"""Every studio page as rendered for the people who may open it: no template syntax reaches the
browser. A ``{# … #}`` comment spans one line only; written over two, Django prints it as text
(issue 18: the editor showed its own comment above the rules).

The pages are those of the permission matrix (``test_permission_matrix``): every studio URL
pattern, each method and role that gets a page (200, or 400 with the form's errors), plus the
editor of every profile and the preview of a change request with a scenario loaded. The
workspace is conformance case 01: no name, text or JSON of it contains ``{{``, ``{%`` or ``{#``,
so any such pair in a page comes from a template.
"""

import re
from pathlib import Path

import pytest

from profiles.models import ChangeRequest, Profile, Scenario
from tests.profiles.doors.roles import SCENARIO
from tests.profiles.doors.test_permission_matrix import ROUTES, concrete_url, door_for, request

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
TEMPLATE_SYNTAX = re.compile(r"\{[{%#]")
# An opener whose closer is not on the same line: Django's lexer leaves it as text.
UNCLOSED_ON_ITS_LINE = re.compile(r"\{#(?!.*?#\})|\{%(?!.*?%\})|\{\{(?!.*?\}\})")
SIGNED_IN = ("reader", "editor", "staff")  # the token reader and anonymous get the login page
STUDIO_ROUTES = [
    route for route in ROUTES if not route.route.startswith(("api/", "admin/", "accounts/"))
]


def leaked_syntax(html: str) -> list[str]:
    """Return each template opener in ``html`` with the text around it."""
    return [html[max(m.start() - 60, 0) : m.end() + 60] for m in TEMPLATE_SYNTAX.finditer(html)]


def assert_no_template_syntax(response, what: str) -> None:
    assert response["Content-Type"].startswith("text/html"), what
    leaks = leaked_syntax(response.content.decode())
    assert not leaks, f"{what} shows template syntax:\n" + "\n---\n".join(leaks)


def test_leaked_syntax__a_two_line_comment__is_found():
    html = "<p>{# The live preview is requested by this element,\n   … #}</p>"

    assert leaked_syntax(html)
    assert not leaked_syntax('<div hx-vals=\'{"a": {"b": 1}}\'>{ x }</div>')


def test_templates__every_tag_and_comment__opens_and_closes_on_one_line():
    unclosed = [
        f"{path.relative_to(TEMPLATES)}:{number}: {line.strip()}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if UNCLOSED_ON_ITS_LINE.search(line)
    ]

    assert not unclosed, "use {% comment %} for text over several lines:\n" + "\n".join(unclosed)


@pytest.mark.parametrize("route", STUDIO_ROUTES, ids=str)
def test_studio_page__every_role_that_sees_it__no_template_syntax_in_the_html(people, route):
    door = door_for(route)
    url = concrete_url(route)
    pages = [case for case in door.cases() if case[2] in SIGNED_IN and case[3] in (200, 400)]
    for method, data, role, expected in pages:
        response = request(people.clients[role], method, url, data, api=False)
        assert response.status_code == expected, f"{method} {url} as {role}"
        if response["Content-Type"].startswith("text/html"):
            assert_no_template_syntax(response, f"{method} {url} as {role}")


@pytest.mark.parametrize("role", SIGNED_IN)
def test_editor_and_change_request_preview__every_profile__no_template_syntax(people, role):
    client = people.clients[role]
    for key in Profile.objects.values_list("key", flat=True):
        assert_no_template_syntax(client.get(f"/profiles/{key}/"), f"the editor of {key}")
    scenario = Scenario.objects.get(name=SCENARIO)
    preview = f"/changes/{ChangeRequest.objects.get().pk}/preview/?scenario={scenario.pk}"
    response = client.get(preview)

    assert response.status_code == 200
    assert_no_template_syntax(response, preview)
