"""Management commands: import_workspace, export_workspace, resolve and load_demo."""

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from profiles.import_export.documents import workspace_export
from profiles.models import Consumer, Item, Profile, Scenario, WorkspaceVersion
from tests.profiles.conftest import CONFORMANCE, NOW, normalize_document, small_workspace

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "profiles" / "demo"
FULL_CASE = CONFORMANCE / "01-full-support-answer-every-stage-on-a-realistic-workspace.yaml"


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write_yaml(tmp_path, name, document) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return path


def test_import_workspace__valid_file__imports_and_export_gives_it_back(tmp_path):
    source = write_yaml(tmp_path, "workspace.yaml", small_workspace())

    run("import_workspace", str(source))
    exported = run("export_workspace")

    assert normalize_document(yaml.safe_load(exported)) == normalize_document(small_workspace())


def test_import_workspace__broken_file__exits_2_listing_errors_and_writes_nothing(tmp_path):
    document = small_workspace()
    document["layers"][0]["items"][1]["path"] = document["layers"][0]["items"][0]["path"]
    document["profiles"][0]["budget"] = -1
    source = write_yaml(tmp_path, "broken.yaml", document)
    errors = StringIO()

    with pytest.raises(CommandError) as caught:
        call_command("import_workspace", str(source), stdout=StringIO(), stderr=errors)

    assert caught.value.returncode == 2
    lines = errors.getvalue().splitlines()
    assert any(
        line.startswith("layers[0].items[1].path:") and "docs/item-0000.md" in line
        for line in lines
    )
    assert any(line.startswith("profiles[0].budget:") for line in lines)
    assert Item.objects.count() == 0


def test_import_workspace__changes__output_names_them(tmp_path):
    run("import_workspace", str(write_yaml(tmp_path, "a.yaml", small_workspace())))
    document = small_workspace()
    document["profiles"][1]["budget"] = 900

    out = run("import_workspace", str(write_yaml(tmp_path, "b.yaml", document)))

    lines = out.splitlines()
    assert lines[0] == f"Imported {tmp_path / 'b.yaml'} (merge):"
    assert "  profiles: 1 updated (profile-1), 1 unchanged" in lines
    assert "  consumers: 2 unchanged" in lines


def test_import_workspace__rule_error_through_a_yaml_alias__prints_profile_and_line(tmp_path):
    text = (DEMO / "workspace.yaml").read_text(encoding="utf-8")
    text = text.replace("maxItems: 3", "maxItems: -3", 1)
    line = text[: text.index("maxItems: -3")].count("\n") + 1
    source = tmp_path / "demo.yaml"
    source.write_text(text, encoding="utf-8")
    errors = StringIO()

    with pytest.raises(CommandError):
        call_command("import_workspace", str(source), stdout=StringIO(), stderr=errors)

    lines = errors.getvalue().splitlines()
    assert lines[0] == (
        "profiles[0].rules.tickets.maxItems: must be an integer >= 0 "
        f"(rule support-answer/tickets, line {line}, column 17)"
    )
    assert lines[1].startswith(
        "profiles[1].rules.tickets.maxItems: must be an integer >= 0 "
        f"(rule support-answer-staging/tickets, line {line}, column 17, through the alias on line "
    )


def test_import_workspace__replace_flag__deletes_rows_the_file_lacks(tmp_path):
    run("import_workspace", str(write_yaml(tmp_path, "a.yaml", small_workspace(profiles=3))))

    run("import_workspace", "--replace", str(write_yaml(tmp_path, "b.yaml", small_workspace())))

    assert sorted(Profile.objects.values_list("key", flat=True)) == ["profile-0", "profile-1"]


def _tickets_file(tmp_path, lines, name="tickets.ndjson") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_import_workspace__items_of_a_layer__ingested_in_parts_with_progress(tmp_path, settings):
    run("import_workspace", str(write_yaml(tmp_path, "workspace.yaml", small_workspace())))
    layer = small_workspace()["layers"][0]["key"]
    settings.BULK_INGEST_MAX_LINES = 2
    lines = [{"path": f"T-{n}", "title": f"Ticket {n}"} for n in range(5)]
    lines.append({"op": "delete", "path": small_workspace()["layers"][0]["items"][0]["path"]})
    source = _tickets_file(tmp_path, lines)

    out = run("import_workspace", "--items", layer, str(source))
    again = run("import_workspace", "--items", layer, str(source))

    assert out.splitlines() == [
        "  2 of 6 operations applied",
        "  4 of 6 operations applied",
        "  6 of 6 operations applied",
        f"Ingested {source} into layer {layer}: 5 created, 0 updated, 1 deleted, 0 unchanged",
    ]
    assert again.splitlines()[-1].endswith("0 created, 0 updated, 0 deleted, 6 unchanged")
    stored = dict(Item.objects.filter(layer__key=layer).values_list("path", "title"))
    assert [stored[f"T-{n}"] for n in range(5)] == [f"Ticket {n}" for n in range(5)]
    assert small_workspace()["layers"][0]["items"][0]["path"] not in stored


def test_import_workspace__items_with_a_bad_line__exits_2_naming_it_and_writes_nothing(tmp_path):
    run("import_workspace", str(write_yaml(tmp_path, "workspace.yaml", small_workspace())))
    layer = small_workspace()["layers"][0]["key"]
    before = sorted(Item.objects.values_list("layer__key", "path", "title"))
    source = tmp_path / "tickets.json"
    source.write_text(json.dumps([{"path": "T-1"}, {"path": "T-2", "metadata": "text"}]))
    errors = StringIO()

    with pytest.raises(CommandError) as raised:
        call_command("import_workspace", "--items", layer, str(source), stderr=errors)

    assert raised.value.returncode == 2
    assert "nothing was written" in str(raised.value)
    assert "[1].metadata" in errors.getvalue()
    assert sorted(Item.objects.values_list("layer__key", "path", "title")) == before


def test_import_workspace__items_of_an_unknown_layer__exits_2(tmp_path):
    source = _tickets_file(tmp_path, [{"path": "T-1"}])

    with pytest.raises(CommandError, match='layer "nope" does not exist; nothing was written'):
        run("import_workspace", "--items", "nope", str(source))
    assert not Item.objects.exists()


def test_export_workspace__json_to_a_file__writes_the_document(tmp_path):
    run("import_workspace", str(write_yaml(tmp_path, "a.yaml", small_workspace())))
    target = tmp_path / "out.json"

    run("export_workspace", "-o", str(target))

    assert json.loads(target.read_text()) == workspace_export()


def test_resolve_command__same_request__prints_exactly_what_the_resolver_cli_prints(tmp_path):
    case = yaml.safe_load(FULL_CASE.read_text())
    workspace_file = write_yaml(tmp_path, "workspace.yaml", case["workspace"])
    run("import_workspace", str(workspace_file))
    flags = [
        "--profile",
        "support-answer",
        "--input",
        json.dumps(case["request"]["input"]),
        "--now",
        NOW,
        "--format",
        "xml",
        "--availability",
        "kb=unknown",
    ]

    from_database = run("resolve", *flags)
    from_cli = subprocess.run(
        [sys.executable, "-m", "resolver", "resolve", str(workspace_file), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout

    assert from_database == from_cli


def test_resolve_command__unknown_profile__prints_the_error_json_and_exits_2(tmp_path):
    run("import_workspace", str(write_yaml(tmp_path, "a.yaml", small_workspace())))
    out = StringIO()

    with pytest.raises(CommandError) as caught:
        call_command("resolve", "--profile", "nope", "--now", NOW, stdout=out, stderr=StringIO())

    assert caught.value.returncode == 2
    assert json.loads(out.getvalue())["error"]["code"] == "PROFILE_NOT_FOUND"


@pytest.fixture
def demo_files(tmp_path):
    """The demo files when they exist, else a conformance workspace with two scenarios."""
    if (DEMO / "workspace.yaml").exists() and (DEMO / "scenarios.yaml").exists():
        return DEMO / "workspace.yaml", DEMO / "scenarios.yaml"
    case = yaml.safe_load(FULL_CASE.read_text())
    workspace = write_yaml(tmp_path, "workspace.yaml", case["workspace"])
    scenarios = write_yaml(
        tmp_path,
        "scenarios.yaml",
        [
            {
                "name": "Refund question",
                "profile": "support-answer",
                "input": case["request"]["input"],
                "now": NOW,
                "default": True,
            },
            {"name": "QA review", "profile": "qa-review", "input": {}, "now": NOW},
        ],
    )
    return workspace, scenarios


def test_load_demo__run_twice__second_run_changes_nothing(demo_files):
    workspace, scenarios = demo_files
    first = run("load_demo", "--workspace", str(workspace), "--scenarios", str(scenarios))
    token = WorkspaceVersion.current_token()
    state = (
        workspace_export(),
        list(Scenario.objects.order_by("name").values()),
        get_user_model().objects.get(username="demo").password,
    )

    second = run("load_demo", "--workspace", str(workspace), "--scenarios", str(scenarios))

    assert "Log in at http://127.0.0.1:8000/ as demo / " in first
    assert "changepassword demo" in second
    assert "Log in at" not in second
    assert WorkspaceVersion.current_token() == token
    assert (
        workspace_export(),
        list(Scenario.objects.order_by("name").values()),
        get_user_model().objects.get(username="demo").password,
    ) == state
    demo = get_user_model().objects.get(username="demo")
    assert demo.is_staff and demo.is_superuser
    assert Scenario.objects.filter(is_default=True).exists()
    assert Consumer.objects.exists()


def test_load_demo__every_scenario__resolves_against_the_loaded_workspace(demo_files):
    from profiles.resolution.services import profile_resolve

    workspace, scenarios = demo_files
    run("load_demo", "--workspace", str(workspace), "--scenarios", str(scenarios), "--no-user")

    for scenario in Scenario.objects.select_related("profile"):
        resolution = profile_resolve(profile=scenario.profile, request=scenario.as_request())
        assert resolution["profile"]["key"] == scenario.profile.key


def test_demo_workspace__through_the_database__exports_and_resolves_like_the_file():
    from profiles.import_export.documents import workspace_parse
    from profiles.resolution.services import workspace_resolve
    from resolver import resolve

    document = workspace_parse(text=(DEMO / "workspace.yaml").read_text(encoding="utf-8"))
    scenarios = yaml.safe_load((DEMO / "scenarios.yaml").read_text(encoding="utf-8"))
    run("load_demo", "--no-user")

    assert normalize_document(workspace_export()) == normalize_document(document)
    for entry in scenarios:
        request = {
            key: value
            for key, value in {
                "profile": entry["profile"],
                "input": entry.get("input") or {},
                "now": entry.get("now"),
                "format": entry.get("format"),
                "availability": entry.get("availability"),
            }.items()
            if value is not None
        }
        assert json.dumps(workspace_resolve(request=request)) == json.dumps(
            resolve(document, request)
        ), entry["name"]


def test_load_demo__url_given__sign_in_hint_names_it(demo_files):
    workspace, scenarios = demo_files

    output = run(
        "load_demo",
        "--workspace",
        str(workspace),
        "--scenarios",
        str(scenarios),
        "--url",
        "http://127.0.0.1:8123/",
    )

    assert "Log in at http://127.0.0.1:8123/ as demo / " in output


def make_run_commands() -> list[list[str]]:
    """Return the ``manage.py`` commands ``make run`` runs before serving, as it runs them."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    commands = []
    for line in recipe.splitlines():
        line = line.strip().replace("$(HOST)", "127.0.0.1").replace("$(PORT)", "8000")
        if line.startswith("$(PY) manage.py "):
            commands.append(line.removeprefix("$(PY) manage.py ").split())
    return commands


def make_run_start() -> str:
    """Run what ``make run`` runs before it serves; return what it printed."""
    out, err = StringIO(), StringIO()
    for command in make_run_commands():
        call_command(*command, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_make_run__started_again_after_edits_and_an_applied_change_request__keeps_them_and_serves(
    client,
):
    from profiles.authoring.profiles import profile_update
    from profiles.models import ProfileVersion
    from profiles.safechange.change_requests import change_request_apply, change_request_create
    from profiles.versioning.environments import environment_update

    # Given the studio started once (the demo loaded into the empty workspace),
    assert [command[0] for command in make_run_commands()] == ["migrate", "load_demo"]
    first = make_run_start()
    assert "Log in at http://127.0.0.1:8000/ as demo / " in first
    # a user's edit of a demo profile, and production protected with a change request applied,
    lee = get_user_model().objects.create_user("lee", password="a-long-password-1")
    profile_update(key="support-answer-staging", changes={"budget": 2222}, user=lee)
    environment_update(key="production", requires_change_request=True, approvals=0, user=lee)
    change_request = change_request_create(
        profile_key="support-answer", title="Tighter budget", changes={"budget": 1111}, user=lee
    )
    change_request_apply(pk=change_request.pk, user=lee)
    versions = list(ProfileVersion.objects.order_by("pk").values_list("pk", flat=True))
    token = WorkspaceVersion.current_token()

    # when the studio is started again,
    second = make_run_start()

    # then it says why the demo was not loaded, changes nothing, still gives the sign-in hint,
    assert "The workspace already has material; the demo was not loaded" in second
    assert "load_demo --reset" in second
    assert "changepassword demo" in second
    assert "Traceback" not in second
    assert Profile.objects.get(key="support-answer-staging").budget == 2222
    assert Profile.objects.get(key="support-answer").budget == 1111
    assert list(ProfileVersion.objects.order_by("pk").values_list("pk", flat=True)) == versions
    assert WorkspaceVersion.current_token() == token
    # and the studio answers.
    client.force_login(get_user_model().objects.get(username="demo"))
    assert client.get("/", follow=True).status_code == 200


def production_unprotected() -> None:
    """Lift the protection the demo starts with, for a test that edits production directly."""
    from profiles.versioning.environments import environment_update

    environment_update(key="production", requires_change_request=False, approvals=1, user=None)


def test_load_demo__reset_with_production_protected__replaces_and_records_the_reset():
    from profiles.authoring.profiles import profile_update
    from profiles.models import ProfileVersion
    from profiles.versioning.environments import environment_update

    # Given the demo with an edit (made while production was not protected), a scenario of the
    # user's own and production protected,
    run("load_demo", "--no-user")
    production_unprotected()
    profile_update(key="support-answer", changes={"budget": 999})
    Scenario.objects.create(
        name="Mine", profile=Profile.objects.get(key="support-answer"), input={}
    )
    environment_update(key="production", requires_change_request=True, approvals=1, user=None)

    # when the operator resets it, confirming on the command line,
    output = run("load_demo", "--reset", "--yes", "--no-user")

    # then the demo is back, production included, and its version names the reset.
    assert "Demo workspace reset" in output
    assert Profile.objects.get(key="support-answer").budget == 1200
    assert not Scenario.objects.filter(name="Mine").exists()
    assert Scenario.objects.exists()
    latest = ProfileVersion.objects.filter(profile_key="support-answer").order_by("-number")[0]
    assert (latest.source, latest.message, latest.protection_bypassed, latest.author) == (
        "reset",
        "load_demo --reset",
        True,
        None,
    )


def test_load_demo__reset_not_confirmed__changes_nothing(monkeypatch):
    from profiles.authoring.profiles import profile_update

    run("load_demo", "--no-user")
    production_unprotected()
    profile_update(key="support-answer", changes={"budget": 999})
    token = WorkspaceVersion.current_token()
    monkeypatch.setattr("builtins.input", lambda prompt: "yes")

    with pytest.raises(CommandError, match="reset cancelled; nothing was changed"):
        run("load_demo", "--reset", "--no-user")

    assert Profile.objects.get(key="support-answer").budget == 999
    assert WorkspaceVersion.current_token() == token
