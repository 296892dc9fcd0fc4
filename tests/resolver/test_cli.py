"""The command line (SPEC §8), run as a subprocess exactly as a user runs it."""

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from resolver import resolve
from tests.resolver.test_conformance import match

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "profiles" / "demo" / "workspace.yaml"
CONFORMANCE = Path(__file__).resolve().parent / "conformance"
NOW = "2026-11-29T12:00:00Z"

# A small workspace: a required policy layer, a customer layer filtered by input, a KB.
WORKSPACE = {
    "version": 1,
    "consumers": [
        {"key": "assistant", "name": "Assistant", "render": {"format": "markdown"}},
        {"key": "reviewer", "name": "Reviewer", "render": {"format": "xml"}},
    ],
    "layers": [
        {
            "key": "policies",
            "name": "Policies",
            "items": [{"path": "refunds", "title": "Refunds", "body": "Refunds take 5 days."}],
        },
        {
            "key": "customer",
            "name": "Customer",
            "itemFilter": {"customer_id": "customer_id"},
            "items": [
                {
                    "path": "C-1",
                    "title": "Dana",
                    "body": "Plan Pro.",
                    "metadata": {"customer_id": "C-1"},
                },
                {
                    "path": "C-2",
                    "title": "Lee",
                    "body": "Plan Free.",
                    "metadata": {"customer_id": "C-2"},
                },
            ],
        },
        {
            "key": "kb",
            "name": "Knowledge base",
            "items": [{"path": "wallet", "title": "Wallet", "body": "Wallet refunds are instant."}],
        },
    ],
    "profiles": [
        {
            "key": "answer",
            "consumer": "assistant",
            "objective": "answer-ticket",
            "budget": 500,
            "rules": {
                "policies": {"required": True, "priority": 10},
                "customer": {"required": True, "priority": 5},
            },
        },
        {
            "key": "review",
            "consumer": "reviewer",
            "objective": "review",
            "budget": 500,
            "rules": {"customer": {"participation": "exclude"}},
        },
    ],
}
REQUEST = {"profile": "answer", "input": {"customer_id": "C-1"}, "now": NOW}


def run_cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "resolver", *map(str, args)],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def workspace_file(tmp_path):
    path = tmp_path / "workspace.json"
    path.write_text(json.dumps(WORKSPACE))
    return path


def write_json(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def error_of(completed):
    assert completed.returncode == 2, completed.stderr
    return json.loads(completed.stdout)["error"]


def api_resolution(request, document=WORKSPACE):
    return json.loads(json.dumps(resolve(document, request)))


# -- resolve -------------------------------------------------------------------------------


def test_resolve__request_from_file__prints_the_api_resolution(workspace_file, tmp_path):
    request_file = write_json(tmp_path, "request.json", REQUEST)

    completed = run_cli("resolve", workspace_file, "--request", f"@{request_file}")

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == api_resolution(REQUEST)


def test_resolve__request_as_json_argument__prints_the_api_resolution(workspace_file):
    completed = run_cli("resolve", workspace_file, "--request", json.dumps(REQUEST))

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == api_resolution(REQUEST)


def test_resolve__blocked_resolution__still_exits_zero(workspace_file):
    request = {"profile": "answer", "input": {}, "now": NOW}

    completed = run_cli("resolve", workspace_file, "--request", json.dumps(request))

    assert completed.returncode == 0, completed.stderr
    resolution = json.loads(completed.stdout)
    assert resolution["status"] == "BLOCKED"
    assert resolution["output"] is None


def test_resolve__convenience_flags_only__build_the_request(workspace_file, tmp_path):
    input_file = write_json(tmp_path, "input.json", {"customer_id": "C-2"})

    completed = run_cli(
        "resolve",
        workspace_file,
        "--profile",
        "answer",
        "--input",
        f"@{input_file}",
        "--now",
        NOW,
        "--format",
        "xml",
        "--availability",
        "kb=unknown",
    )

    assert completed.returncode == 0, completed.stderr
    expected = api_resolution(
        {
            "profile": "answer",
            "input": {"customer_id": "C-2"},
            "now": NOW,
            "format": "xml",
            "availability": {"kb": "unknown"},
        }
    )
    assert json.loads(completed.stdout) == expected
    assert expected["output"]["format"] == "xml"
    assert "Lee" in expected["output"]["text"]


def test_resolve__input_flag_as_json__selects_the_customers_items(workspace_file):
    completed = run_cli(
        "resolve",
        workspace_file,
        "--profile",
        "answer",
        "--input",
        '{"customer_id": "C-2"}',
        "--now",
        NOW,
    )

    assert completed.returncode == 0, completed.stderr
    layers = {layer["layer"]: layer for layer in json.loads(completed.stdout)["layers"]}
    assert layers["customer"]["rendered"]["items"] == ["C-2"]


def test_resolve__flags_and_request__flags_override_request_fields(workspace_file):
    request = {
        "profile": "review",
        "input": {"customer_id": "C-2"},
        "now": "2020-01-01",
        "format": "markdown",
        "availability": {"kb": "unavailable"},
    }

    completed = run_cli(
        "resolve",
        workspace_file,
        "--request",
        json.dumps(request),
        "--profile",
        "answer",
        "--input",
        '{"customer_id": "C-1"}',
        "--now",
        NOW,
        "--format",
        "xml",
        "--availability",
        "kb=unknown",
    )

    assert completed.returncode == 0, completed.stderr
    resolution = json.loads(completed.stdout)
    assert resolution["profile"]["key"] == "answer"
    assert resolution["now"] == NOW
    assert resolution["output"]["format"] == "xml"
    layers = {layer["layer"]: layer for layer in resolution["layers"]}
    assert layers["customer"]["rendered"]["items"] == ["C-1"]
    assert layers["kb"]["available"]["state"] == "UNKNOWN"


def test_resolve__repeated_availability_flags__apply_to_each_layer(workspace_file):
    completed = run_cli(
        "resolve",
        workspace_file,
        "--request",
        json.dumps(REQUEST),
        "--availability",
        "kb=unavailable",
        "--availability",
        "customer=unknown",
    )

    assert completed.returncode == 0, completed.stderr
    layers = {layer["layer"]: layer for layer in json.loads(completed.stdout)["layers"]}
    assert layers["kb"]["decision"]["reason"] == "LAYER_UNAVAILABLE"
    assert layers["customer"]["decision"]["reason"] == "AVAILABILITY_UNKNOWN"


def test_resolve__workspace_on_stdin_as_yaml__reads_it(tmp_path):
    completed = run_cli(
        "resolve", "-", "--request", json.dumps(REQUEST), stdin=yaml.safe_dump(WORKSPACE)
    )

    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == api_resolution(REQUEST)


def test_resolve__yaml_workspace_with_native_dates__reads_them_as_dates(tmp_path):
    # Given a YAML file whose metadata dates are unquoted YAML dates
    document = json.loads(json.dumps(WORKSPACE))
    document["layers"][2]["items"][0]["metadata"] = {"updated": dt.date(2026, 11, 20)}
    document["profiles"][0]["rules"]["kb"] = {"order": "recency"}
    path = tmp_path / "workspace.yaml"
    path.write_text(yaml.safe_dump(document))
    assert "updated: 2026-11-20\n" in path.read_text()

    completed = run_cli("resolve", path, "--request", json.dumps(REQUEST))

    assert completed.returncode == 0, completed.stderr
    layers = {layer["layer"]: layer for layer in json.loads(completed.stdout)["layers"]}
    assert layers["kb"]["materialized"]["items"][0]["date"] == "2026-11-20"


# -- errors --------------------------------------------------------------------------------


def test_resolve__invalid_workspace__prints_the_error_with_its_path_and_exits_2(tmp_path):
    document = json.loads(json.dumps(WORKSPACE))
    document["profiles"][0]["rules"]["kb"] = {"mode": "sideways"}
    path = write_json(tmp_path, "workspace.json", document)

    error = error_of(run_cli("resolve", path, "--request", json.dumps(REQUEST)))

    assert error["code"] == "INVALID_WORKSPACE"
    assert error["path"] == "profiles[0].rules.kb.mode"
    assert "profiles[0].rules.kb.mode" in error["message"]


def test_resolve__invalid_yaml_workspace__the_message_gives_the_entry_line_and_column(tmp_path):
    path = tmp_path / "workspace.yaml"
    document = json.loads(json.dumps(WORKSPACE))
    document["profiles"][0]["budget"] = -1
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    line = next(
        number
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if text.strip() == "budget: -1"
    )

    for command in ("resolve", "render"):
        error = error_of(run_cli(command, path, "--request", json.dumps(REQUEST)))

        assert error["code"] == "INVALID_WORKSPACE"
        assert error["path"] == "profiles[0].budget"
        profile = document["profiles"][0]["key"]
        assert error["message"].endswith(f"(profile {profile}, line {line}, column 11)")


def test_resolve__workspace_that_is_not_yaml__is_an_invalid_workspace(tmp_path):
    path = tmp_path / "workspace.yaml"
    path.write_text("layers: [unclosed\n  - {\n")

    error = error_of(run_cli("resolve", path, "--request", json.dumps(REQUEST)))

    assert error["code"] == "INVALID_WORKSPACE"


def test_resolve__unknown_profile__prints_profile_not_found_and_exits_2(workspace_file):
    error = error_of(run_cli("resolve", workspace_file, "--profile", "nope", "--now", NOW))

    assert error["code"] == "PROFILE_NOT_FOUND"
    assert error["path"] == "profile"


def test_resolve__unknown_pair__prints_profile_not_found_at_consumer(workspace_file):
    request = {"consumer": "assistant", "objective": "draft-reply", "now": NOW}

    error = error_of(run_cli("resolve", workspace_file, "--request", json.dumps(request)))

    assert error["code"] == "PROFILE_NOT_FOUND"
    assert error["path"] == "consumer"


@pytest.mark.parametrize(
    ("request_value", "path"),
    [
        ({"profile": "answer", "colour": "red"}, "colour"),
        ({"input": {}}, "profile"),
        ({"profile": "answer", "availability": {"nope": "unknown"}}, "availability.nope"),
        ({"profile": "answer", "input": {"message": ["a"]}}, "input.message"),
    ],
    ids=["unknown-field", "no-selection", "availability-of-missing-layer", "message-not-string"],
)
def test_resolve__bad_request__prints_invalid_request_and_exits_2(
    workspace_file, request_value, path
):
    error = error_of(run_cli("resolve", workspace_file, "--request", json.dumps(request_value)))

    assert error["code"] == "INVALID_REQUEST"
    assert error["path"] == path


@pytest.mark.parametrize(
    "arguments",
    [
        ["--request", "{not json"],
        ["--profile", "answer", "--availability", "kb"],
        ["--profile", "answer", "--format", "html"],
        ["--profile", "answer", "--input", "[1, 2]"],
        ["--profile", "answer", "--colour", "red"],
        ["--profile", "answer", "--now", "yesterday"],
    ],
    ids=[
        "request-not-json",
        "availability-without-state",
        "unknown-format",
        "input-not-an-object",
        "unknown-flag",
        "now-not-a-date",
    ],
)
def test_resolve__bad_usage__prints_invalid_request_and_exits_2(workspace_file, arguments):
    error = error_of(run_cli("resolve", workspace_file, *arguments))

    assert error["code"] == "INVALID_REQUEST"


def test_resolve__workspace_and_request_both_bad__reports_the_workspace_error(tmp_path):
    document = json.loads(json.dumps(WORKSPACE))
    document["layers"][0]["name"] = "Poli\x00cies"
    path = write_json(tmp_path, "workspace.json", document)

    error = error_of(run_cli("resolve", path, "--request", "{not json"))

    assert (error["code"], error["path"]) == ("INVALID_WORKSPACE", "layers[0].name")


def test_resolve__request_nested_deeper_than_64__invalid_request_at_the_root(workspace_file):
    request = '{"profile": "answer", "input": ' + "[" * 70 + "]" * 70 + "}"

    error = error_of(run_cli("resolve", workspace_file, "--request", request))

    assert (error["code"], error["path"]) == ("INVALID_REQUEST", "")


def test_resolve__lone_surrogate_in_the_request__invalid_request_printed_as_utf8(workspace_file):
    request = '{"profile": "answer", "input": {"customer_id": "C-1\\ud800"}}'

    error = error_of(run_cli("resolve", workspace_file, "--request", request))

    assert (error["code"], error["path"]) == ("INVALID_REQUEST", "input.customer_id")


def test_validate__yaml_alias_bomb__prints_the_loader_error_and_exits_2(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")

    completed = run_cli("validate", path)

    assert completed.returncode == 2
    assert completed.stdout == "YAML aliases add more than 100,000 nodes\n"


def test_cli__no_command__prints_invalid_request_and_exits_2():
    error = error_of(run_cli())

    assert error["code"] == "INVALID_REQUEST"


def test_resolve__request_file_missing__prints_invalid_request_and_exits_2(
    workspace_file, tmp_path
):
    error = error_of(run_cli("resolve", workspace_file, "--request", f"@{tmp_path / 'no.json'}"))

    assert error["code"] == "INVALID_REQUEST"


# -- render --------------------------------------------------------------------------------


@pytest.mark.parametrize("output_format", ["markdown", "xml"])
def test_render__resolved__prints_exactly_the_output_text(workspace_file, output_format):
    completed = run_cli(
        "render", workspace_file, "--request", json.dumps(REQUEST), "--format", output_format
    )

    assert completed.returncode == 0, completed.stderr
    expected = api_resolution({**REQUEST, "format": output_format})
    assert expected["status"] == "RESOLVED"
    assert completed.stdout == expected["output"]["text"]


def test_render__blocked__prints_nothing_and_the_blockers_on_stderr_and_exits_3(workspace_file):
    request = {"profile": "answer", "input": {"customer_id": "C-404"}, "now": NOW}

    completed = run_cli("render", workspace_file, "--request", json.dumps(request))

    assert completed.returncode == 3
    assert completed.stdout == ""
    reported = json.loads(completed.stderr)
    blockers = reported["blockers"] if isinstance(reported, dict) else reported
    assert blockers == [
        {
            "code": "MISSING_REQUIRED_CONTEXT",
            "layer": "customer",
            "detail": "NOT_APPLICABLE",
        }
    ]


def test_render__unknown_profile__prints_the_error_and_exits_2(workspace_file):
    error = error_of(run_cli("render", workspace_file, "--profile", "nope", "--now", NOW))

    assert error["code"] == "PROFILE_NOT_FOUND"


# -- validate ------------------------------------------------------------------------------


def test_validate__valid_workspace__prints_ok(workspace_file):
    completed = run_cli("validate", workspace_file)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_validate__several_errors__prints_one_per_line_in_document_order(tmp_path):
    document = json.loads(json.dumps(WORKSPACE))
    document["layers"][0]["colour"] = "red"
    document["layers"][1]["items"][1]["path"] = "C-1"
    document["profiles"][0]["budget"] = 0
    document["profiles"][1]["rules"]["kb"] = {"mode": "sideways"}
    path = write_json(tmp_path, "workspace.json", document)

    completed = run_cli("validate", path)

    assert completed.returncode == 2
    lines = completed.stdout.strip().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        "layers[0].colour",
        "layers[1].items[1].path",
        "profiles[0].budget",
        "profiles[1].rules.kb.mode",
    ]


def test_validate__rule_shared_by_a_yaml_alias__each_error_names_its_profile_and_line():
    # Given the demo workspace whose tickets rule, shared by two profiles, is invalid
    text = DEMO.read_text(encoding="utf-8").replace("maxItems: 3", "maxItems: -3", 1)
    line = text[: text.index("maxItems: -3")].count("\n") + 1
    alias_line = text[: text.index("tickets: *tickets")].count("\n") + 1

    completed = run_cli("validate", "-", stdin=text)

    assert completed.returncode == 2
    assert completed.stdout.splitlines() == [
        "profiles[0].rules.tickets.maxItems: must be an integer >= 0 "
        f"(rule support-answer/tickets, line {line}, column 17)",
        "profiles[1].rules.tickets.maxItems: must be an integer >= 0 "
        f"(rule support-answer-staging/tickets, line {line}, column 17, "
        f"through the alias on line {alias_line}, column 14)",
    ]


def test_validate__yaml_on_stdin__prints_ok():
    completed = run_cli("validate", "-", stdin=yaml.safe_dump(WORKSPACE))

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


# -- a sample of the conformance cases through the CLI -------------------------------------


def jsonable(value):
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [jsonable(item) for item in value]
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


CLI_SAMPLE = [
    "01-full-support-answer-every-stage-on-a-realistic-workspace",
    "02-missing-input-blocks-a-required-itemfilter-layer",
    "16-xml-with-includecurrentness-and-a-not-current-attribute",
    "22-selection-by-consumer-objective-and-environment",
    "24-unknown-profile-is-an-error",
    "32-invalid-workspace-a-bad-enum-names-its-path",
    "38-invalid-request-availability-for-a-layer-that-does-not-exist",
]


@pytest.mark.parametrize("stem", CLI_SAMPLE)
def test_conformance_case__through_the_cli__matches_its_expectation(stem, tmp_path):
    case = yaml.safe_load((CONFORMANCE / f"{stem}.yaml").read_text())
    workspace = write_json(tmp_path, "workspace.json", jsonable(case["workspace"]))
    request = write_json(tmp_path, "request.json", jsonable(case["request"]))

    completed = run_cli("resolve", workspace, "--request", f"@{request}")

    expected = dict(case["expect"])
    actual = json.loads(completed.stdout)
    if "error" in expected:
        assert completed.returncode == 2
        assert match({"error": expected["error"]}, actual) is None
        return
    assert completed.returncode == 0, completed.stderr
    records = {layer["layer"]: layer for layer in actual["layers"]}
    if "layerOrder" in expected:
        assert [layer["layer"] for layer in actual["layers"]] == expected.pop("layerOrder")
    for key, layer in expected.pop("layers", {}).items():
        assert match(layer, records[key], f"layers.{key}") is None
    assert match(expected, actual) is None
