"""A change request's title and description: checked, or the title said from what it changes
(a profile's diff, a set's entries)."""

from profiles.models import ChangeRequest
from profiles.safechange.change_set_entries import SetEntry
from profiles.versioning.environments import SafeChangeError
from resolver.validation import TEXT_RULE_MESSAGE, violates_text_rule

TITLE_MAX_LENGTH = ChangeRequest._meta.get_field("title").max_length
DESCRIPTION_MAX_LENGTH = 10_000
# What ``str.splitlines`` breaks a text at: a title is one line, the subject of every email
# about its request (a mailer refuses a subject with a line break).
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def title_one_line_check(title: str) -> None:
    """Raise SafeChangeError at ``title`` when the title holds a line break."""
    if any(character in LINE_BREAKS for character in title):
        raise SafeChangeError(
            "title: must be one line (no line breaks: it is the subject of the request's emails)",
            path="title",
        )


_VERBS = {"create": "create", "update": "change", "delete": "delete"}


def change_set_title(entries: list[SetEntry]) -> str:
    """Return a title saying what the set does ("Create layer release-notes; change
    support-answer, support-staging; change 2 items in tickets")."""
    groups: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        # An item is counted in its layer, never named: a title is read by everyone (lists,
        # emails, webhooks' payloads), an item's path only by who may read material.
        groups.setdefault((entry.op, entry.kind), []).append(entry.key)
    parts = []
    for (op, kind), names in groups.items():
        if kind == "item":
            layers = list(dict.fromkeys(names))
            more = f" and {len(layers) - 3} more layers" if len(layers) > 3 else ""
            noun = f"{len(names)} item" + ("s" if len(names) > 1 else "")
            parts.append(f"{_VERBS[op]} {noun} in {', '.join(layers[:3])}{more}")
            continue
        noun = "" if kind == "profile" else (f"{kind}s " if len(names) > 1 else f"{kind} ")
        listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        parts.append(f"{_VERBS[op]} {noun}{listed}")
    title = "; ".join(parts)
    title = title[0].upper() + title[1:]
    return title if len(title) <= TITLE_MAX_LENGTH else title[: TITLE_MAX_LENGTH - 1] + "…"


def change_set_text_checked(title, description, entries) -> tuple[str, str]:
    """Return a change set's stripped title (its default title when none is given) and its
    description; raise as ``change_request_text_checked`` does."""
    if title is None or (isinstance(title, str) and not title.strip()):
        title = change_set_title(entries)
    return change_request_text_checked(title, description)


def default_title(*, profile_key: str, paths) -> str:
    """Return the title a proposal gets unless its author writes one: what it changes, by the
    SPEC §2 paths of its diff ("Change support-answer: budget, rules.kb.maxItems")."""
    paths = list(dict.fromkeys(paths))
    title = f"Change {profile_key}" + (": " + ", ".join(paths) if paths else "")
    if len(title) > TITLE_MAX_LENGTH:
        title = title[: TITLE_MAX_LENGTH - 1].rstrip(", ") + "…"
    return title


def change_request_text_checked(title, description) -> tuple[str, str]:
    """Return the stripped title and the description; raise naming the field that breaks
    the text rule of SPEC §2.2 or its length."""
    if not isinstance(title, str):
        raise SafeChangeError("title: must be a string", path="title")
    if not title.strip():
        raise SafeChangeError("title: is required", path="title")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise SafeChangeError("description: must be a string", path="description")
    for name, value, limit in (
        ("title", title, TITLE_MAX_LENGTH),
        ("description", description, DESCRIPTION_MAX_LENGTH),
    ):
        if violates_text_rule(value):
            raise SafeChangeError(f"{name}: {TEXT_RULE_MESSAGE}", path=name)
        if len(value) > limit:
            raise SafeChangeError(f"{name}: must be at most {limit:,} characters", path=name)
    title_one_line_check(title)
    return title.strip(), description
