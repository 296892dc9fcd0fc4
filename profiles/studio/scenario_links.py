"""How a studio URL names a saved scenario (``?scenario=``): by its id, as every link the
studio writes does (the editor's shareable link, Compare, History, a change request's
preview); a scenario's name is accepted too, so that links written by hand, or by History
before it used ids, keep working. Scenario names are unique, and an id never changes when a
scenario is renamed."""

from collections.abc import Iterable

from profiles.models import Scenario


def scenario_parameter(scenario: Scenario) -> str:
    """Return the value of ``?scenario=`` that names ``scenario``: its id."""
    return str(scenario.pk)


def scenario_from_parameter(scenarios: Iterable[Scenario], value: str | None) -> Scenario | None:
    """Return the scenario of ``scenarios`` that ``value`` names, by id, else by name (an id
    wins over a name made of digits); None when it names none of them."""
    if not value:
        return None
    scenarios = list(scenarios)
    by_id = next(
        (scenario for scenario in scenarios if scenario_parameter(scenario) == value), None
    )
    return by_id or next((scenario for scenario in scenarios if scenario.name == value), None)
