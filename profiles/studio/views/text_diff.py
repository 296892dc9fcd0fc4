"""The rendered text diff on the studio's History page (``?scenario=`` beside ``from`` and
``to``): which scenarios it offers, and the diff of the chosen one, throttled as two
resolutions (``profiles.safechange.text_diff``)."""

from profiles.models import ProfileVersion
from profiles.safechange.text_diff import ScenarioNotFound, version_text_diff
from profiles.studio.scenario_links import scenario_from_parameter
from profiles.workspace.selectors import scenario_list_of_profiles
from profiles.workspace.throttling import user_throttle_wait


def history_text_diff(request, *, key: str, left: ProfileVersion, right: ProfileVersion) -> dict:
    """Return the History page's context of the text diff: ``scenarios`` to choose from, the
    ``chosen_scenario`` (named by id or by name: ``scenario_links``), and ``text`` (a
    TextDiff) or ``text_error`` (why there is none; ``text_status`` 400 for a scenario the
    profile does not have)."""
    scenarios = list(scenario_list_of_profiles(profile_keys=[key]))
    value = request.GET.get("scenario", "")
    chosen = scenario_from_parameter(scenarios, value)
    context = {"scenarios": scenarios, "chosen_scenario": chosen, "text": None, "text_error": ""}
    if not value:
        return context
    wait = user_throttle_wait(scope="resolve", user=request.user, cost=2)
    if wait is not None:
        context["text_error"] = f"Too many resolutions just now: try again in {wait} seconds."
        return context
    try:
        context["text"] = version_text_diff(
            profile_key=key,
            # One the profile does not have is named as given: the service says so.
            scenario_name=chosen.name if chosen is not None else value,
            before=left.document,
            after=right.document,
            before_number=left.number,
            after_number=right.number,
        )
    except ScenarioNotFound as exc:
        context["text_error"] = f"No rendered text: {exc}."
        context["text_status"] = 400  # the page answers as to a bad parameter
    return context
