"""Issue 38: the studio's pages fit the screen at 800, 1024, 1400 and 1920 px: nothing scrolls
sideways, the top bar's links stay on screen, the tables fit at desktop widths, and list
pages use the screen's width; axe finds nothing serious where the layout wraps and scrolls."""

import pytest

from profiles.models import Profile
from tests.browser.test_accessibility import STUDIO_PAGES, blocking_violations, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (800, 1024, 1400, 1920)
DESKTOP = 1400  # from here up, a table fits its box without scrolling sideways

# What a person would see cut off or pushed sideways, measured in the page.
LAYOUT_PROBLEMS = """
(desktop) => {
  const root = document.documentElement;
  const width = root.clientWidth;
  const problems = [];
  if (root.scrollWidth > width) {
    problems.push(`the page scrolls sideways (${root.scrollWidth} > ${width} px)`);
  }
  for (const element of document.querySelectorAll(".topbar a, .topbar button")) {
    const box = element.getBoundingClientRect();
    if (box.right > width + 0.5 || box.left < -0.5 || box.width === 0) {
      const where = `${Math.round(box.left)}–${Math.round(box.right)} px`;
      problems.push(`top bar: "${element.textContent.trim()}" off screen (${where})`);
    }
  }
  if (desktop) {
    for (const box of document.querySelectorAll(".table-scroll")) {
      if (box.scrollWidth > box.clientWidth + 1) {
        const table = box.querySelector("table");
        const name = table ? `table.${table.className}` : "a box";
        problems.push(`${name} cut (${box.scrollWidth} > ${box.clientWidth} px)`);
      }
    }
  }
  return problems;
}
"""


def test_layout__every_studio_page_at_four_widths__nothing_off_screen_or_cut(
    signed_in, live_server, workspace
):
    page = signed_in
    found = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in STUDIO_PAGES.items():
            page.goto(live_server.url + path(workspace))
            page.wait_for_load_state("networkidle")
            problems = page.evaluate(LAYOUT_PROBLEMS, width >= DESKTOP)
            if problems:
                found[f"{name} at {width} px"] = problems
    assert not found, "\n".join(f"{name}: {'; '.join(lines)}" for name, lines in found.items())


@pytest.mark.parametrize("width", [800, 1024])
def test_axe__every_studio_page_wrapped_and_scrolling__no_serious_or_critical_violation(
    signed_in, live_server, workspace, width
):
    # Where the top bar wraps and tables scroll sideways (a scrolling box must take focus).
    page = signed_in
    page.set_viewport_size({"width": width, "height": 900})
    found = {}
    for name, path in STUDIO_PAGES.items():
        page.goto(live_server.url + path(workspace))
        page.wait_for_load_state("networkidle")
        violations = blocking_violations(page)
        if violations:
            found[f"{name} at {width} px"] = violations
    assert not found, report(found)


def test_profile_list__long_name_at_desktop_widths__the_list_uses_the_screen(
    signed_in, live_server, workspace
):
    page = signed_in
    Profile.objects.filter(pk=workspace.pk).update(
        name="Support answer for enterprise card refunds"
    )
    lines = {}
    for width in (1400, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/profiles/")
        results = page.locator("#profile-results .table-scroll")
        name = page.locator('tr[data-profile="support-answer"] th a')

        # The screen's width up to main's 1600 px, not a ~1150 px column.
        assert results.bounding_box()["width"] >= min(width, 1600) - 100
        lines[width] = name.evaluate("(link) => link.getClientRects().length")

    assert lines[1400] <= 2 and lines[1920] == 1, lines  # three lines at 1400 px before
