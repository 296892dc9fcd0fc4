"""Where an issue is in a document's text: its entry, its line and column (resolver.locations)."""

import json
from pathlib import Path

from resolver import ValidationIssue, validate_workspace
from resolver.documents import load_document
from resolver.locations import locate_issues

DEMO = Path(__file__).resolve().parents[2] / "profiles" / "demo" / "workspace.yaml"

WORKSPACE_YAML = """\
version: 1
consumers:
- key: assistant
  name: Assistant
layers:
- key: kb
  name: Knowledge base
  items:
  - path: faq/refunds.md
    title: Refunds
  - path: faq/returns.md
    title: [not, a, string]
profiles:
- key: answer
  consumer: assistant
  objective: answer-ticket
  budget: 800
  rules:
    kb: &kb-rule
      mode: inline
      maxItems: -3
- key: answer-staging
  consumer: assistant
  objective: answer-ticket
  environment: staging
  budget: 800
  rules:
    kb: *kb-rule
"""


def line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


def located(text: str) -> list[ValidationIssue]:
    return locate_issues(text, validate_workspace(load_document(text)))


def test_locate_issues__rule_shared_through_an_alias__names_each_profile_and_the_anchor_line():
    issues = {issue.path: issue for issue in located(WORKSPACE_YAML)}

    first = issues["profiles[0].rules.kb.maxItems"]
    second = issues["profiles[1].rules.kb.maxItems"]
    maxitems_line = line_of(WORKSPACE_YAML, "maxItems: -3")
    assert (first.entry, first.line, first.column) == ("rule answer/kb", maxitems_line, 17)
    assert first.alias_line is None
    # The second profile's rule is the anchor's: the value's line, and the alias it uses.
    assert (second.entry, second.line, second.column) == (
        "rule answer-staging/kb",
        maxitems_line,
        17,
    )
    assert (second.alias_line, second.alias_column) == (line_of(WORKSPACE_YAML, "*kb-rule"), 9)
    assert str(second) == (
        "profiles[1].rules.kb.maxItems: must be an integer >= 0 (rule answer-staging/kb, "
        f"line {maxitems_line}, column 17, through the alias on line "
        f"{line_of(WORKSPACE_YAML, '*kb-rule')}, column 9)"
    )


def test_locate_issues__item_error__names_layer_and_path_and_the_value_line():
    (issue,) = [i for i in located(WORKSPACE_YAML) if i.path.startswith("layers")]

    assert issue.path == "layers[0].items[1].title"
    assert issue.entry == "item kb/faq/returns.md"
    assert (issue.line, issue.column) == (line_of(WORKSPACE_YAML, "title: [not"), 12)


def test_locate_issues__missing_field__points_at_the_entry_that_lacks_it():
    text = WORKSPACE_YAML.replace(
        "  consumer: assistant\n  objective: answer-ticket\n  budget", "  budget", 1
    )

    (issue,) = [i for i in located(text) if i.path == "profiles[0].consumer"]

    assert issue.entry == "profile answer"
    assert (issue.line, issue.column) == (line_of(text, "- key: answer\n"), 3)


def test_locate_issues__demo_with_a_negative_max_items__every_profile_sharing_the_rule():
    # Given the demo workspace with its shared tickets rule made invalid
    text = DEMO.read_text(encoding="utf-8").replace("maxItems: 3", "maxItems: -3", 1)

    issues = located(text)

    bad_line = line_of(text, "maxItems: -3")
    assert [(i.path, i.entry, i.line, i.alias_line is not None) for i in issues] == [
        ("profiles[0].rules.tickets.maxItems", "rule support-answer/tickets", bad_line, False),
        (
            "profiles[1].rules.tickets.maxItems",
            "rule support-answer-staging/tickets",
            bad_line,
            True,
        ),
    ]
    assert text.splitlines()[issues[1].alias_line - 1].strip() == (
        "tickets: *tickets-latest-3-within-180-days"
    )


def test_locate_issues__json__lines_and_columns_of_the_values():
    document = load_document(WORKSPACE_YAML)
    text = json.dumps(document, indent=2)

    issues = {issue.path: issue for issue in located(text)}

    rule = issues["profiles[1].rules.kb.maxItems"]
    item = issues["layers[0].items[1].title"]
    assert rule.entry == "rule answer-staging/kb"
    assert text.splitlines()[rule.line - 1][rule.column - 1 :] == "-3"
    assert item.entry == "item kb/faq/returns.md"
    assert text.splitlines()[item.line - 1][item.column - 1 :] == "["


def test_locate_issues__json_yaml_cannot_read__entry_without_a_line():
    # A key over 1,024 characters is JSON but no YAML simple key.
    document = load_document(WORKSPACE_YAML)
    document["profiles"][0]["x" * 2000] = 1
    text = json.dumps(document)

    issue = next(i for i in located(text) if i.path == "profiles[0].rules.kb.maxItems")

    assert issue.entry == "rule answer/kb"
    assert issue.line is None
    assert issue.as_dict() == {
        "path": "profiles[0].rules.kb.maxItems",
        "message": "must be an integer >= 0",
        "entry": "rule answer/kb",
    }


def test_locate_issues__merge_key__the_merged_value_and_the_merge_alias():
    text = "base: &base\n  x: 1\nentry:\n  <<: *base\n  y: 2\n"

    (merged, own, absent) = locate_issues(
        text,
        [
            ValidationIssue("entry.x", "bad"),
            ValidationIssue("entry.y", "bad"),
            ValidationIssue("entry.z", "bad"),
        ],
    )

    assert (merged.line, merged.column, merged.alias_line, merged.alias_column) == (2, 6, 4, 7)
    assert (own.line, own.column, own.alias_line) == (5, 6, None)
    assert (absent.line, absent.column) == (4, 3)


def test_locate_issues__one_layer_document__items_named_by_the_layer_key():
    text = "key: kb\nitems:\n- path: a.md\n  title: 7\n"

    (issue,) = locate_issues(text, [ValidationIssue("items[0].title", "must be a string")])

    assert (issue.entry, issue.line, issue.column) == ("item kb/a.md", 4, 10)


def test_locate_issues__loader_error_and_unreadable_text__issues_come_back_unchanged():
    loader_error = ValidationIssue("", "line 3, column 1: not valid YAML or JSON (…)")
    odd = ValidationIssue("layers[0]", "bad")

    assert locate_issues(WORKSPACE_YAML, [loader_error]) == [loader_error]
    assert locate_issues("key: [unclosed", [odd]) == [odd]


def test_locate_issues__key_with_nul_and_surrogates__entry_shows_them_escaped():
    text = '{"profiles": [{"key": "p\\ud83d\\ude00\\ud800\\u0000", "budget": -1}]}'

    (issue,) = locate_issues(text, [ValidationIssue("profiles[0].budget", "bad")])

    assert issue.entry == "profile p\U0001f600\\ud800\\x00"
    assert issue.line == 1
