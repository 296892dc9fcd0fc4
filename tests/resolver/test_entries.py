"""Single-entry helpers: validators of one entry and the rule-draft merge (resolver API)."""

import copy

import pytest

from resolver import (
    WorkspaceError,
    compile_workspace,
    merge_rule,
    validate_consumer,
    validate_item,
    validate_layer,
    validate_profile,
    validate_workspace,
)

# One document with errors in every kind of entry, none of them between entries.
BROKEN = {
    "consumers": [
        {"key": "bot", "render": {"format": "html"}},
        {"key": "Bad Key", "name": ["x"], "colour": "red"},
        {"key": "writer", "name": "N" * 1001},
    ],
    "layers": [
        {
            "key": "kb",
            "name": "Knowledge\x00base",
            "availability": "sometimes",
            "appliesTo": {"objectives": ["answer", "Not A Key"], "\ud800": []},
            "requiresInput": ["customer_id", "", "a\x00"],
            "itemFilter": {"customer_id": "", "b\x00": "x", "region": "re\ud800gion"},
            "items": [
                {"path": " lead", "title": "T" * 1001, "body": 7},
                {"path": "deep", "metadata": {"a": {"b": {"c": {"d": []}}}}},
                {"path": "values", "metadata": {"many": list(range(1001))}},
                {"path": "nul", "metadata": {"tags": ["x", "y\x00"]}},
                {"path": "key", "metadata": {"k\x00": 1}},
                None,
                {"path": "fine", "title": "Fine", "body": "B" * 1000, "extra": 1},
            ],
        },
        {"key": "tickets", "description": "\ud83d", "items": "none"},
    ],
    "profiles": [
        {
            "key": "answer",
            "consumer": "nobody",
            "objective": "answer",
            "budget": 0,
            "name": "x\x00",
            "rules": {
                "kb": {"mode": "fetch", "required": True, "participation": "exclude"},
                "missing": {"mode": "inline"},
                "\x00": {},
                "tickets": {"facets": ["body", "meta.\x00"], "currentness": {"field": "\ud800"}},
            },
        },
        {"key": "draft", "consumer": "bot", "objective": "reply", "budget": "many"},
    ],
}


def issues_under(prefix: str) -> list:
    """Return validate_workspace's issues of the entry at prefix, with prefix made relative."""
    found = []
    for issue in validate_workspace(BROKEN):
        if issue.path == prefix or issue.path.startswith((prefix + ".", prefix + "[")):
            found.append(issue)
    return found


def entries():
    for i, consumer in enumerate(BROKEN["consumers"]):
        yield f"consumers[{i}]", lambda entry, path: validate_consumer(entry, path=path), consumer
    for i, layer in enumerate(BROKEN["layers"]):
        yield (
            f"layers[{i}]",
            lambda entry, path: validate_layer(entry, path=path, items=True),
            layer,
        )
        for n, item in enumerate(layer["items"] if isinstance(layer["items"], list) else []):
            yield (
                f"layers[{i}].items[{n}]",
                lambda entry, path: validate_item(entry, path=path),
                item,
            )
    for i, profile in enumerate(BROKEN["profiles"]):
        yield (
            f"profiles[{i}]",
            lambda entry, path: validate_profile(
                entry, path=path, layer_keys={"kb", "tickets"}, consumer_keys={"bot", "writer"}
            ),
            profile,
        )


@pytest.mark.parametrize(("path", "validate", "entry"), list(entries()), ids=lambda v: v)
def test_entry_validator__entry_of_a_broken_workspace__gives_the_workspace_issues_of_it(
    path, validate, entry
):
    expected = issues_under(path)

    assert validate(entry, path) == expected


def test_validate_workspace__broken_document__reports_every_limit_at_its_path():
    reported = [(issue.path, issue.message) for issue in validate_workspace(BROKEN)]

    def has(path, message_start):
        return any(p == path and m.startswith(message_start) for p, m in reported)

    text_rule = "must not contain U+0000 (NUL) or a lone surrogate (U+D800-U+DFFF)"
    assert has("consumers[2].name", "must be at most 1,000 characters (got 1,001)")
    assert has("layers[0].name", text_rule)
    assert has("layers[0].appliesTo", "a key " + text_rule)
    assert has("layers[0].requiresInput[2]", text_rule)
    assert has("layers[0].itemFilter", "a key " + text_rule)
    assert has("layers[0].itemFilter.region", text_rule)
    assert has("layers[0].items[0].title", "must be at most 1,000 characters (got 1,001)")
    assert has("layers[0].items[1].metadata", "must nest at most 4 levels of objects and lists")
    assert has("layers[0].items[2].metadata", "must hold at most 1,000 values (got 1,001)")
    assert has("layers[0].items[3].metadata", "a value " + text_rule)
    assert has("layers[0].items[4].metadata", "a key " + text_rule)
    assert not has("layers[0].items[6].body", "")
    assert has("layers[1].description", text_rule)
    assert has("profiles[0].name", text_rule)
    assert has("profiles[0].rules", "a key " + text_rule)
    assert has("profiles[0].rules.tickets.facets[1]", text_rule)
    assert has("profiles[0].rules.tickets.currentness.field", text_rule)


def test_validate_workspace__any_issue__never_carries_a_nul_or_surrogate_in_path_or_message():
    for issue in validate_workspace(BROKEN):
        text = issue.path + issue.message
        assert "\x00" not in text
        assert not any(0xD800 <= ord(character) <= 0xDFFF for character in text), issue


def test_validate_consumer__no_path__paths_are_relative_to_the_entry():
    issues = validate_consumer({"key": "Bad", "render": {"format": "html"}})

    assert [issue.path for issue in issues] == ["key", "render.format"]


def test_validate_item__valid_item__has_no_issues():
    item = {"path": "a", "title": "T" * 1000, "body": "b", "metadata": {"a": {"b": {"c": [1]}}}}

    assert validate_item(item, path="layers[0].items[0]") == []


def test_validate_layer__without_items__does_not_look_at_them():
    layer = {"key": "kb", "items": [{"path": " bad", "metadata": "not an object"}]}

    assert validate_layer(layer) == []
    assert [issue.path for issue in validate_layer(layer, items=True)] == [
        "items[0].path",
        "items[0].metadata",
    ]


def test_validate_layer__with_items__reports_a_duplicate_path_within_the_layer():
    layer = {"key": "kb", "items": [{"path": "a"}, {"path": "a"}]}

    issues = validate_layer(layer, path="layers[3]", items=True)

    assert [str(issue) for issue in issues] == [
        'layers[3].items[1].path: duplicate path "a" (first at layers[3].items[0])'
    ]


def test_validate_profile__unknown_layer_and_consumer__named_with_their_paths():
    profile = {
        "key": "p",
        "consumer": "ghost",
        "objective": "answer",
        "budget": 10,
        "rules": {"kb": {"mode": "inline"}, "nope": None},
    }

    issues = validate_profile(profile, path="profiles[0]", layer_keys=["kb"], consumer_keys=[])

    assert [str(issue) for issue in issues] == [
        'profiles[0].consumer: consumer "ghost" does not exist',
        'profiles[0].rules.nope: layer "nope" does not exist',
    ]


# -- merge_rule ----------------------------------------------------------------------------


def test_merge_rule__partial_fields__replace_the_saved_ones_and_keep_the_others():
    saved = {"mode": "retrieve", "priority": 5, "maxItems": 3}

    merged = merge_rule(saved, {"priority": 9, "order": "path"})

    assert merged == {"mode": "retrieve", "priority": 9, "maxItems": 3, "order": "path"}
    assert saved == {"mode": "retrieve", "priority": 5, "maxItems": 3}


def test_merge_rule__none_field__removes_it():
    assert merge_rule({"mode": "retrieve", "maxItems": 3}, {"maxItems": None}) == {
        "mode": "retrieve"
    }


def test_merge_rule__none_partial__means_the_default_rule():
    assert merge_rule({"mode": "retrieve"}, None) is None


def test_merge_rule__no_saved_rule__starts_from_nothing():
    assert merge_rule(None, {"mode": "on-demand", "order": None}) == {"mode": "on-demand"}


def test_merge_rule__partial_not_an_object__returned_for_the_validator_to_report():
    assert merge_rule({"mode": "inline"}, "inline") == "inline"


DOCUMENT = {
    "consumers": [{"key": "bot"}],
    "layers": [
        {"key": "kb", "items": [{"path": "a", "body": "Refunds."}, {"path": "b", "body": "x"}]}
    ],
    "profiles": [
        {
            "key": "p",
            "consumer": "bot",
            "objective": "answer",
            "budget": 100,
            "rules": {"kb": {"mode": "inline", "maxItems": 1, "priority": 3}},
        }
    ],
}
REQUEST = {"profile": "p", "now": "2026-11-29T12:00:00Z"}


@pytest.mark.parametrize(
    "partial",
    [{"maxItems": None}, {"maxItems": 2, "order": "path"}, None, {"participation": "exclude"}],
)
def test_with_profile_draft__partial_rule__resolves_as_the_merged_rule_saved(partial):
    document = copy.deepcopy(DOCUMENT)
    merged = merge_rule(document["profiles"][0]["rules"]["kb"], partial)
    if merged is None:
        del document["profiles"][0]["rules"]["kb"]
    else:
        document["profiles"][0]["rules"]["kb"] = merged

    draft = compile_workspace(DOCUMENT).with_profile_draft("p", rules={"kb": partial})

    assert draft.resolve(REQUEST) == compile_workspace(document).resolve(REQUEST)


def test_with_profile_draft__rule_key_with_a_nul__error_at_the_rules_mapping():
    with pytest.raises(WorkspaceError) as raised:
        compile_workspace(DOCUMENT).with_profile_draft("p", rules={"k\x00b": {}})

    assert raised.value.path == "profiles[0].rules"
