"""The editor's draft: what its forms hold, how it is previewed, and how it is remembered.

A ``Draft`` is the rules formset (one form per layer), the budget and the sample input. It
resolves through ``services.profile_resolve`` with ``rule_overrides`` (never writing) and, for
the page, as a SPEC §7.1 summary: the preview costs in proportion to what it shows. The
engine's validation issues go back onto the fields with ``add_error``. Presenting the
resolution in words is ``profiles.studio.presenters``'s job.
"""

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from profiles.authoring.rules import RULE_FORM_FIELDS
from profiles.authoring.scenarios import scenario_save as scenario_save_service
from profiles.models import Profile, Scenario
from profiles.resolution.services import (
    profile_layer_ranking,
    profile_resolve,
    profile_resolve_with_reference_counts,
    workspace_resolve,
)
from profiles.studio import presenters
from profiles.studio.forms.editor import (
    BudgetForm,
    RulesFormSet,
    SampleInputForm,
    availability_field_name,
    input_field_name,
)
from profiles.versioning.versions import version_message_error
from profiles.workspace import cache
from profiles.workspace.mappers import canonical_string
from resolver import RequestError, WorkspaceError

SUMMARY = "summary"


# --- the workspace as the editor reads it -------------------------------------------------------


def input_keys(document: dict) -> list[str]:
    """Return the input keys the layers use (requiresInput, then itemFilter), first-seen order."""
    keys: list[str] = []
    for layer in document.get("layers") or []:
        for key in layer.get("requiresInput") or []:
            if key not in keys and key != "message":
                keys.append(key)
        for key in (layer.get("itemFilter") or {}).values():
            if key not in keys and key != "message":
                keys.append(key)
    return keys


def profile_document(document: dict, key: str) -> dict:
    return next(entry for entry in document.get("profiles") or [] if entry["key"] == key)


# --- the sample input: scenarios, the session and the page's URL ----------------------------------


def now_for_form(value: str | None) -> str:
    """Return an ISO date/datetime as the UTC ``datetime-local`` text of the form."""
    if not value:
        return ""
    try:
        parsed = dt.datetime.fromisoformat(value.replace(" ", "T").replace("Z", "+00:00"))
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):  # not a datetime, or UTC falls outside years 1-9999
        return value
    return parsed.strftime("%Y-%m-%dT%H:%M:%S" if parsed.second else "%Y-%m-%dT%H:%M")


def sample_values_from_request(request: dict) -> dict[str, str]:
    """Return the sample form's values of a SPEC §3 request (a scenario's)."""
    values = {
        key: canonical_string(value)
        for key, value in (request.get("input") or {}).items()
        if value is not None
    }
    sample = {"message": values.pop("message", ""), "now": now_for_form(request.get("now"))}
    sample["format"] = request.get("format") or ""
    sample |= {input_field_name(key): value for key, value in values.items()}
    sample |= {
        availability_field_name(key): state
        for key, state in (request.get("availability") or {}).items()
    }
    return sample


def sample_values_from_scenario(scenario: Scenario | None) -> dict[str, str]:
    if scenario is None:
        return {"now": now_for_form(dt.datetime.now(dt.UTC).isoformat())}
    return sample_values_from_request(scenario.as_request())


SAMPLE_PARAMETERS = ("message", "now", "format")


def sample_values_from_query(query: QueryDict) -> dict[str, str] | None:
    """Return the sample values a shared link carries, or None when it carries none."""
    values = {
        name: query[name]
        for name in query
        if name in SAMPLE_PARAMETERS or name.startswith(("input:", "avail:"))
    }
    return values or None


def sample_form(values: dict | QueryDict | None, document: dict) -> SampleInputForm:
    data = QueryDict(mutable=True)
    for name, value in (values or {}).items():
        data[name] = value
    return SampleInputForm(data, input_keys=input_keys(document), layers=document["layers"])


def sample_query(form: SampleInputForm) -> str:
    """Return the query string that reopens the editor on this sample input (a shared link)."""
    values = {name: value for name, value in form.values().items() if value}
    return urlencode(values)


def scenario_matches(scenario: Scenario | None, form: SampleInputForm) -> bool:
    """Return whether the sample input is still exactly the scenario's."""
    if scenario is None:
        return False
    request = scenario.as_request()
    request.pop("profile", None)
    if request.get("now"):
        request["now"] = now_for_form(request["now"])
    mine = form.as_request()
    if mine.get("now"):
        mine["now"] = now_for_form(mine["now"])
    wanted = {
        **request,
        "input": {k: canonical_string(v) for k, v in (request.get("input") or {}).items()},
    }
    return mine == {key: value for key, value in wanted.items() if value}


# --- the draft ----------------------------------------------------------------------------------


@dataclass
class Draft:
    """What the editor form holds: a rule form per layer, the budget and the sample input."""

    profile_key: str
    profile_index: int  # in the workspace document: issue paths name it
    rules: RulesFormSet
    budget: BudgetForm
    sample: SampleInputForm
    saved_budget: int
    general_errors: list[str] = field(default_factory=list)
    notice: str = ""  # what an action just did ("Loaded scenario …")
    scenario_error: str = ""  # why "Save as scenario" did not save
    save_message: str = ""  # why the author saves: the new version's message (History)
    save_message_error: str = ""  # why Save refused the message

    def save_message_is_valid(self) -> bool:
        """Return whether the save message can be the version's message (else say why)."""
        problem = version_message_error(self.save_message)
        self.save_message_error = f"Save message: {problem}." if problem else ""
        return problem is None

    def is_valid(self) -> bool:
        """Return whether every field reads (types and choices); the engine judges the rest."""
        valid = self.rules.is_valid()
        valid = self.budget.is_valid() and valid
        return self.sample.is_valid() and valid

    def rule_overrides(self) -> dict:
        return self.rules.rule_overrides()

    def budget_value(self) -> int | None:
        budget = self.budget.budget_value()
        return self.saved_budget if budget is None and not self.budget.errors else budget

    def is_dirty(self, document: dict) -> bool:
        """Return whether the draft differs from the saved profile (False while invalid)."""
        if not self.is_valid():
            return True
        entry = profile_document(document, self.profile_key)
        saved_rules = {key: rule or {} for key, rule in (entry.get("rules") or {}).items()}
        return self.rules.rules_document() != saved_rules or self.budget_value() != entry["budget"]

    def add_issues(self, issues) -> None:
        """Put each of the engine's issues on the field it names (else in the general list).

        Issue paths are the document's (``profiles[3].rules.kb.maxItems``).
        """
        prefix = f"profiles[{self.profile_index}]."
        for issue in issues:
            path = getattr(issue, "path", "") or ""
            tail = path[len(prefix) :] if path.startswith(prefix) else None
            if tail == "budget":
                self.budget.add_error("budget", issue.message)
                continue
            if tail is not None and tail.startswith("rules."):
                layer_key, _, rest = tail[len("rules.") :].partition(".")
                form = self.rules.by_layer.get(layer_key)
                name = _rule_field_of(rest)
                if form is not None and name is not None:
                    if name not in form.errors:
                        form.add_error(name, issue.message)
                    continue
            self.general_errors.append(str(issue))

    def add_request_error(self, exc: RequestError) -> None:
        name = self.sample.field_for_request_path(exc.path)
        if name is not None:
            self.sample.add_error(name, exc.message)
        else:
            self.general_errors.append(f"Sample input — {exc.path or 'request'}: {exc.message}")

    def field_errors(self) -> dict[str, str]:
        """Return every field error by its slot on the page ("kb maxItems", "budget"…)."""
        errors = self.rules.field_errors()
        if self.budget.errors.get("budget"):
            errors["budget"] = self.budget.errors["budget"][0]
        for name, messages in self.sample.errors.items():
            errors[f"sample {name}"] = messages[0]
        return errors


def _rule_field_of(tail: str) -> str | None:
    tail = tail.split("[", 1)[0]
    if tail == "currentness":
        return "currentness.maxAgeDays"
    return tail if tail in RULE_FORM_FIELDS else None


def draft_from_saved(document: dict, profile_key: str, sample_values: dict, *, etag: str) -> Draft:
    """Return the draft equal to the saved profile, on this sample input."""
    data = QueryDict(mutable=True)
    for name, value in sample_values.items():
        data[name] = value
    data["etag"] = etag
    return draft_from_post(data, document, profile_key)


def draft_from_post(data: QueryDict, document: dict, profile_key: str) -> Draft:
    """Return the draft of a posted editor form (layers it does not name keep their rule)."""
    index, entry = next(
        (index, entry)
        for index, entry in enumerate(document["profiles"])
        if entry["key"] == profile_key
    )
    rules = RulesFormSet(data, layers=document["layers"], saved_rules=entry.get("rules") or {})
    if "budget" not in data:
        data = data.copy()
        data["budget"] = str(entry["budget"])
    budget = BudgetForm(data)
    budget.fields["budget"].widget.attrs["data-saved"] = str(entry["budget"])
    return Draft(
        profile_key=profile_key,
        profile_index=index,
        rules=rules,
        budget=budget,
        sample=SampleInputForm(data, input_keys=input_keys(document), layers=document["layers"]),
        saved_budget=entry["budget"],
        save_message=data.get("save_message", "").strip(),
    )


# --- the preview --------------------------------------------------------------------------------


def resolve_draft(draft: Draft, cached, *, detail: str = SUMMARY) -> dict | None:
    """Resolve the draft (never writing); on an error, put it on its field and return None."""
    return _draft_resolved(profile_resolve, draft, cached, detail)


def resolve_draft_with_reference_counts(draft: Draft, cached) -> tuple[dict, dict] | None:
    """Resolve the draft as a summary, as ``resolve_draft`` does; return the resolution and
    each layer's references counted by reason (the timeline's), or None."""
    return _draft_resolved(profile_resolve_with_reference_counts, draft, cached, SUMMARY)


def _draft_resolved(resolve, draft: Draft, cached, detail: str):
    if not draft.is_valid():
        return None
    request = {**draft.sample.as_request(), "detail": detail}
    try:
        return resolve(
            profile=draft.profile_key,
            request=request,
            rule_overrides=draft.rule_overrides(),
            budget_override=draft.budget_value(),
            compiled=cached.compiled,
        )
    except WorkspaceError as exc:
        draft.add_issues(exc.issues or [exc])
    except RequestError as exc:
        draft.add_request_error(exc)
    return None


def rank_draft(draft: Draft, cached, layer_key: str, *, paths=None) -> list[dict]:
    """Return how one layer of the draft ranked its retrieved items (rank, score, matched
    terms of every unit and overflow reference, or of the items at ``paths``); empty when
    the draft does not resolve."""
    if not draft.is_valid():
        return []
    try:
        return profile_layer_ranking(
            profile=draft.profile_key,
            request=draft.sample.as_request(),
            layer_key=layer_key,
            paths=paths,
            rule_overrides=draft.rule_overrides(),
            budget_override=draft.budget_value(),
            compiled=cached.compiled,
        )
    except (WorkspaceError, RequestError):
        return []


def preview_context(profile: Profile, draft: Draft, cached) -> dict:
    """Resolve the draft as a summary and return everything the preview shows."""
    resolved = resolve_draft_with_reference_counts(draft, cached)
    resolution, reference_counts = resolved if resolved is not None else (None, {})
    context: dict[str, Any] = {"draft": draft, "profile": profile, "resolution": resolution}
    context["dirty"] = draft.is_dirty(cached.document)
    if resolution is not None:
        context["status_messages"] = presenters.status_messages(resolution)
        context["meter"] = presenters.budget_meter(resolution)
        context["timeline"] = presenters.layer_timeline(resolution, reference_counts)
        context["output_lines"] = presenters.output_lines(resolution)
        context["reference_summary"] = presenters.reference_summary(resolution)
        context["exclusion_summary"] = presenters.exclusion_summary(resolution)
        if context["dirty"]:
            saved = saved_resolution(profile.key, draft.sample.as_request(), cached)
            context["changes"] = presenters.what_changed(saved, resolution)
    context["field_errors"] = json.dumps(draft.field_errors())
    return context


_saved_cache: dict[tuple, dict] = {}
_SAVED_CACHE_SIZE = 64


def saved_resolution(profile_key: str, request: dict, cached=None, *, detail=SUMMARY) -> dict:
    """Return the saved profile's resolution of a request, reused while nothing is written.

    Typing in the editor previews many drafts against the same sample input; the saved
    side of "what changed" is the same each time. Keyed by the workspace version token, so
    any write (by anyone) invalidates it; requests without a fixed ``now`` are not cached.
    """
    cached = cached or cache.workspace_get()
    request = {**request, "profile": profile_key, "detail": detail}
    key = (cached.token, json.dumps(request, sort_keys=True, default=str))
    cacheable = bool(cached.token and request.get("now"))
    resolution = _saved_cache.get(key) if cacheable else None
    if resolution is None:
        resolution = workspace_resolve(request=request, compiled=cached.compiled)
        if cacheable:
            if len(_saved_cache) >= _SAVED_CACHE_SIZE:
                _saved_cache.clear()
            _saved_cache[key] = resolution
    return resolution


# --- item titles ----------------------------------------------------------------------------------

_titles_cache: dict[tuple[str | None, str], dict[str, str]] = {}


def item_titles(layer_key: str, paths, cached=None) -> dict[str, str]:
    """Return the titles of some items of a layer (the layer's lookup is built once per version)."""
    cached = cached or cache.workspace_get()
    key = (cached.token, layer_key)
    lookup = _titles_cache.get(key) if cached.token else None
    if lookup is None:
        layer = next((e for e in cached.document["layers"] if e["key"] == layer_key), {})
        lookup = {
            item["path"]: " ".join(str(item.get("title") or "").split())
            for item in layer.get("items") or []
        }
        if len(_titles_cache) > 32:
            _titles_cache.clear()
        _titles_cache[key] = lookup
    return {path: lookup.get(path, "") for path in paths}


# --- scenarios ------------------------------------------------------------------------------------


def scenario_save(
    *, profile: Profile, name: str, sample: SampleInputForm, user=None, origin=None
) -> Scenario:
    """Save the sample input as a named scenario of the profile (validated by the service).

    The name of another profile's scenario is refused (``ScenarioNameTaken``), never moved.
    """
    return scenario_save_service(
        profile=profile, name=name, request=sample.as_request(), user=user, origin=origin
    )
