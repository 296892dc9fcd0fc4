"""Document loading and writing (resolver.documents): SPEC §2.2 document limits, dates, YAML."""

import datetime as dt
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver import RequestError, WorkspaceError, compile_workspace
from resolver.documents import (
    _ANCHOR,
    RECURSIVE_ALIAS,
    TOO_DEEP,
    TOO_MANY_ALIAS_NODES,
    _construct_plain,
    _FastDumper,
    _FastLoader,
    _NotPlain,
    _PureLoader,
    _read_yaml,
    dump_yaml,
    json_depth,
    load_document,
    load_json,
)

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
DEMO = ROOT / "profiles" / "demo" / "workspace.yaml"
CASE_FILES = sorted((HERE / "conformance").glob("*.yaml")) + sorted((HERE / "cases").glob("*.yaml"))
LOADERS = [loader for loader in (_FastLoader, _PureLoader) if loader is not None]


def refusal(text) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as raised:
        load_document(text)
    return raised.value


def nested_alias_bomb() -> str:
    """Return the classic "billion laughs": nine levels, each nine aliases of the one below."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


def pure_pyyaml_dump(document) -> str:
    """Return the text the project has always written (PyYAML's pure-Python safe dumper)."""
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


# -- loading ---------------------------------------------------------------------------------


def test_load_document__json_text__parsed_as_json():
    assert load_document('{"version": 1, "layers": []}') == {"version": 1, "layers": []}


def test_load_document__yaml_bytes__decoded_and_parsed():
    assert load_document("name: Café\n".encode()) == {"name": "Café"}


def test_load_document__bytes_not_utf8__invalid_workspace_at_the_root():
    error = refusal(b"name: \xff\n")

    assert (error.code, error.path) == ("INVALID_WORKSPACE", "")
    assert "not UTF-8" in error.message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\nb: 2\na: 3\n", 'line 3: duplicate key "a" (first on line 1)'),
        ('{"a": 1, "a": 2}', ""),
    ],
)
def test_load_document__duplicate_key__refused_with_its_line(text, where):
    assert 'duplicate key "a"' in refusal(text).message
    assert where in refusal(text).message


def test_load_document__yaml_syntax_error__names_line_and_column():
    assert refusal("a: [1, 2\nb: 3\n").message.startswith("line ")


def test_load_document__integer_beyond_python_conversion_limit__a_clean_loader_error():
    for text in ("1" * 5000, "a: " + "1" * 5000):
        assert refusal(text).path == ""


# -- SPEC §2.2: aliases -------------------------------------------------------------------------


def test_load_document__nested_alias_bomb__refused_by_the_alias_limit():
    text = nested_alias_bomb()

    error = refusal(text)

    assert len(text.encode()) < 600
    assert (error.code, error.path, error.message) == (
        "INVALID_WORKSPACE",
        "",
        TOO_MANY_ALIAS_NODES,
    )


def aliases_adding(count: int, *, extra: int = 0) -> str:
    """Return YAML whose aliases add exactly ``count * 1,000 + extra`` nodes."""
    anchored = "[" + ",".join(["x"] * 999) + "]"  # a sequence and 999 scalars: 1,000 nodes
    lines = [f"base: &base {anchored}", "scalar: &s y", "copies:"]
    lines += ["- *base"] * count
    lines += ["- *s"] * extra
    return "\n".join(lines) + "\n"


def test_load_document__aliases_adding_exactly_100000_nodes__accepted():
    document = load_document(aliases_adding(100))

    assert len(document["copies"]) == 100


def test_load_document__aliases_adding_100001_nodes__refused():
    assert refusal(aliases_adding(100, extra=1)).message == TOO_MANY_ALIAS_NODES


def test_load_document__aliased_mapping__its_keys_count_as_nodes():
    # 500 pairs: 1 + 500 keys + 500 values = 1,001 nodes; 100 copies add 100,100 nodes
    # (50,100 if the keys were not counted).
    mapping = "{" + ", ".join(f"k{n}: v" for n in range(500)) + "}"
    text = f"base: &base {mapping}\ncopies:\n" + "- *base\n" * 100

    assert refusal(text).message == TOO_MANY_ALIAS_NODES
    assert (
        len(load_document(f"base: &base {mapping}\ncopies:\n" + "- *base\n" * 99)["copies"]) == 99
    )


def test_load_document__alias_of_a_node_holding_aliases__counts_its_expansion():
    # inner: 1 + 999 = 1,000 nodes. outer holds 49 aliases of it, which add 49,000 nodes, and
    # is 49,001 nodes expanded: one copy of it adds 49,001 (98,001 in all), two 98,002
    # (147,002 in all; counting only outer's own 50 nodes would have made it 49,100).
    inner = "[" + ",".join(["x"] * 999) + "]"
    outer = "[" + ",".join(["*inner"] * 49) + "]"
    text = f"inner: &inner {inner}\nouter: &outer {outer}\ncopies: [*outer]\n"

    assert load_document(text)["copies"][0][48][998] == "x"
    assert refusal(text.replace("[*outer]", "[*outer, *outer]")).message == TOO_MANY_ALIAS_NODES


def test_load_document__alias_inside_its_own_anchor__refused_as_recursive():
    assert refusal("a: &x [1, *x]\n").message == RECURSIVE_ALIAS


def test_load_document__merge_key_alias__still_merges():
    document = load_document("base: &b {x: 1}\nitem:\n  <<: *b\n  y: 2\n")

    assert document["item"] == {"x": 1, "y": 2}


# -- SPEC §2.2: nesting ------------------------------------------------------------------------


def flow(depth: int, opener="[", closer="]") -> str:
    return opener * depth + closer * depth


def block(depth: int) -> str:
    # depth levels of block mappings: "a:\n  a:\n    ... a: 1"
    return (
        "".join("  " * level + "a:\n" for level in range(depth - 1)) + "  " * (depth - 1) + "a: 1\n"
    )


@pytest.mark.parametrize("make", [flow, block, lambda depth: flow(depth, '{"a":', "}")])
def test_load_document__nested_64_levels__accepted(make):
    text = make(64) if make is not flow else flow(64)
    if text.startswith('{"a":'):
        text = '{"a":' * 63 + "1" + "}" * 63  # 63 objects holding a number; plus [ ] below
        text = "[" + text + "]"
    assert load_document(text) is not None


@pytest.mark.parametrize("depth", [65, 1_000, 5_000, 100_000])
def test_load_document__json_nested_deeper_than_64__refused_before_parsing(depth):
    error = refusal(flow(depth))

    assert (error.path, error.message) == ("", TOO_DEEP)


@pytest.mark.parametrize("depth", [65, 1_200])
def test_load_document__yaml_block_nested_deeper_than_64__refused(depth):
    assert refusal(block(depth)).message == TOO_DEEP


def test_load_document__yaml_flow_deeper_than_libyamls_own_limit__refused_as_too_deep():
    assert refusal("a: " + flow(2_000)).message == TOO_DEEP


def test_load_document__alias_makes_the_nesting_deeper_than_64__refused():
    deep = flow(40)
    text = f"a: &a {deep}\nb: [{'[' * 30}*a{']' * 30}]\n"

    assert refusal(text).message == TOO_DEEP


def test_load_document__brackets_inside_json_strings__not_counted_as_nesting():
    text = json.dumps({"title": "[" * 100 + '\\"{' * 50, "list": [[["x"]]]})

    assert load_document(text)["list"] == [[["x"]]]


_JSON_VALUES = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet="[{a", max_size=3), children, max_size=3)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, wrap=st.integers(min_value=0, max_value=70))
def test_load_json__refused_as_too_deep_exactly_when_its_nesting_is_deeper_than_64(value, wrap):
    # The bracket count that spares most texts the exact measure never changes an answer.
    text = "[" * wrap + json.dumps(value) + "]" * wrap
    deeper = json_depth(text) > 64

    try:
        loaded = load_json(text)
    except RequestError as exc:
        assert (deeper, exc.message) == (True, TOO_DEEP)
    else:
        assert not deeper
        assert loaded == json.loads(text)


# -- SPEC §3: timestamps that are not dates --------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "9999-12-31T23:00:00-05:00",
        "0001-01-01T00:00:00+01:00",
        "0000-01-01",
        "0000-06-01T00:00:00Z",
        "2026-02-30",
        "2026-11-20T10:00:00+25:00",
    ],
)
def test_load_document__yaml_timestamp_that_is_no_date__loaded_as_written(written):
    assert load_document(f"updated: {written}\n") == {"updated": written}


@pytest.mark.parametrize(
    ("written", "loaded"),
    [
        ("2026-11-20", dt.date(2026, 11, 20)),
        ("0999-05-01", dt.date(999, 5, 1)),
        ("9999-12-31T23:59:59.9999999Z", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, dt.UTC)),
        ("0001-01-01T01:00:00+01:00", dt.datetime(1, 1, 1, 0, 0, tzinfo=dt.UTC)),
    ],
)
def test_load_document__yaml_timestamp_within_years_1_to_9999__loaded_as_a_date(written, loaded):
    value = load_document(f"updated: {written}\n")["updated"]

    assert value == loaded
    assert type(value) is type(loaded)


def test_load_document__out_of_range_timestamp_in_metadata__resolves_as_undated():
    text = """
consumers: [{key: bot}]
layers:
- key: kb
  items:
  - {path: a, body: A, metadata: {updated: 9999-12-31T23:00:00-05:00}}
profiles:
- key: p
  consumer: bot
  objective: o
  budget: 100
  rules: {kb: {currentness: {maxAgeDays: 1, onUnknown: warn}}}
"""
    resolution = compile_workspace(load_document(text)).resolve(
        {"profile": "p", "now": "2026-11-29T12:00:00Z"}
    )

    assert resolution["currentness"] == "UNKNOWN"


# -- SPEC §2.2: escaped surrogates ----------------------------------------------------------


def test_load_document__escaped_surrogate_pair__one_character():
    assert load_document('title: "\\ud83d\\ude00 ok"\n') == {"title": "\U0001f600 ok"}


def test_load_document__escaped_lone_surrogate__kept_for_validation_to_refuse():
    assert load_document('title: "\\ud800"\n') == {"title": "\ud800"}


def test_load_document__json_escaped_surrogate_pair__one_character():
    assert load_document('{"title": "\\ud83d\\ude00"}') == {"title": "\U0001f600"}


# -- YAML values that are no JSON data -------------------------------------------------------

ITEM_TEXT = "layers:\n- key: kb\n  items:\n  - path: a.md\n    metadata:\n      {value}\n"
NOT_JSON_TAGS = [
    pytest.param("blob: !!binary aGVsbG8=", "!!binary", id="binary"),
    pytest.param("blob: !<tag:yaml.org,2002:binary> aGVsbG8=", "!!binary", id="binary-verbatim"),
    pytest.param("blob: !!set {x: null, y: null}", "!!set", id="set"),
    pytest.param("blob: !!omap [x: 1, y: 2]", "!!omap", id="omap"),
    pytest.param("blob: !!pairs [x: 1, x: 2]", "!!pairs", id="pairs"),
]


@pytest.mark.parametrize("loader", LOADERS, ids=lambda loader: loader.__name__)
@pytest.mark.parametrize(("value", "tag"), NOT_JSON_TAGS)
def test_load_document__yaml_tag_building_no_json_value__refused_with_its_path_and_line(
    loader, value, tag
):
    text = ITEM_TEXT.format(value=value)

    with pytest.raises(WorkspaceError) as raised:
        _read_yaml(text, loader)

    error = raised.value
    assert error.code == "INVALID_WORKSPACE"
    assert error.path == "layers[0].items[0].metadata.blob"
    assert error.message.startswith(f"line 6, column 13: YAML {tag} ")
    assert "JSON" in error.message


def test_load_document__tag_handle_declared_by_a_directive__refused_too():
    text = "%TAG !std! tag:yaml.org,2002:\n---\nversion: 1\nlist: [a, !std!set {x: null}]\n"

    assert refusal(text).path == "list[1]"


def test_load_document__not_json_tag_on_a_mapping_key__refused_at_the_mapping():
    assert refusal("meta:\n  ? !!binary aGVsbG8=\n  : 1\n").path == "meta"


def test_load_document__python_tag__refused_by_the_safe_loader():
    error = refusal("a: !!python/object/apply:os.system [ls]\n")

    assert error.path == ""
    assert "could not determine a constructor" in error.message


def test_load_document__json_compatible_explicit_tags__loaded():
    text = "a: !!str 1\nb: !!int '2'\nc: !!float 3\nd: !!null ''\ne: !!seq [x]\nf: !!map {x: 1}\n"

    assert load_document(text) == {"a": "1", "b": 2, "c": 3.0, "d": None, "e": ["x"], "f": {"x": 1}}


# -- both YAML loaders agree -----------------------------------------------------------------


@pytest.mark.parametrize("case_file", [DEMO, *CASE_FILES], ids=lambda path: path.stem)
def test_load_document__every_case_and_the_demo__same_document_as_the_pure_loader(case_file):
    text = case_file.read_text(encoding="utf-8")

    # (load_document falls back to the pure loader for escaped surrogates libyaml refuses.)
    assert load_document(text) == _read_yaml(text, _PureLoader)


@pytest.mark.parametrize("loader", LOADERS, ids=lambda loader: loader.__name__)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (nested_alias_bomb(), TOO_MANY_ALIAS_NODES),
        (block(65), TOO_DEEP),
        ("a: &x [*x]\n", RECURSIVE_ALIAS),
    ],
)
def test_yaml_loaders__over_a_limit__refuse_alike(loader, text, message):
    with pytest.raises(Exception) as raised:
        _read_yaml(text, loader)

    assert str(raised.value) == message


# -- libyaml's loader builds plain documents itself, with PyYAML's results and errors ---------


class _PyYAMLConstruction(_FastLoader):
    """The libyaml loader with PyYAML's own constructor for every document (the reference)."""

    plain_construction = False


def typed(value):
    """Return ``value`` with every scalar's type beside it (1, 1.0 and True compare equal)."""
    if isinstance(value, dict):
        return {typed(key): typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, repr(value))


def loaded_both_ways(text: str):
    """Return (result or error text) of the fast construction and of PyYAML's."""
    outcomes = []
    for loader in (_FastLoader, _PyYAMLConstruction):
        try:
            outcomes.append(typed(_read_yaml(text, loader)))
        except Exception as exc:  # the errors must be the same too
            outcomes.append(f"{type(exc).__name__}: {exc}")
    return outcomes


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: 1.5\nc: true\nd: ~\ne: 2026-11-20\nf: 2026-11-20 10:00:00+01:00\ng: '1'\n",
        "a: 0x1F\nb: 0o17\nc: 1_000\nd: .inf\ne: -.Inf\nf: .nan\ng: yes\nh: Off\n",
        "a: 0000-01-01\nb: 2026-02-30\nc: 1e3\nd: +12\ne: 190:20:30\n",
        "? [a, b]\n: 1\n",  # a sequence as a key: refused
        "a: 1\n1: 2\n1.0: 3\n",  # 1 and 1.0 are the same key
        "{true: a, 1: b}\n",
        "a: !!str 12\nb: !!int '12'\nc: !!float 1\nd: !!binary aGk=\n",
        "a: !!set {x, y}\n",
        "a: !!omap [x: 1, y: 2]\nb: !!pairs [x: 1]\n",
        "a: !custom x\n",
        "base: {x: 1}\nitem: {<<: {x: 2, z: 3}, y: 2}\n",
        "item:\n  <<: [{x: 1}, {x: 2, w: 0}]\n  y: 2\n",
        "a: &a {x: [1, 2]}\nb: *a\nc: [*a, *a]\n",
        "a: &s text\nb: *s\n",
        "a: 1\nb: 2\na: 3\n",
        "- " + "1" * 5000 + "\n",
        "= : 1\n",
        "!!map {a: 1}\n",
        "--- !!seq [1]\n",
        "'': 1\n? ''\n",
        "",
        "just text\n",
    ],
)
def test_read_yaml__plain_construction__same_document_or_error_as_pyyamls_constructor(text):
    fast, reference = loaded_both_ways(text)

    assert fast == reference


LOADED_SCALARS = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.dates(),
    st.datetimes(timezones=st.just(dt.UTC)),
)


@settings(max_examples=200, deadline=None)
@given(
    document=st.recursive(
        LOADED_SCALARS,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(LOADED_SCALARS, inner, max_size=4)
        ),
        max_leaves=30,
    ),
    flow_style=st.sampled_from([False, True, None]),
)
def test_read_yaml__any_document__same_as_pyyamls_constructor(document, flow_style):
    text = yaml.safe_dump(document, default_flow_style=flow_style, allow_unicode=True)

    fast, reference = loaded_both_ways(text)

    assert fast == reference


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(
        st.text(max_size=30),
        st.sampled_from(
            [
                "",
                "~",
                "null",
                "Null",
                "y",
                "Yes",
                "off",
                "0",
                "-0",
                "0x1A",
                "1_0",
                "1e5",
                ".5",
                "-.inf",
                ".NaN",
                "2026-11-20",
                "2026-11-20t10:00:00Z",
                "<<",
                "=",
                "190:20:30",
            ]
        ),
    ),
    implicit=st.tuples(st.booleans(), st.booleans()),
)
def test_quick_resolving__any_scalar__same_tag_as_pyyamls_resolver(value, implicit):
    loader = _FastLoader("")
    try:
        for kind in (yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode):
            assert loader.resolve(kind, value, implicit) == yaml.resolver.Resolver.resolve(
                loader, kind, value, implicit
            )
    finally:
        loader.dispose()
    assert _FastDumper.resolve is _FastLoader.resolve


ANCHOR_TEXT = st.lists(
    st.sampled_from([*"&&&a1 -:?,[]{}'\"!#|>\n\t", "\u2028", "\x85", "\ufeff", "é", "*a", "--- "]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=ANCHOR_TEXT)
def test_anchor_pattern__any_text_libyaml_reads_an_anchor_in__matches(text):
    try:
        tokens = list(yaml.scan(text, Loader=_FastLoader))
    except yaml.YAMLError:
        tokens = []  # a text libyaml refuses is refused whatever the pattern says
    if any(isinstance(token, yaml.AnchorToken) for token in tokens):
        assert _ANCHOR.search(text)


def composed(text: str):
    loader = _FastLoader(text)
    try:
        return loader, loader.get_single_node()
    finally:
        loader.dispose()


def test_construct_plain__plain_document__built_without_pyyamls_constructor():
    loader, node = composed("a: [1, 2.5, true, ~, 2026-11-20, text]\nb: {c: 'd'}\n")

    assert _construct_plain(loader, node, shared=None) == {
        "a": [1, 2.5, True, None, dt.date(2026, 11, 20), "text"],
        "b": {"c": "d"},
    }


@pytest.mark.parametrize(
    "text",
    ["a: 1\na: 2\n", "a: {<<: {b: 1}}\n", "a: !!set {b}\n", "a: !!binary aGk=\n", block(65)],
)
def test_construct_plain__anything_else__left_to_pyyamls_constructor(text):
    loader, node = composed(text)

    with pytest.raises(_NotPlain):
        _construct_plain(loader, node, shared=None)


@pytest.mark.parametrize(
    "text",
    ["a: &x 1\n", "- &x 1\n", "&x a: 1\n", "[&x 1, *x]", "{a: &x 1}", '{"a":&x 1}', "\ufeff&x 1"],
)
def test_anchor_pattern__anchor_anywhere__matches(text):
    assert _ANCHOR.search(text)


# -- load_json -------------------------------------------------------------------------------


def test_load_json__request_body__parsed():
    assert load_json(b'{"profile": "p", "input": {"message": "hi"}}') == {
        "profile": "p",
        "input": {"message": "hi"},
    }


@pytest.mark.parametrize("text", [flow(65), flow(5_000), "{" * 100_000])
def test_load_json__nested_deeper_than_64__invalid_request_at_the_root(text):
    with pytest.raises(RequestError) as raised:
        load_json(text)

    assert (raised.value.code, raised.value.path, raised.value.message) == (
        "INVALID_REQUEST",
        "",
        TOO_DEEP,
    )


def test_load_json__max_depth_given__applies_it():
    assert load_json(flow(3), max_depth=3) == [[[]]]
    with pytest.raises(RequestError):
        load_json(flow(4), max_depth=3)


@pytest.mark.parametrize("text", ["{", "x", b"\xff", "1" * 5000])
def test_load_json__not_json__invalid_request_at_the_root(text):
    with pytest.raises(RequestError) as raised:
        load_json(text)

    assert raised.value.path == ""


def test_load_json__error_class_given__raises_it():
    with pytest.raises(WorkspaceError):
        load_json("{", error=WorkspaceError)


# -- dump_yaml -------------------------------------------------------------------------------


@pytest.mark.parametrize("case_file", [DEMO, *CASE_FILES], ids=lambda path: path.stem)
def test_dump_yaml__demo_and_every_case_workspace__byte_identical_to_pure_pyyaml(case_file):
    document = load_document(case_file.read_text(encoding="utf-8"))
    workspace = document.get("workspace", document)

    assert dump_yaml(workspace) == pure_pyyaml_dump(workspace)
    assert dump_yaml(document) == pure_pyyaml_dump(document)


def test_dump_yaml__demo_workspace__loads_back_equal():
    document = load_document(DEMO.read_text(encoding="utf-8"))

    assert load_document(dump_yaml(document)) == document


def test_dump_yaml__shared_objects__written_with_the_same_anchors_and_aliases():
    shared = {"customer_id": "C-1", "tags": ["a", "b"]}
    document = {
        "layers": [
            {
                "key": "kb",
                "items": [
                    {"path": "a", "body": "tab\there", "metadata": shared},
                    {"path": "b", "metadata": shared},
                ],
            }
        ]
    }

    assert dump_yaml(document) == pure_pyyaml_dump(document)


# Characters libyaml and PyYAML treat differently, line breaks, quotes and YAML indicators.
TRICKY_TEXT = st.lists(
    st.sampled_from(
        [
            *"ab cd  ef\n\n'\"#:-?,[]{}&*!|>%@`~\\",
            *["\t", "\r", "\x85", "\u2028", "\u2029", "\xa0", "é", "日", "\U0001f389", "\x00"],
            *["\x7f", "\ufeff", "\n ", " \n", "word ", "word ", "word ", "yes", "null", "1.5"],
        ]
    ),
    max_size=120,
).map("".join)
SCALARS = st.one_of(
    TRICKY_TEXT,
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.dates(),
)
METADATA = st.dictionaries(
    st.text(max_size=12) | TRICKY_TEXT,
    st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    max_size=3,
)
ITEMS = st.lists(
    st.fixed_dictionaries(
        {"path": st.text(min_size=1, max_size=20), "title": TRICKY_TEXT, "body": TRICKY_TEXT},
        optional={"metadata": METADATA},
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    layers=st.lists(
        st.fixed_dictionaries(
            {"key": st.just("kb"), "name": TRICKY_TEXT, "items": ITEMS},
            optional={"description": TRICKY_TEXT},
        ),
        max_size=3,
    ),
    profile_name=TRICKY_TEXT,
)
def test_dump_yaml__any_workspace_text__byte_identical_to_pure_pyyaml(layers, profile_name):
    document = {
        "version": 1,
        "consumers": [{"key": "bot"}],
        "layers": layers,
        "profiles": [{"key": "p", "name": profile_name}],
    }

    assert dump_yaml(document) == pure_pyyaml_dump(document)
