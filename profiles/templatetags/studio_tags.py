"""The decision timeline, rendered in Python.

It is the largest part of every live preview (seven stages per layer, a row per item) and
Django's template engine spent most of a preview's time on it; building the same markup with
f-strings is several times faster. Every value goes through ``_e`` (HTML-escaped, quotes
included) unless it is already a SafeString: the sentences of
``profiles.resolution.explain.explain``, which escape their own arguments.
"""

import functools
import html
import json

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

from profiles.resolution.explain import is_reason_code, reason_code
from profiles.workspace.selectors import history_list_recent

register = template.Library()

_DASH = "—"
# Rows load one request at a time, queued on the preview's section (which no swap replaces):
# opening many layers never sends a burst of full resolutions.
_SYNC = "#live-preview:queue all"


def _e(value) -> str:
    if isinstance(value, SafeString):
        return value
    return html.escape(str(value), quote=True)


@functools.cache
def _glossary_url() -> str:
    return reverse("help-reasons")


def _code(code: str, css: str = "") -> str:
    """Return a reason code as ``<code>``, inside a link to its glossary entry when it has one.

    The link's name is the code itself (its sentence is on the page beside it).
    """
    classes = f' class="{css}"' if css else ""
    if not is_reason_code(code):
        return f"<code{classes}>{_e(code)}</code>"
    href = f"{_glossary_url()}#reason-{reason_code(code)[0]}"
    return f'<a class="reason-link" href="{_e(href)}"><code{classes}>{_e(code)}</code></a>'


@register.filter
def reason_link(code) -> str:
    """Return a reason code linked to its explanation (``_code``), for templates."""
    return mark_safe(_code(str(code))) if code else ""


def _stage(stage: dict) -> str:
    code, state = stage["code"], stage["state"]
    extra = f"<br>{_code(code, 'stage-code')}" if code and code != state else ""
    name = _e(stage["name"])
    shown_state = _code(state) if is_reason_code(state) else _e(state)
    return (
        f'<li class="stage tone-{_e(stage["tone"])}" data-stage="{name}">'
        f'<span class="stage-name">{name}</span>'
        f'<span class="stage-state">{shown_state}{extra}</span>'
        f'<span class="stage-sentence">{_e(stage["sentence"])}</span></li>'
    )


def _item_row(item: dict) -> str:
    rank = _DASH if item.get("rank") is None else f"{item['rank']:,}"
    stale = (
        f' <span class="badge badge-stale">not current: {_e(item["notCurrent"])}</span>'
        if item["notCurrent"]
        else ""
    )
    why = (
        f' {_code(item["why"])}<br><span class="muted">{_e(item["why_text"])}</span>'
        if item["why"]
        else ""
    )
    path = _e(item["item"])
    return (
        f'<tr class="fate-{slugify(item["fate"])}" data-item="{path}">'
        f'<td><span class="item-title">{_e(item["title"])}</span><br>'
        f'<code class="small">{path}</code></td><td class="num rank">{_e(rank)}</td>'
        f'<td class="num score">{_e(item["score_text"])}</td>'
        f'<td class="small">{_e(item["matched"] or _DASH)}</td>'
        f'<td class="small">{_e(item["date"] or _DASH)}{stale}</td>'
        f'<td class="small"><span class="fate">{_e(item["fate"] or _DASH)}</span>{why}</td></tr>'
    )


def _excluded_row(entry: dict) -> str:
    age = f"{entry['ageDays']} days old" if entry["reason"] == "STALE" else "no valid date"
    return (
        f'<tr class="fate-excluded" data-item="{_e(entry["item"])}">'
        f'<td><span class="item-title">{_e(entry["title"])}</span><br>'
        f'<code class="small">{_e(entry["item"])}</code></td>'
        f'<td class="num">{_DASH}</td><td class="num">{_DASH}</td><td>{_DASH}</td>'
        f'<td class="small">{_e(entry["date"] or "no date")} '
        f'<span class="badge badge-stale">{_e(entry["reason"])}</span></td>'
        f'<td class="small">excluded <span class="muted">{_e(age)}</span></td></tr>'
    )


def _items(entry: dict, rows_url: str) -> str:
    """Return a layer's items as a closed disclosure whose rows load when it is opened."""
    counts = entry["counts"]
    if entry["kind"] == "omitted" or not (
        counts["units"] or counts["references"] or counts["not_current"]
    ):
        return ""
    parts = [f"{counts['admitted']:,} in the text"]
    if counts["trimmed"]:
        parts.append(f"{counts['trimmed']:,} trimmed")
    if counts["references"]:
        parts.append(f"{counts['references']:,} other references")
    if counts["not_current"]:
        parts.append(f"{counts['not_current']:,} not current")
    key = _e(entry["key"])
    vals = html.escape(json.dumps({"layer": entry["key"]}), quote=True)
    return (
        f'<details class="tl-items" id="items-{key}" hx-post="{_e(rows_url)}" '
        f'hx-trigger="toggle once" hx-sync="{_SYNC}" hx-target="find .tl-rows" hx-swap="innerHTML" '
        f'hx-vals="{vals}"><summary>Items: {" · ".join(parts)}</summary>'
        '<div class="tl-rows"><p class="muted">Loading…</p></div></details>'
    )


def _rule_link(key: str) -> str:
    """Return the jump from a timeline card to its layer's row in the rules table (the row
    links back to ``#tl-<key>``): the editor has ~200 tab stops between them."""
    return (
        f' <a class="jump-link" href="#rule-{key}">rule<span class="visually-hidden"> of {key}'
        ' in the rules table</span> <span aria-hidden="true">↖</span></a>'
    )


def _entry(entry: dict, rows_url: str) -> str:
    record = entry["record"]
    decision = record["decision"]
    key, kind = _e(entry["key"]), _e(entry["kind"])
    badges = ""
    if decision["detail"]:
        badges += f" {_code(decision['detail'], 'reason detail')}"
    if record["required"]:
        badges += ' <span class="badge badge-required">required</span>'
    if record["ruleSource"] == "default":
        badges += ' <span class="badge badge-default">default rule</span>'
    collapsed = entry.get("collapsed")
    if collapsed:
        # An omitted layer: one line, not a row per stage that was never evaluated.
        skipped = collapsed["skipped"]
        note = (
            f' <span class="muted">({skipped} stage{"" if skipped == 1 else "s"} '
            "not evaluated)</span>"
            if skipped
            else ""
        )
        body = f'<p class="tl-collapsed">{_e(collapsed["sentence"])}{note}</p>'
    else:
        stages = "".join(_stage(stage) for stage in entry["stages"])
        body = f'<ol class="stages">{stages}</ol>'
    return (
        f'<li class="tl-entry kind-{kind}" data-layer="{key}" id="tl-{key}" tabindex="-1">'
        '<div class="tl-head">'
        f'<span class="layer-key">{key}</span> <span class="layer-name">{_e(record["name"])}</span>'
        f' <span class="badge kind-badge kind-{kind}">{_e(entry["kind_label"])}</span>'
        f" {_code(decision['reason'], 'reason')}{badges}{_rule_link(key)}</div>"
        f"{body}{_items(entry, rows_url)}</li>"
    )


@register.simple_tag
def decision_timeline(timeline: list[dict], rows_url: str):
    """Return the timeline's ``<li>`` entries, one per layer in render order."""
    return mark_safe("".join(_entry(entry, rows_url) for entry in timeline))


@register.simple_tag
def item_rows(group: dict, layer: str, rows_url: str, page_size: int):
    """Return the shown rows of a group, then a "show more" row when some are left."""
    rows = "".join(
        _excluded_row(row) if row["fate"] == "excluded" else _item_row(row)
        for row in group["shown"]
    )
    if group["rest"]:
        vals = json.dumps(
            {"layer": layer, "group": group["name"], "start": str(group["next_start"])}
        )
        rows += (
            '<tr class="more-row"><td colspan="6"><button type="button" class="button small" '
            f'hx-post="{_e(rows_url)}" hx-sync="{_SYNC}" hx-target="closest tr" '
            'hx-swap="outerHTML" '
            f'hx-vals="{html.escape(vals, quote=True)}">Show {min(group["rest"], page_size):,} '
            f'more <span class="muted">({group["next_start"]:,} of {group["count"]:,} '
            "shown)</span></button></td></tr>"
        )
    return mark_safe(rows)


@register.simple_tag
def output_text(lines: list[dict]):
    """Return the output's lines as spans (not-current lines flagged), newline-terminated."""
    return mark_safe(
        "".join(
            f'<span class="line{" not-current" if line["not_current"] else ""}">'
            f"{_e(line['text'])}</span>\n"
            for line in lines
        )
    )


@register.simple_tag
def reference_items(references: list[dict]):
    """Return the ``<li>`` of every reference of the resolution."""
    return mark_safe(
        "".join(
            f'<li><code>{_e(ref["ref"])}</code> <span class="muted">{_code(ref["reason"])}</span>'
            + (' <span class="badge badge-ok">in the text</span>' if ref["rendered"] else "")
            + "</li>"
            for ref in references
        )
    )


@register.simple_tag
def trimmed_items(units: list[dict]):
    """Return the ``<li>`` of every unit the budget left out."""
    return mark_safe(
        "".join(
            f"<li><code>{_e(unit['layer'])}/{_e(unit['item'])}</code> "
            f'<span class="muted">{_code(unit["reason"])}</span></li>'
            for unit in units
        )
    )


@register.filter
def as_json(value) -> str:
    """Return a value as compact JSON (metadata reads as it is written in the workspace)."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


_HISTORY_ACTIONS = {"+": "created", "~": "changed", "-": "deleted"}


def _history_label(record) -> str:
    model = record.instance_type._meta.model_name
    if model == "item":
        return f"{record.layer_key or '(deleted layer)'}/{record.path}"
    if model == "rule":
        profile = record.profile_key or "(deleted profile)"
        return f"{profile} · rule {record.layer_key or '(deleted layer)'}"
    return record.key


@register.simple_tag
def workspace_recent_changes(limit: int = 10) -> list[dict]:
    """Return the latest workspace changes (every door, every user) for the admin's sidebar."""
    changes = []
    for record in history_list_recent(limit=limit):
        model = record.instance_type._meta.model_name
        url = None
        if record.history_type != "-":
            try:
                url = reverse(f"admin:profiles_{model}_change", args=[record.id])
            except NoReverseMatch:
                url = None
        changes.append(
            {
                "label": _history_label(record),
                "kind": record.instance_type._meta.verbose_name,
                "action": _HISTORY_ACTIONS[record.history_type],
                "by": record.history_user.get_username() if record.history_user else "",
                "at": record.history_date,
                "url": url,
            }
        )
    return changes
