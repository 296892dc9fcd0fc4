"""Imports in sequence (issue 33): after each import the stored workspace is the file.

A profile whose selection (consumer, objective, environment) an import changes is parked out
of the way of the others before the profiles are written; whatever part of its selection
changes, the export then equals the file and every resolution through the database equals
what ``python -m resolver resolve`` prints for the file, through every door of the import.
"""

import contextlib
import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.import_export.jobs import import_job_start
from profiles.models import Consumer, ImportJob, Layer, Profile
from profiles.resolution.services import workspace_resolve_versioned
from resolver import ResolverError
from resolver.cli import main as resolver_cli
from resolver.documents import dump_yaml
from resolver.report import json_text
from tests.profiles.conftest import NOW, WORKSPACE_CASES, normalize_document

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
CASES = dict(WORKSPACE_CASES)
DOORS = ("service", "command", "job")
ENVIRONMENTS = (None, "production", "staging")


def import_file(path: Path, *, mode: str, door: str) -> None:
    """Import the file through one door of the import (the service, manage.py, a job)."""
    text = path.read_text(encoding="utf-8")
    if door == "service":
        workspace_import(text=text, mode=mode)
    elif door == "command":
        flags = ["--replace"] if mode == "replace" else []
        call_command("import_workspace", str(path), *flags, stdout=io.StringIO())
    else:
        job = import_job_start(text=text, mode=mode)
        job.refresh_from_db()
        assert job.status == ImportJob.Status.SUCCEEDED, job.error


def cli_answer(path: Path, request: dict) -> str:
    """Return what ``python -m resolver resolve FILE --request …`` prints (run in-process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        resolver_cli(["resolve", str(path), "--request", json.dumps(request)])
    return out.getvalue()


def database_answer(request: dict) -> str:
    """Return the resolution the API serves from the database (or its error), as JSON text."""
    try:
        resolution, _ = workspace_resolve_versioned(request=request, encoded=True)
    except ResolverError as exc:
        return json_text(exc.as_dict())
    return resolution.data.decode()


def requests_of(document: dict, request: dict) -> list[dict]:
    """Return the case's own request, and for every profile a request by its key and one by
    its selection, with the case's input and time."""
    common = {name: request[name] for name in ("input", "now") if name in request}
    common.setdefault("now", NOW)
    found = [request]
    for profile in document["profiles"]:
        selection = {
            "consumer": profile["consumer"],
            "objective": profile["objective"],
            **({"environment": profile["environment"]} if profile.get("environment") else {}),
        }
        found += [{**common, "profile": profile["key"]}, {**common, **selection}]
    return found


def assert_stored_as_the_file(path: Path, document: dict, request: dict) -> None:
    assert normalize_document(workspace_export()) == normalize_document(document)
    for each in requests_of(document, request):
        assert database_answer(each) == cli_answer(path, each), each
    assert not Profile.objects.filter(objective__startswith="parked-").exists()


# --- the case of the issue -----------------------------------------------------------------


def test_import_replace__profile_moves_to_another_consumer__stored_and_served_as_the_file(
    tmp_path,
):
    # Given conformance case 26 imported with --replace
    first = tmp_path / "26.yaml"
    first.write_text(dump_yaml(CASES[next(s for s in CASES if s.startswith("26-"))]["workspace"]))
    call_command("import_workspace", str(first), "--replace", stdout=io.StringIO())

    # When case 27 is imported with --replace (support-answer moves from support-assistant
    # to ops-agent, same objective)
    case = CASES[next(s for s in CASES if s.startswith("27-"))]
    second = tmp_path / "27.yaml"
    second.write_text(dump_yaml(case["workspace"]))
    call_command("import_workspace", str(second), "--replace", stdout=io.StringIO())

    # Then the profile is the file's, and the database answers what the CLI answers for it
    assert Profile.objects.values_list("consumer__key", "objective").get(key="support-answer") == (
        "ops-agent",
        "answer-ticket",
    )
    assert normalize_document(workspace_export()) == normalize_document(case["workspace"])
    for request in requests_of(case["workspace"], case["request"]):
        command = ["resolve", str(second), "--request", json.dumps(request)]
        from_cli = subprocess.run(
            [sys.executable, "-m", "resolver", *command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert database_answer(request) == from_cli, request


@pytest.mark.parametrize("mode", ["merge", "replace"])
@pytest.mark.parametrize("moved", ["consumer", "environment", "consumer and environment"])
def test_import__selection_changes_but_the_objective__every_field_is_the_files(
    tmp_path, mode, moved
):
    # Given the workspace of case 26
    stem = next(s for s in CASES if s.startswith("26-"))
    case = CASES[stem]
    path = tmp_path / "workspace.yaml"
    path.write_text(dump_yaml(case["workspace"]))
    workspace_import(text=path.read_text(), mode=mode)

    # When a file changes support-answer's consumer and/or environment, not its objective
    document = copy.deepcopy(case["workspace"])
    profile = document["profiles"][0]
    if "consumer" in moved:
        profile["consumer"] = "ops-agent"
    if "environment" in moved:
        profile["environment"] = "production"
    path.write_text(dump_yaml(document))
    workspace_import(text=path.read_text(), mode=mode)

    # Then the stored profile is the file's and resolves as the file does
    assert_stored_as_the_file(path, document, case["request"])


# --- random sequences ----------------------------------------------------------------------

# The conformance workspaces the sequences draw from (their profiles get new selections).
BASES = sorted(stem for stem, case in CASES.items() if case["workspace"].get("profiles"))


@st.composite
def selections(draw, document: dict) -> list[tuple]:
    """Draw a distinct selection for each profile: the stored ones swapped around, or new
    ones of the workspace's consumers, its objectives and a few environments."""
    profiles = document["profiles"]
    current = [(p["consumer"], p["objective"], p.get("environment") or None) for p in profiles]
    if len(set(current)) == len(current) and draw(st.booleans()):
        return draw(st.permutations(current))
    consumers = [consumer["key"] for consumer in document["consumers"]]
    objectives = sorted({p["objective"] for p in profiles} | {"triage"})
    one = st.tuples(
        st.sampled_from(consumers), st.sampled_from(objectives), st.sampled_from(ENVIRONMENTS)
    )
    return draw(st.lists(one, min_size=len(profiles), max_size=len(profiles), unique=True))


@st.composite
def import_steps(draw):
    """Draw 2-4 imports: (door, mode, document, request). A merge file keeps the material and
    every profile stored before it (in their order), so what it leaves is the file."""
    steps = []
    previous = None
    for _ in range(draw(st.integers(2, 4))):
        door = draw(st.sampled_from(DOORS))
        mode = draw(st.sampled_from(("merge", "replace")))
        if mode == "merge" and previous is not None:
            document, request = copy.deepcopy(previous[2]), previous[3]
        else:
            mode = "replace"
            case = CASES[draw(st.sampled_from(BASES))]
            document, request = copy.deepcopy(case["workspace"]), case["request"]
        if draw(st.booleans()):
            extra = copy.deepcopy(document["profiles"][0])
            extra["key"] = f"{extra['key']}-{len(steps)}"
            if extra["key"] not in {p["key"] for p in document["profiles"]}:
                document["profiles"].append(extra)
        for profile, (consumer, objective, environment) in zip(
            document["profiles"], draw(selections(document)), strict=True
        ):
            profile.update(consumer=consumer, objective=objective)
            profile.pop("environment", None)
            if environment is not None:
                profile["environment"] = environment
            profile["budget"] = draw(st.sampled_from((profile["budget"], 300)))
        steps.append((door, mode, document, request))
        previous = steps[-1]
    return steps


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=import_steps())
def test_import_sequences__after_each_import__export_is_the_file_and_answers_the_clis(
    tmp_path, steps
):
    for model in (Profile, Layer, Consumer):  # each example starts from nothing
        model.objects.all().delete()
    path = tmp_path / "workspace.yaml"
    for door, mode, document, request in steps:
        path.write_text(dump_yaml(document), encoding="utf-8")

        import_file(path, mode=mode, door=door)

        assert_stored_as_the_file(path, document, request)
