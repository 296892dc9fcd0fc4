"""Accessibility in a real browser: axe-core (offline, from axe-playwright-python) finds no
serious or critical violation on any studio page, the customised admin pages, or the editor
in its harder states; the keyboard reaches every part of the editor quickly."""

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import User
from django.urls import URLPattern, get_resolver
from django.utils import timezone
from playwright.sync_api import expect

from profiles.models import (
    ChangeRequest,
    ImportJob,
    Item,
    Profile,
    Scenario,
    Webhook,
    WebhookDelivery,
)
from profiles.safechange.change_requests import change_request_close, change_request_create
from profiles.team.invitations import invitation_create
from profiles.workspace.origin import STUDIO
from tests.browser.conftest import ARTIFACTS, sign_in
from tests.profiles.studio.fixtures import stopped_bulk_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Axe()
BLOCKING = ("serious", "critical")

# Every GET page of the studio, by URL name, as a path of the conformance-01 workspace.
# URL names missing here fail test_axe_pages__every_studio_page__listed.
STUDIO_PAGES = {
    "profile-list": lambda ws: "/profiles/",
    "profile-create": lambda ws: "/profiles/_new/",
    "profile-editor": lambda ws: f"/profiles/{ws.key}/",
    "profile-duplicate": lambda ws: f"/profiles/{ws.key}/duplicate/",
    "profile-delete": lambda ws: f"/profiles/{ws.key}/delete/",
    "layer-list": lambda ws: "/layers/",
    "layer-edit": lambda ws: "/layers/kb/",
    "item-list": lambda ws: "/layers/kb/items/",
    "item-edit": lambda ws: f"/layers/kb/items/{Item.objects.filter(layer__key='kb').first().pk}/",
    "profile-edit": lambda ws: f"/profiles/{ws.key}/details/",
    "profile-compare": lambda ws: "/profiles/_compare/?a=support-answer&b=qa-review",
    "profile-playground": lambda ws: "/profiles/_playground/?message=card+refund",
    "consumer-list": lambda ws: "/consumers/",
    "consumer-create": lambda ws: "/consumers/_new/",
    "consumer-edit": lambda ws: f"/consumers/{ws.consumer.key}/",
    "consumer-delete": lambda ws: f"/consumers/{ws.consumer.key}/delete/",  # in use: explained
    "layer-create": lambda ws: "/layers/_new/",
    "layer-delete": lambda ws: "/layers/kb/delete/",
    "item-create": lambda ws: "/layers/kb/items/_new/",
    "item-bulk": lambda ws: "/layers/kb/items/bulk/",
    "item-bulk-job": lambda ws: f"/layers/kb/items/bulk/{editors_stopped_bulk_job().pk}/",
    "item-delete": lambda ws: (
        f"/layers/kb/items/{Item.objects.filter(layer__key='kb').first().pk}/delete/"
    ),
    "token-list": lambda ws: "/tokens/",
    "workspace-upload": lambda ws: "/workspace/upload/",
    "workspace-import-job": lambda ws: f"/workspace/imports/{finished_import().pk}/",
    "profile-history": lambda ws: f"/profiles/{ws.key}/history/",
    "profile-version-restore": lambda ws: f"/profiles/{ws.key}/history/1/restore/",
    "change-request-list": lambda ws: "/changes/",
    "change-request": lambda ws: f"/changes/{a_change_request(ws).pk}/",
    "change-request-preview": lambda ws: f"/changes/{a_change_request(ws).pk}/preview/",
    "change-request-impact-more": lambda ws: f"/changes/{a_change_request(ws).pk}/impact/",
    "environment-list": lambda ws: "/environments/",
    "help-safe-change": lambda ws: "/help/safe-change/",
    "help-reasons": lambda ws: "/help/reasons/",
    "activity": lambda ws: "/activity/",
    "webhook-list": lambda ws: "/webhooks/",
    "webhook": lambda ws: f"/webhooks/{a_webhook().pk}/",  # with a delivered and a failed one
    "webhook-delete": lambda ws: f"/webhooks/{a_webhook().pk}/delete/",
    "team": lambda ws: a_teammate() and "/team/",  # a teammate and an open invitation
    "team-member-active": lambda ws: f"/team/members/{a_teammate().pk}/active/",
    "team-join": lambda ws: f"/team/join/{an_invitation_token()}/",  # signed in: sign out first
}


def a_teammate() -> User:
    """Return a reader beside the signed-in staff member, with an open invitation, made once."""
    teammate, made = User.objects.get_or_create(
        username="ann", defaults={"email": "ann@example.com", "last_login": timezone.now()}
    )
    if made:
        an_invitation_token()
    return teammate


def an_invitation_token() -> str:
    """Return the token of a new open invitation (renewing the one before)."""
    staff = User.objects.get(username="editor")
    return invitation_create(
        email="kim@example.com", role="editor", actor=staff, origin=STUDIO
    ).token


def finished_import() -> ImportJob:
    """An import that ended with errors: the job page's fullest state."""
    return ImportJob.objects.create(
        user=User.objects.get(username="editor"),
        status=ImportJob.Status.FAILED,
        phase="finished",
        progress=100,
        error={
            "issues": [
                {"path": "layers[0].key", "message": "is required"},
                {
                    "path": "profiles[1].rules.kb.maxItems",
                    "message": "must be an integer >= 0",
                    "entry": "rule qa-review/kb",
                    "line": 212,
                    "column": 17,
                    "aliasLine": 240,
                    "aliasColumn": 9,
                },
            ]
        },
    )


def editors_stopped_bulk_job() -> ImportJob:
    return stopped_bulk_job(user=User.objects.get(username="editor"), layer="kb")


def succeeded_import() -> ImportJob:
    """An import that changed rows: the summary table and the names it lists."""
    counts = {"created": 0, "updated": 0, "deleted": 0, "unchanged": 1}
    names = {"created": [], "updated": [], "deleted": []}
    return ImportJob.objects.create(
        user=User.objects.get(username="editor"),
        status=ImportJob.Status.SUCCEEDED,
        phase="done",
        progress=100,
        summary={
            "mode": "replace",
            "changed": True,
            "consumers": counts,
            "layers": counts,
            "items": {"created": 60, "updated": 1, "deleted": 2, "unchanged": 0},
            "profiles": {**counts, "updated": 1},
            "rules": counts,
            "names": {
                "consumers": names,
                "layers": names,
                "items": {
                    "created": [f"kb/docs/{n}.md" for n in range(50)],
                    "updated": ["kb/faq.md"],
                    "deleted": ["kb/old.md", "kb/older.md"],
                },
                "profiles": {**names, "updated": ["support-answer"]},
                "rules": names,
            },
        },
    )


# Not pages: a redirect, a file download, fragments and POST-only actions.
NOT_PAGES = {
    "home",
    "favicon",
    "workspace-download",
    "profile-preview",
    "profile-preview-rows",
    "profile-preview-cut",
    "profile-preview-handoff",
    "profile-preview-sweep",
    "profile-save",
    "profile-discard",
    "profile-scenario-load",
    "profile-scenario-save",
    "token-create",
    "token-revoke",
    "key-create",
    "key-revoke",
    "profile-save-impact",
    "profile-propose",
    "profile-promote",
    "webhook-test",
    # The team's actions (their pages and states: tests/browser/test_team.py).
    "team-invite",
    "team-invitation-revoke",
    "team-member-role",
    # Reviews: the confirmation steps answer a POST (checked in tests/browser/test_reviews.py);
    # the rest are actions of a change request's page.
    "profile-propose-confirm",
    "profile-promote-confirm",
    "change-request-comment",
    "change-request-review",
    "change-request-reviewers",
    "change-request-schedule",
    "change-request-update-changes",
}


def a_webhook() -> Webhook:
    """Return a webhook with a delivered and a failed delivery in its log, made once."""
    webhook, made = Webhook.objects.get_or_create(
        url="https://hooks.example.com/context-studio",
        defaults={"events": ["change_request.opened"], "secret": "a-secret-of-some-length"},
    )
    if made:
        WebhookDelivery.objects.create(
            webhook=webhook, event="ping", status="delivered", attempts=1, response_status=204
        )
        WebhookDelivery.objects.create(
            webhook=webhook,
            event="change_request.opened",
            status="failed",
            attempts=5,
            response_status=503,
            error="HTTP 503 Service Unavailable: try later",
        )
    return webhook


def a_change_request(profile):
    """Return an open change request of the profile (with its impact), made once."""
    existing = ChangeRequest.objects.filter(profile_key=profile.key).first()
    if existing is not None:
        return existing
    return change_request_create(
        profile_key=profile.key,
        title="Fewer KB articles",
        changes={"budget": 900, "rules": {"kb": {"maxItems": 1}}},
        user=User.objects.get(username="editor"),
    )


ADMIN_PAGES = {
    "admin index (recent actions)": lambda ws: "/admin/",
    "admin profile change (rules inline)": lambda ws: f"/admin/profiles/profile/{ws.pk}/change/",
    "admin profile resolve": lambda ws: f"/admin/profiles/profile/{ws.pk}/resolve/",
}


def blocking_violations(page) -> list[str]:
    """Return the serious and critical axe violations of the page, one line per rule."""
    results = AXE.run(page).response
    return [
        f"{violation['id']} ({violation['impact']}, {len(violation['nodes'])} nodes): "
        + "; ".join(str(node["target"]) for node in violation["nodes"][:5])
        for violation in results["violations"]
        if violation["impact"] in BLOCKING
    ]


def check(page, name: str, found: dict) -> None:
    page.wait_for_load_state("networkidle")
    violations = blocking_violations(page)
    if violations:
        found[name] = violations
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"axe-{name.replace(' ', '-')}.png"), full_page=True)


def report(found: dict) -> str:
    return "\n".join(f"{name}:\n  " + "\n  ".join(lines) for name, lines in found.items())


def studio_url_names() -> set[str]:
    from profiles.studio import urls

    return {
        pattern.name
        for pattern in get_resolver(urls).url_patterns
        if isinstance(pattern, URLPattern) and pattern.name
    }


def test_axe_pages__every_studio_page__listed():
    assert studio_url_names() - NOT_PAGES == set(STUDIO_PAGES)


def test_axe__signed_out_pages__no_serious_or_critical_violation(page, live_server, workspace):
    found = {}
    for name, path in (("home", "/"), ("login", "/accounts/login/")):
        page.goto(live_server.url + path)
        check(page, name, found)
    assert not found, report(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__every_studio_page__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    for name, path in STUDIO_PAGES.items():
        page.goto(live_server.url + path(workspace))
        check(page, f"{name} ({scheme})", found)
    assert not found, report(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__change_request_lists_and_page_states__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    # Issue 38: the Closed list filtered by profile and title, and a request's page read
    # top-down with an impact row blocked before and after (BLOCKED → BLOCKED).
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    Scenario.objects.create(
        name="No customer given",
        profile=workspace,
        input={"message": "card refund"},
        now="2026-01-15T12:00:00Z",
    )
    editor = User.objects.get(username="editor")
    closed = change_request_create(
        profile_key=workspace.key, title="Bigger budget", changes={"budget": 2000}, user=editor
    )
    change_request_close(pk=closed.pk, user=editor)
    opened = a_change_request(workspace)
    found = {}

    page.goto(f"{live_server.url}/changes/?tab=closed&profile={workspace.key}&q=budget")
    expect(page.locator(f'tr[data-change-request="{closed.pk}"]')).to_have_count(1)
    check(page, f"change requests, closed, filtered ({scheme})", found)
    page.goto(f"{live_server.url}/changes/{opened.pk}/")
    expect(page.locator(".impact-status").first).to_contain_text("→")
    check(page, f"change request, impact before → after ({scheme})", found)

    assert not found, report(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__new_layer_form_on_the_demo__joining_profiles_listed__no_serious_or_critical(
    page, live_server, demo_started, scheme
):
    # Issue 38 item 16: the demo starts protected; the form names the profiles a new layer
    # joins, production's protected, and, once refused, offers the change request.
    page.emulate_media(color_scheme=scheme)
    sign_in(page, live_server, "demo", demo_started["demo"])
    found = {}

    page.goto(f"{live_server.url}/layers/_new/")
    expect(page.locator("section.joiners")).to_contain_text("protected, 1 approval")
    check(page, f"new layer form, joining profiles ({scheme})", found)
    page.get_by_label("Name").fill("Holiday hours")
    page.get_by_role("button", name="Create layer").click()
    expect(page.locator("fieldset.proposal")).to_contain_text("support-answer")
    check(page, f"new layer refused, proposal offered ({scheme})", found)

    assert not found, report(found)


def test_axe__customised_admin_pages__no_serious_or_critical_violation(
    signed_in, live_server, workspace
):
    page = signed_in
    found = {}
    for name, path in ADMIN_PAGES.items():
        page.goto(live_server.url + path(workspace))
        check(page, name, found)
    assert not found, report(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__import_job_page_naming_changes__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    page.goto(f"{live_server.url}/workspace/imports/{succeeded_import().pk}/")
    expect(page.get_by_text("and 10 more")).to_have_count(1)

    check(page, f"import job, succeeded ({scheme})", found)

    assert not found, report(found)


def test_axe__compare_two_profiles__no_violation_of_any_impact(signed_in, live_server, workspace):
    # The comparison's tables: the header of the row names (a minor rule) counts too.
    page = signed_in
    page.goto(f"{live_server.url}/profiles/_compare/?a=support-answer&b=qa-review")
    page.wait_for_load_state("networkidle")
    expect(page.get_by_role("table", name="Status and budget")).to_have_count(1)

    violations = AXE.run(page).response["violations"]

    assert not violations, [(v["id"], v["impact"], len(v["nodes"])) for v in violations]

    # Across formats (markdown and xml): the notice, the admitted items, the text diff opened
    expect(page.locator("[data-formats-differ]")).to_have_count(1)
    page.get_by_text("Show the rendered text diff anyway").click()
    expect(page.locator("#text-diff")).to_be_visible()

    violations = AXE.run(page).response["violations"]

    assert not violations, [(v["id"], v["impact"], len(v["nodes"])) for v in violations]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_api_keys_page__create_error_shown_once_revoke__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/tokens/")
    found = {}

    # An empty name and no scope: errors beside their fields
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#id_name_error")).to_have_text("This field is required.")
    expect(page.locator("#id_scopes_error")).to_have_text("This field is required.")
    check(page, f"API keys, errors ({scheme})", found)

    # A resolve key: shown this once, then listed by its prefix
    page.get_by_label("Name").fill("support bot")
    page.get_by_label("resolve: resolve, expand and preview only").check()
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").text_content()
    assert key.startswith("ctx_")
    expect(page.locator("#key-list")).to_contain_text("support bot")
    check(page, f"API keys, a new key ({scheme})", found)
    page.goto(f"{live_server.url}/tokens/")
    expect(page.locator("#new-key")).to_have_count(0)
    assert key not in page.content()

    # Revoked after the confirmation
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke support bot").click()
    expect(page.locator("#key-list")).to_contain_text("No scoped keys yet.")

    assert not found, report(found)


def expand_everything(page) -> None:
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__editor_states__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    editor = f"{live_server.url}/profiles/{workspace.key}/"
    found = {}

    # Every section expanded: rule details, what-if availability, items, trimmed units.
    page.goto(editor)
    expand_everything(page)
    check(page, f"editor, all sections expanded ({scheme})", found)

    # Invalid input: a field error beside the control and the "not previewed" banner.
    page.get_by_label("customer maxTokens", exact=True).fill("0")
    expect(page.locator('[data-error-for="customer maxTokens"]')).not_to_be_empty()
    expand_everything(page)
    check(page, f"editor, invalid input ({scheme})", found)

    # Blocked: the required customer layer loses its input; an edit makes "what changed" show.
    page.goto(editor)
    page.get_by_label("customer_id", exact=True).fill("")
    page.get_by_label("kb participation", exact=True).select_option("exclude")
    expect(page.locator("#preview-status")).to_have_text("BLOCKED")
    expand_everything(page)
    check(page, f"editor, blocked with unsaved edits ({scheme})", found)

    assert not found, report(found)


def test_editor__skip_link__message_box_five_keys_from_the_top(signed_in, live_server, workspace):
    page = signed_in
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    presses = 0
    for _ in range(3):
        page.keyboard.press("Tab")
        presses += 1
    expect(page.get_by_role("link", name="Skip to sample input")).to_be_focused()

    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    presses += 2

    expect(page.get_by_label("message", exact=True)).to_be_focused()
    assert presses == 5


def test_editor__landmarks__rules_sample_input_and_preview_are_regions(
    signed_in, live_server, workspace
):
    page = signed_in
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")

    for name in ("Rules", "Sample input", "Live preview", "Recent changes"):
        expect(page.get_by_role("region", name=name, exact=True)).to_have_count(1)
    expect(page.get_by_role("form", name="Profile editor")).to_have_count(1)
    expect(page.get_by_role("navigation", name="Main")).to_have_count(1)
    expect(page.get_by_role("main")).to_have_count(1)


def test_editor__ctrl_s__saves_the_rules(signed_in, live_server, workspace):
    page = signed_in
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    page.get_by_label("budget", exact=True).fill("650")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")

    page.keyboard.press("Control+s")
    # Save first shows the impact on the saved scenarios (safe change); then it saves.
    expect(page.locator("#save-impact")).to_contain_text("This change alters")
    page.get_by_role("button", name="Confirm save").click()

    expect(page.locator(".messages")).to_contain_text(f"Saved {workspace.key}")
    expect(page.locator("#unsaved-badge")).to_have_text("All changes saved")
    assert Profile.objects.get(pk=workspace.pk).budget == 650


# Each id an element's aria-describedby names, with the ids that are on no element of the page
# (axe passes a reference list with at least one id found, so it misses a broken one).
MISSING_DESCRIPTIONS = """
() => Array.from(document.querySelectorAll("[aria-describedby]")).flatMap((element) => {
  const ids = element.getAttribute("aria-describedby").trim().split(/\\s+/);
  return ids.filter((id) => !document.getElementById(id)).map(
    (id) => `${element.tagName.toLowerCase()}#${element.id || "?"} -> ${id}`
  );
})
"""
IDS_WITH_SPACES = """
() => Array.from(document.querySelectorAll("[id]")).map((element) => element.id)
  .filter((id) => /\\s/.test(id))
"""


def test_aria_describedby__every_studio_page__names_elements_that_exist(
    signed_in, live_server, workspace
):
    page = signed_in
    found = {}
    for name, path in STUDIO_PAGES.items():
        page.goto(live_server.url + path(workspace))
        page.wait_for_load_state("networkidle")
        broken = page.evaluate(MISSING_DESCRIPTIONS) + page.evaluate(IDS_WITH_SPACES)
        if broken:
            found[name] = broken
    assert not found, report(found)


def test_aria_describedby__currentness_field__its_error_and_its_warning(
    signed_in, live_server, workspace
):
    page = signed_in
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    field = page.get_by_label("kb currentness.field", exact=True)

    described_by = field.get_attribute("aria-describedby").split()

    assert described_by == ["err-kb-currentness-field", "warn-kb-currentness-field"]
    expect(page.locator("#err-kb-currentness-field")).to_have_attribute(
        "data-error-for", "kb currentness.field"
    )
    expect(page.locator("#warn-kb-currentness-field")).to_have_count(1)
