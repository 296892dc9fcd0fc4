"""View-side orchestration of the studio: the editor's draft, explanations and the diff.

Nothing here queries the engine's internals: the draft is built from form data into the
``rule_overrides`` / request shapes of ``services.profile_resolve``, and everything shown in
the preview is read from the SPEC §7 resolution JSON. Reason codes are explained in plain
sentences in one table (``REASON_SENTENCES``) so every page words them the same way.
"""

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import format_html

from profiles import cache
from profiles.forms import (
    MAIN_RULE_FIELDS,
    NUMERIC_RULE_FIELDS,
    RULE_CHOICES,
    RULE_DEFAULT_HINTS,
    RULE_FIELD_BY_MODEL,
    RULE_FORM_FIELDS,
)
from profiles.mappers import canonical_string
from profiles.models import Profile, Scenario
from profiles.selectors import profile_history_list
from profiles.services import scenario_save as scenario_save_service

# --- reason codes in words ------------------------------------------------------------------

# Every state and reason code of SPEC §4, as a sentence fragment a newcomer can read.
# ``{arg}`` is the part after the colon of INPUT_NOT_PROVIDED:<key> / MATCHED:<fields>.
REASON_SENTENCES: dict[str, str] = {
    # Available (4.1)
    "MATERIAL_PRESENT": "the layer has material to offer",
    "EMPTY": "the layer has no items",
    "UNAVAILABLE": "the layer is marked unavailable",
    "UNKNOWN": "whether the layer is available is unknown",
    # Applicable (4.2)
    "APPLICABLE": "the layer applies to this request",
    "NOT_APPLICABLE": "the layer does not apply to this request",
    "SKIPPED": "not evaluated: an earlier stage already decided",
    "IN_SCOPE": "the layer's scope includes this consumer and objective",
    "MATCHED": "items matched the request on {arg}",
    "OBJECTIVE_OUT_OF_SCOPE": "the layer is not meant for this profile's objective",
    "CONSUMER_OUT_OF_SCOPE": "the layer is not meant for this profile's consumer",
    "INPUT_NOT_PROVIDED": "input {arg} was not provided",
    "NO_MATCHING_MATERIAL": "no item matches the request's filter values",
    # Currentness (4.4)
    "ASSESSED": "item dates were checked against the currentness limit",
    "NOT_ASSESSED": "the rule sets no currentness limit",
    "STALE": "older than the currentness limit",
    # Decision (4.3)
    "EXCLUDED_BY_PROFILE": "the profile excludes this layer",
    "LAYER_UNAVAILABLE": "the layer is unavailable",
    "AVAILABILITY_UNKNOWN": "the layer's availability is unknown, so it is left out",
    "LAYER_EMPTY": "the layer has no items",
    "APPLICABILITY_UNKNOWN": "whether the layer applies cannot be told",
    "STALE_EXCLUDED": "every candidate was excluded as not current",
    "INCLUDED_BY_PROFILE": "the profile includes this layer",
    "INCLUDED_APPLICABLE": "the layer applies and the profile lets it in",
    # References (4.5, 4.7)
    "ON_DEMAND": "offered on request instead of inline",
    "BEYOND_MAX_ITEMS": "beyond the rule's maxItems",
    "LAYER_TOKEN_LIMIT": "over the layer's maxTokens",
    "NOT_RETRIEVED": "not retrieved: no term of the message matches it",
    "BUDGET_TRIMMED": "trimmed: the budget ran out",
    # Status (4.8)
    "RESOLVED": "every required layer is fully rendered",
    "RENDERING_INCOMPLETE": "a required layer was only partly rendered within the budget",
    "BLOCKED": "a required layer is missing; no output is produced",
    "MISSING_REQUIRED_CONTEXT": "the required layer is missing",
    "REQUIRED_CONTEXT_OVER_BUDGET": "none of the required layer's content fits the budget",
    "NO_CONTENT": "the layer was selected but has nothing to render",
    # Resolution currentness
    "CURRENT": "every admitted item is current",
    "NOT_CURRENT": "some admitted item is stale (kept with a warning)",
}

DECISION_KINDS = {"inline": "inline", "on-demand": "on request", "omitted": "omitted"}


def reason_code(code: str | None) -> tuple[str, str]:
    """Split ``INPUT_NOT_PROVIDED:key`` into (``INPUT_NOT_PROVIDED``, ``key``)."""
    if not code:
        return "", ""
    head, _, arg = code.partition(":")
    return head, arg


@functools.lru_cache(maxsize=512)
def explain(code: str | None) -> str:
    """Return the sentence of a reason code, with its argument in <code> (escaped)."""
    head, arg = reason_code(code)
    if not head:
        return ""
    sentence = REASON_SENTENCES.get(head)
    if sentence is None:
        return format_html("{}", code)
    text = sentence[0].upper() + sentence[1:] + "."
    if "{arg}" not in text:
        return format_html("{}", text)
    before, after = text.split("{arg}", 1)
    return format_html("{}<code>{}</code>{}", before, arg.replace(",", ", "), after)


@functools.lru_cache(maxsize=512)
def explain_fragment(code: str | None) -> str:
    """Return the lower-case sentence fragment of a code (for "…: <fragment>")."""
    head, arg = reason_code(code)
    sentence = REASON_SENTENCES.get(head, code or "")
    if "{arg}" not in sentence:
        return format_html("{}", sentence)
    before, after = sentence.split("{arg}", 1)
    return format_html("{}<code>{}</code>{}", before, arg.replace(",", ", "), after)


# --- the draft: form data -> rule overrides, budget and request ------------------------------

CHOICE_FIELDS = RULE_CHOICES
DEFAULT_HINTS = RULE_DEFAULT_HINTS
NUMERIC_FIELDS = NUMERIC_RULE_FIELDS
_INTEGER = re.compile(r"^[+-]?\d+$")


def rule_field_name(layer_key: str, field_name: str) -> str:
    return f"rule-{layer_key}-{field_name}"


def _integer(text: str) -> Any:
    text = text.strip()
    if text == "":
        return None
    # Not an integer: keep the text, so the engine's validator names the field.
    return int(text) if _INTEGER.match(text) else text


def _number(text: str) -> Any:
    text = text.strip()
    if text == "":
        return None
    if _INTEGER.match(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def rule_from_form_values(values: dict[str, str]) -> dict:
    """Return the rule document of a layer's form values (only the fields given)."""
    rule: dict[str, Any] = {}
    for name in ("participation", "mode", "order"):
        if values.get(name):
            rule[name] = values[name]
    required = values.get("required", "")
    if required:
        rule["required"] = {"true": True, "false": False}.get(required, required)
    for name, parse in (("priority", _number), ("maxItems", _integer), ("maxTokens", _integer)):
        value = parse(values.get(name, ""))
        if value is not None:
            rule[name] = value
    facets = [part.strip() for part in values.get("facets", "").split(",") if part.strip()]
    if facets:
        rule["facets"] = facets
    currentness: dict[str, Any] = {}
    max_age = _integer(values.get("currentness.maxAgeDays", ""))
    if max_age is not None:
        currentness["maxAgeDays"] = max_age
    for name in ("field", "onStale", "onUnknown"):
        value = values.get(f"currentness.{name}", "").strip()
        if value:
            currentness[name] = value
    if currentness:
        rule["currentness"] = currentness
    return rule


def form_values_from_rule(rule: dict | None) -> dict[str, str]:
    """Return the editor's text values of a rule document (empty = not given)."""
    rule = rule or {}
    values = dict.fromkeys(RULE_FORM_FIELDS, "")
    for name in ("participation", "mode", "order"):
        if rule.get(name) is not None:
            values[name] = str(rule[name])
    if rule.get("required") is not None:
        values["required"] = "true" if rule["required"] else "false"
    for name in ("priority", "maxItems", "maxTokens"):
        if rule.get(name) is not None:
            values[name] = canonical_string(rule[name])
    if rule.get("facets"):
        values["facets"] = ", ".join(rule["facets"])
    currentness = rule.get("currentness") or {}
    for name in ("maxAgeDays", "field", "onStale", "onUnknown"):
        if currentness.get(name) is not None:
            values[f"currentness.{name}"] = canonical_string(currentness[name])
    return values


@dataclass
class LayerRow:
    """One row of the rules table: the layer, its form values and where its rule comes from."""

    key: str
    name: str
    source: str  # "profile" or "default"
    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def has_currentness(self) -> bool:
        return any(self.values[name] for name in RULE_FORM_FIELDS[8:])

    def _cells(self, names) -> list[dict]:
        return [
            {
                "field": name,
                "label": name.replace(".", " "),
                "slug": name.replace(".", "-"),
                "name": rule_field_name(self.key, name),
                "value": self.values.get(name, ""),
                "error": self.errors.get(name, ""),
                "choices": CHOICE_FIELDS.get(name),
                "hint": DEFAULT_HINTS[name],
                "numeric": name in NUMERIC_FIELDS,
            }
            for name in names
        ]

    @property
    def main_cells(self) -> list[dict]:
        return self._cells(MAIN_RULE_FIELDS)

    @property
    def more_cells(self) -> list[dict]:
        return self._cells(RULE_FORM_FIELDS[7:])

    @property
    def more_open(self) -> bool:
        return any(name in self.errors for name in RULE_FORM_FIELDS[7:])

    @property
    def more_summary(self) -> str:
        facets = self.values["facets"] or "body"
        age = self.values["currentness.maxAgeDays"]
        currentness = f"max {age} days" if age else "no currentness limit"
        return f"facets {facets} · {currentness}"


@dataclass
class SampleInput:
    """The preview's request: message, input keys, as-of time, format, what-if availability."""

    message: str = ""
    inputs: dict[str, str] = field(default_factory=dict)
    now: str = ""  # datetime-local text, UTC
    format: str = ""
    availability: dict[str, str] = field(default_factory=dict)

    def as_request(self) -> dict:
        input_values: dict[str, Any] = {}
        if self.message:
            input_values["message"] = self.message
        for key, value in self.inputs.items():
            if value != "":
                input_values[key] = value
        request: dict[str, Any] = {"input": input_values}
        if self.now:
            request["now"] = self.now
        if self.format:
            request["format"] = self.format
        availability = {key: value for key, value in self.availability.items() if value}
        if availability:
            request["availability"] = availability
        return request

    def input_fields(self) -> list[tuple[str, str]]:
        return list(self.inputs.items())

    def as_session(self) -> dict:
        return {
            "message": self.message,
            "inputs": self.inputs,
            "now": self.now,
            "format": self.format,
            "availability": self.availability,
        }


@dataclass
class Draft:
    """What the editor form holds: rules per layer, the budget and the sample input."""

    rows: list[LayerRow]
    budget: str
    sample: SampleInput
    budget_error: str = ""
    general_errors: list[str] = field(default_factory=list)

    def rule_overrides(self) -> dict:
        """Return every layer's rule as the form gives it (None = the default rule)."""
        overrides: dict[str, Any] = {}
        for row in self.rows:
            rule = rule_from_form_values(row.values)
            if not rule and row.source == "default":
                overrides[row.key] = None
                continue
            # Fields left empty are removed from the saved rule (None = not given).
            full: dict[str, Any] = dict.fromkeys(
                ("participation", "mode", "required", "priority", "maxItems", "maxTokens"), None
            ) | {"order": None, "facets": None, "currentness": None}
            overrides[row.key] = full | rule
        return overrides

    def rules_document(self) -> dict:
        """Return the rules of the draft as a document (what saving would store)."""
        result = {}
        for row in self.rows:
            rule = rule_from_form_values(row.values)
            if rule or row.source == "profile":
                result[row.key] = rule
        return result

    def budget_value(self) -> Any:
        return _integer(self.budget) if self.budget.strip() else self.budget

    def has_errors(self) -> bool:
        return bool(self.budget_error or self.general_errors or any(r.errors for r in self.rows))


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


def draft_from_saved(document: dict, profile_key: str, sample: SampleInput) -> Draft:
    """Return the draft equal to the saved profile."""
    entry = profile_document(document, profile_key)
    rules = entry.get("rules") or {}
    rows = [
        LayerRow(
            key=layer["key"],
            name=" ".join(str(layer.get("name") or "").split()) or layer["key"],
            source="profile" if layer["key"] in rules else "default",
            values=form_values_from_rule(rules.get(layer["key"])),
        )
        for layer in document.get("layers") or []
    ]
    return Draft(rows=rows, budget=str(entry["budget"]), sample=sample)


def sample_from_post(data, document: dict) -> SampleInput:
    layer_keys = [layer["key"] for layer in document.get("layers") or []]
    return SampleInput(
        message=data.get("message", ""),
        inputs={key: data.get(f"input-{key}", "").strip() for key in input_keys(document)},
        now=data.get("now", "").strip(),
        format=data.get("format", ""),
        availability={key: data.get(f"avail-{key}", "") for key in layer_keys},
    )


def draft_from_post(data, document: dict, profile_key: str) -> Draft:
    """Return the draft of a posted editor form (unknown layers ignored, missing = saved)."""
    entry = profile_document(document, profile_key)
    rules = entry.get("rules") or {}
    rows = []
    for layer in document.get("layers") or []:
        key = layer["key"]
        saved_source = "profile" if key in rules else "default"
        source = data.get(f"rule-{key}-source", saved_source)
        values = {
            name: data.get(rule_field_name(key, name), "").strip() for name in RULE_FORM_FIELDS
        }
        rows.append(
            LayerRow(
                key=key,
                name=" ".join(str(layer.get("name") or "").split()) or key,
                source=source if source in ("profile", "default") else saved_source,
                values=values,
            )
        )
    return Draft(
        rows=rows,
        budget=data.get("budget", str(entry["budget"])).strip(),
        sample=sample_from_post(data, document),
    )


def draft_is_dirty(draft: Draft, document: dict, profile_key: str) -> bool:
    """Return whether the draft differs from the saved profile."""
    entry = profile_document(document, profile_key)
    saved_rules = {key: rule or {} for key, rule in (entry.get("rules") or {}).items()}
    return draft.rules_document() != saved_rules or draft.budget_value() != entry["budget"]


_ISSUE_PATH = re.compile(r"^profiles\[\d+\]\.(?:budget$|rules\.([a-z0-9_-]+)(?:\.(.+))?$)")


def attach_issues(draft: Draft, issues) -> None:
    """Put each validation issue beside the field it concerns (else in the general list)."""
    rows = {row.key: row for row in draft.rows}
    for issue in issues:
        match = _ISSUE_PATH.match(issue.path)
        if match is None:
            draft.general_errors.append(str(issue))
            continue
        layer_key, tail = match.groups()
        if layer_key is None:
            draft.budget_error = issue.message
            continue
        row = rows.get(layer_key)
        name = _form_field_of(tail or "")
        if row is None or name is None:
            draft.general_errors.append(str(issue))
            continue
        row.errors.setdefault(name, issue.message)


def _form_field_of(tail: str) -> str | None:
    tail = re.sub(r"\[\d+\]$", "", tail)
    if tail == "currentness":
        return "currentness.maxAgeDays"
    if tail in RULE_FORM_FIELDS:
        return tail
    return None


# --- sample input: scenarios and the "as of" time -----------------------------------------


def now_for_form(value: str | None) -> str:
    """Return an ISO date/datetime as the UTC ``datetime-local`` text of the form."""
    if not value:
        return ""
    try:
        parsed = dt.datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError:
        return value
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%dT%H:%M:%S" if parsed.second else "%Y-%m-%dT%H:%M")


def sample_from_scenario(scenario: Scenario | None, document: dict) -> SampleInput:
    if scenario is None:
        return SampleInput(now=now_for_form(dt.datetime.now(dt.UTC).isoformat()))
    values = {
        key: canonical_string(v) for key, v in (scenario.input or {}).items() if v is not None
    }
    return SampleInput(
        message=values.pop("message", ""),
        inputs={key: values.get(key, "") for key in input_keys(document)},
        now=now_for_form(scenario.now),
        format=scenario.format or "",
        availability=dict(scenario.availability or {}),
    )


def sample_from_session(stored: dict, document: dict) -> SampleInput:
    return SampleInput(
        message=str(stored.get("message", "")),
        inputs={key: str(stored.get("inputs", {}).get(key, "")) for key in input_keys(document)},
        now=str(stored.get("now", "")),
        format=str(stored.get("format", "")),
        availability=dict(stored.get("availability") or {}),
    )


def scenario_save(*, profile: Profile, name: str, sample: SampleInput, user=None) -> None:
    """Save the sample input as a named scenario of the profile (validated by the service).

    The name of another profile's scenario is refused (``ScenarioNameTaken``), never moved.
    """
    scenario_save_service(profile=profile, name=name, request=sample.as_request(), user=user)


# --- the preview: timeline, budget meter, diff --------------------------------------------

STAGES = (
    "Available",
    "Applicable",
    "Currentness",
    "Decision",
    "Materialized",
    "Projected",
    "Rendered",
)


def Stage(name: str, state: str, code: str, sentence: str, tone: str = "neutral") -> dict:
    """Return one stage of a layer's timeline (a dict: templates look dict keys up fastest).

    ``tone`` is ok | warn | bad | neutral | skipped.
    """
    return {"name": name, "state": state, "code": code, "sentence": sentence, "tone": tone}


def _plural(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def layer_stages(record: dict) -> list[dict]:
    """Return the seven stages of one layer record, each with state, code and a sentence."""
    stages = []
    available = record["available"]
    stages.append(
        Stage(
            "Available",
            available["state"],
            available["state"],
            format_html(
                "{} ({}).",
                explain(available["state"]).rstrip("."),
                _plural(available["items"], "item"),
            ),
            "ok" if available["state"] == "MATERIAL_PRESENT" else "bad",
        )
    )
    applicable = record["applicable"]
    if applicable["state"] == "SKIPPED":
        stages.append(Stage("Applicable", "SKIPPED", "", explain("SKIPPED"), "skipped"))
    else:
        stages.append(
            Stage(
                "Applicable",
                applicable["state"],
                applicable["reason"] or "",
                format_html(
                    "{} {} of {} considered.",
                    explain(applicable["reason"]),
                    _plural(applicable["candidates"], "candidate"),
                    record["available"]["items"],
                ),
                {"APPLICABLE": "ok", "UNKNOWN": "warn"}.get(applicable["state"], "bad"),
            )
        )
    current = record["currentness"]
    if current["state"] == "ASSESSED":
        sentence = format_html(
            "{} current, {} stale, {} undated; {} excluded, {} kept with a warning.",
            current["current"],
            current["stale"],
            current["unknown"],
            current["excluded"],
            current["warned"],
        )
        tone = "warn" if current["excluded"] or current["warned"] else "ok"
    else:
        sentence, tone = explain(current["state"]), "skipped"
    stages.append(Stage("Currentness", current["state"], current["state"], sentence, tone))
    decision = record["decision"]
    sentence = explain(decision["reason"])
    if decision.get("detail"):
        sentence = format_html("{} {}", sentence, explain(decision["detail"]))
    stages.append(
        Stage(
            "Decision",
            decision["kind"],
            decision["reason"],
            sentence,
            {"inline": "ok", "on-demand": "ok"}.get(decision["kind"], "bad"),
        )
    )
    omitted = decision["kind"] == "omitted"
    materialized = record["materialized"]
    if omitted:
        for name in ("Materialized", "Projected", "Rendered"):
            stages.append(Stage(name, "SKIPPED", "", explain("SKIPPED"), "skipped"))
        return stages
    counts: dict[str, int] = {}
    for reference in materialized["references"]:
        counts[reference["reason"]] = counts.get(reference["reason"], 0) + 1
    units = _plural(len(materialized["items"]), "item")
    if decision["kind"] == "on-demand":
        units = _plural(len(materialized["items"]), "reference")
    parts = [f"{units} kept"] + [
        f"{number} {REASON_SENTENCES[reason].split(':')[0]}"
        for reason, number in counts.items()
        if reason != "ON_DEMAND"
    ]
    stages.append(
        Stage(
            "Materialized",
            f"{len(materialized['items'])} kept",
            ", ".join(f"{code}×{number}" for code, number in counts.items()),
            format_html("{}.", "; ".join(parts)),
            "ok" if materialized["items"] else "warn",
        )
    )
    projected = record["projected"]
    stages.append(
        Stage(
            "Projected",
            ", ".join(projected["facets"]),
            "",
            format_html("Each inline item shows: {}.", ", ".join(projected["facets"]) or "—")
            if decision["kind"] == "inline"
            else "References show their title only.",
            "neutral",
        )
    )
    rendered = record["rendered"]
    admitted, trimmed = len(rendered["items"]), len(rendered["trimmed"])
    if trimmed:
        sentence = format_html(
            "{} of {} admitted; {} {}",
            admitted,
            admitted + trimmed,
            trimmed,
            explain_fragment("BUDGET_TRIMMED"),
        )
    else:
        sentence = format_html(
            "{} admitted, {} est. tokens.", _plural(admitted, "unit"), rendered["estimatedTokens"]
        )
    stages.append(
        Stage(
            "Rendered",
            f"{admitted} admitted",
            "BUDGET_TRIMMED" if trimmed else "",
            sentence,
            "warn" if trimmed else ("ok" if admitted else "warn"),
        )
    )
    return stages


_item_cache: dict[str | None, dict] = {}


def item_lookup(cached=None) -> dict[tuple[str, str], dict]:
    """Return {(layer key, path): item document} of the committed workspace (cached by token)."""
    cached = cached or cache.workspace_get()
    lookup = _item_cache.get(cached.token) if cached.token else None
    if lookup is None:
        lookup = {
            (layer["key"], item["path"]): item
            for layer in cached.document.get("layers") or []
            for item in layer.get("items") or []
        }
        _item_cache.clear()
        _item_cache[cached.token] = lookup
    return lookup


def _title(lookup: dict, layer: str, path: str) -> str:
    item = lookup.get((layer, path)) or {}
    return " ".join(str(item.get("title") or "").split()) or path


def layer_timeline(resolution: dict, cached=None) -> list[dict]:
    """Return one entry per layer, in render order, with stages and item rows for the page."""
    lookup = item_lookup(cached)
    references = {(ref["layer"], ref["item"]): ref for ref in resolution["references"]}
    excluded: dict[str, list] = {}
    for entry in resolution["currentnessExcluded"]:
        excluded.setdefault(entry["layer"], []).append(entry)
    entries = []
    for record in resolution["layers"]:
        key = record["layer"]
        admitted = set(record["rendered"]["items"])
        trimmed = set(record["rendered"]["trimmed"])
        items = []
        on_demand = record["decision"]["kind"] == "on-demand"
        for item in record["materialized"]["items"]:
            if item["item"] in admitted:
                fate, why = "admitted", "ON_DEMAND" if on_demand else ""
            elif item["item"] in trimmed:
                fate, why = "trimmed", "BUDGET_TRIMMED"
            else:
                fate, why = "", ""
            items.append(
                {
                    **item,
                    "title": _title(lookup, key, item["item"]),
                    "fate": fate,
                    "why": why,
                    "why_text": explain(why) if why else "",
                    "matched": ", ".join(item["matchedTerms"]),
                }
            )
        for reference in record["materialized"]["references"]:
            rendered = references.get((key, reference["item"]), {}).get("rendered", False)
            items.append(
                {
                    "item": reference["item"],
                    "title": _title(lookup, key, reference["item"]),
                    "score": None,
                    "matched": "",
                    "date": None,
                    "notCurrent": None,
                    "fate": "reference" if rendered else "not rendered",
                    "why": reference["reason"],
                    "why_text": explain(reference["reason"]),
                }
            )
        entries.append(
            {
                "record": record,
                "key": key,
                "kind": record["decision"]["kind"],
                "kind_label": DECISION_KINDS.get(record["decision"]["kind"], ""),
                "stages": layer_stages(record),
                "items": items,
                "excluded": excluded.get(key, []),
            }
        )
    return entries


def status_messages(resolution: dict) -> list[dict]:
    """Return the blockers and warnings explained in words, in layer render order."""
    records = {record["layer"]: record for record in resolution["layers"]}
    messages = []
    for blocker in resolution["blockers"]:
        record = records.get(blocker["layer"], {})
        name = record.get("name", blocker["layer"])
        decision = record.get("decision") or {}
        if blocker["code"] == "MISSING_REQUIRED_CONTEXT":
            cause = decision.get("detail") or blocker.get("detail")
            if blocker.get("detail") == "NO_CONTENT":
                cause = "NO_CONTENT"
            text = format_html(
                "Blocked: the required layer <em>{}</em> is missing — {}.",
                name,
                explain_fragment(cause),
            )
        else:
            text = format_html(
                "Blocked: none of the required layer <em>{}</em> fits the budget of {} est. "
                "tokens.",
                name,
                resolution["budget"]["limit"],
            )
        messages.append({"kind": "blocker", "code": blocker["code"], "text": text})
    for warning in resolution["warnings"]:
        record = records.get(warning["layer"], {})
        rendered = record.get("rendered") or {}
        text = format_html(
            "Incomplete: the required layer <em>{}</em> lost {} of {} units to the budget.",
            record.get("name", warning["layer"]),
            len(rendered.get("trimmed", [])),
            len(rendered.get("items", [])) + len(rendered.get("trimmed", [])),
        )
        messages.append({"kind": "warning", "code": warning["code"], "text": text})
    return messages


# Colours of the budget meter's segments, cycled in layer render order.
SEGMENT_COLOURS = 8


def budget_meter(resolution: dict) -> dict:
    """Return the stacked bar of est. tokens per layer against the budget."""
    budget = resolution["budget"]
    limit, used = budget["limit"], budget["estimatedTokens"]
    scale = max(limit, used, 1)
    segments, offset = [], 0.0
    for record in resolution["layers"]:
        figures = budget["byLayer"].get(record["layer"])
        if not figures:
            continue
        width = 100.0 * figures["estimatedTokens"] / scale
        segments.append(
            {
                "layer": record["layer"],
                "name": record["name"],
                "tokens": figures["estimatedTokens"],
                "x": round(offset, 3),
                "width": round(width, 3),
                "colour": len(segments) % SEGMENT_COLOURS,
            }
        )
        offset += width
    rest = used - sum(segment["tokens"] for segment in segments)
    if rest > 0:
        segments.append(
            {
                "layer": "",
                "name": "references and separators",
                "tokens": rest,
                "x": round(offset, 3),
                "width": round(100.0 * rest / scale, 3),
                "colour": "rest",
            }
        )
    trimmed = [
        {"layer": record["layer"], "item": path, "reason": "BUDGET_TRIMMED"}
        for record in resolution["layers"]
        for path in record["rendered"]["trimmed"]
    ] + [
        {"layer": ref["layer"], "item": ref["item"], "reason": ref["reason"]}
        for ref in resolution["references"]
        if not ref["rendered"] and ref["reason"] in ("BEYOND_MAX_ITEMS", "LAYER_TOKEN_LIMIT")
    ]
    return {
        "limit": limit,
        "used": used,
        "remaining": budget["remaining"],
        "over": used > limit,
        "limit_x": round(100.0 * limit / scale, 3),
        "segments": segments,
        "trimmed": trimmed,
        "characters": budget["characters"],
    }


def output_lines(resolution: dict) -> list[dict]:
    """Return the output text as lines, flagging the not-current ones."""
    output = resolution.get("output")
    if not output:
        return []
    lines = []
    for line in output["text"].split("\n")[:-1] if output["text"] else []:
        flagged = line.startswith("Not current (") or ' not-current="' in line
        lines.append({"text": line, "not_current": flagged})
    return lines


def _context_units(resolution: dict) -> set[tuple[str, str]]:
    units = {
        (record["layer"], path)
        for record in resolution["layers"]
        for path in record["rendered"]["items"]
    }
    units |= {(ref["layer"], ref["item"]) for ref in resolution["references"] if ref["rendered"]}
    return units


_saved_cache: dict[tuple, dict] = {}
_SAVED_CACHE_SIZE = 64


def saved_resolution(profile_key: str, request: dict, cached=None) -> dict:
    """Return the saved profile's resolution of a request, reused while nothing is written.

    Typing in the editor previews many drafts against the same sample input; the saved
    side of "what changed" is the same each time. Keyed by the workspace version token, so
    any write (by anyone) invalidates it; requests without a fixed ``now`` are not cached.
    """
    cached = cached or cache.workspace_get()
    request = {**request, "profile": profile_key}
    key = (cached.token, json.dumps(request, sort_keys=True, default=str))
    resolution = _saved_cache.get(key) if cached.token and request.get("now") else None
    if resolution is None:
        # What ``services.profile_resolve`` does without overrides, on the compilation whose
        # token keys the cache (one version query, hit or miss).
        resolution = cached.compiled.resolve(request)
        if cached.token and request.get("now"):
            if len(_saved_cache) >= _SAVED_CACHE_SIZE:
                _saved_cache.clear()
            _saved_cache[key] = resolution
    return resolution


def what_changed(saved: dict, draft: dict) -> dict:
    """Return the difference between the saved profile's resolution and the draft's."""
    saved_layers = {record["layer"]: record for record in saved["layers"]}
    decisions = []
    for record in draft["layers"]:
        before = saved_layers.get(record["layer"])
        if before is None:
            continue
        old, new = before["decision"], record["decision"]
        if (old["kind"], old["reason"], old["detail"]) != (
            new["kind"],
            new["reason"],
            new["detail"],
        ):
            decisions.append(
                {"layer": record["layer"], "name": record["name"], "before": old, "after": new}
            )
    before_units, after_units = _context_units(saved), _context_units(draft)
    return {
        "decisions": decisions,
        "gained": sorted(f"{layer}/{path}" for layer, path in after_units - before_units),
        "lost": sorted(f"{layer}/{path}" for layer, path in before_units - after_units),
        "tokens_before": saved["budget"]["estimatedTokens"],
        "tokens_after": draft["budget"]["estimatedTokens"],
        "status_before": saved["status"],
        "status_after": draft["status"],
        "empty": not decisions
        and before_units == after_units
        and saved["budget"]["estimatedTokens"] == draft["budget"]["estimatedTokens"]
        and saved["status"] == draft["status"],
    }


# --- profile list, create, duplicate -------------------------------------------------------


def profile_history(profile: Profile, *, limit: int = 12) -> list[dict]:
    """Return the latest changes of a profile and its rules, newest first, in words."""
    return [history_entry(record) for record in profile_history_list(profile=profile, limit=limit)]


def history_entry(record) -> dict:
    """Return one historical record in words: when, who, what and which fields changed."""
    layer = getattr(record, "layer", None)
    subject = f"rule {layer.key}" if layer is not None else "profile"
    action = {"+": "created", "~": "changed", "-": "deleted"}[record.history_type]
    details = []
    if record.history_type == "~":
        previous = record.prev_record
        if previous is not None:
            delta = record.diff_against(previous)
            details = [
                f"{RULE_FIELD_BY_MODEL.get(change.field, change.field)}: "
                f"{_shown(change.old)} → {_shown(change.new)}"
                for change in delta.changes
                if change.field not in ("updated_at", "updated_by", "position")
            ]
    return {
        "at": record.history_date,
        # No user: written by an import or a management command (e.g. the demo).
        "by": record.history_user.get_username() if record.history_user else "",
        "subject": subject,
        "action": action,
        "details": details,
    }


def _shown(value: Any) -> str:
    return "—" if value is None else str(value)
