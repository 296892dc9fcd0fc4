"""The application contract, replayed: every request of ``lean_contract`` answers the bytes,
headers and status recorded before the lean door (issue 35, item 4), and each conformance
case answers what ``python -m resolver resolve`` prints.

``LEAN_CONTRACT_RECORD=1`` records the answers instead (only ever from the stack as it was
before the lean door: the fixtures are the reference)."""

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from profiles.api import lean
from profiles.import_export.imports import workspace_import
from profiles.models import Consumer, Layer, Profile
from resolver import RequestError, compile_workspace
from resolver.errors import PROFILE_NOT_FOUND
from tests.profiles.conftest import WORKSPACE_CASES, api_key_for, load_demo
from tests.profiles.resolution.lean_contract import (
    CONFORMANCE,
    CONTRACT,
    FULL_STACK,
    RECORDING,
    THROTTLED,
    Call,
    cli_output,
    contract_calls,
    keyring_make,
    play,
    store,
    stored,
)
from tests.resolver.strategies import requests, workspaces

pytestmark = pytest.mark.django_db


def differences(answers: dict, recorded: dict) -> list[str]:
    """Return, per request, what differs from its recorded answer."""
    found = []
    for name, got in answers.items():
        expected = recorded.get(name)
        if expected is None:
            found.append(f"{name}: not recorded")
        elif got != expected:
            parts = [
                key
                for key in ("status", "headers", "text", "base64")
                if got.get(key) != expected.get(key)
            ]
            found.append(f"{name}: {', '.join(parts)} differ: {got} != {expected}")
    return found


def throttled_to_zero(django_settings) -> None:
    rates = django_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    django_settings.REST_FRAMEWORK = {
        **django_settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "resolve": "0/minute", "expand": "0/minute"},
    }


@pytest.fixture
def lean_answered(monkeypatch) -> list:
    """The requests the lean door answered (their bodies' first bytes, in order)."""
    answered = []
    answer = lean.answer

    def counted(request):
        answered.append(request)
        return answer(request)

    monkeypatch.setattr(lean, "answer", counted)
    return answered


def test_contract__every_request__answers_the_recorded_status_headers_and_bytes(
    settings, lean_answered
):
    load_demo()
    keyring = keyring_make()

    answers = play(contract_calls(), keyring)
    throttled_to_zero(settings)
    answers |= play(THROTTLED, keyring)

    # the lean door answered every call of an application, the full stack the others
    assert len(lean_answered) == len(answers) - len(FULL_STACK)
    assert set(answers) >= FULL_STACK

    if RECORDING:
        store(CONTRACT, answers)
    recorded = stored(CONTRACT)
    assert set(answers) == set(recorded)
    assert differences(answers, recorded) == []


@pytest.mark.parametrize(("stem", "case"), WORKSPACE_CASES, ids=[s for s, _ in WORKSPACE_CASES])
def test_conformance_case__through_the_door__the_recorded_answer_and_the_cli_bytes(
    stem, case, django_user_model, tmp_path, capsys, lean_answered
):
    workspace_import(document=case["workspace"])
    keyring = {"reader": f"Token {api_key_for(django_user_model.objects.create_user('reader'))}"}

    answers = play([Call(stem, "resolve", case["request"])], keyring)

    assert len(lean_answered) == 1
    assert answers[stem]["text"].encode() == cli_output(
        case["workspace"], case["request"], tmp_path, capsys
    )
    if RECORDING:
        store(CONFORMANCE, answers)
    assert differences(answers, stored(CONFORMANCE)) == []


# --- random workspaces and requests, stored in the database, asked through the lean door ------


def empty_workspace() -> None:
    for model in (Profile, Layer, Consumer):
        model.objects.all().delete()


@pytest.fixture
def reader_token(django_user_model) -> str:
    return f"Token {api_key_for(django_user_model.objects.create_user('reader'))}"


@hypothesis_settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_lean_door__random_workspaces_and_requests__resolve_document_request_bytes(
    data, reader_token, lean_answered
):
    document, _ = data.draw(workspaces())
    empty_workspace()
    workspace_import(document=document)
    compiled = compile_workspace(document)
    client = Client(HTTP_AUTHORIZATION=reader_token)
    for _ in range(3):
        request, _ = data.draw(requests(document))
        request = {**request, "detail": data.draw(st.sampled_from([None, "summary"]))}

        response = client.post("/api/v1/resolve", request, content_type="application/json")

        try:
            expected = compiled.resolve_json(request).data
        except RequestError as exc:
            assert response.status_code == (404 if exc.code == PROFILE_NOT_FOUND else 400)
            assert response.json()["error"] == {
                "code": exc.code,
                "message": str(exc),
                "path": exc.path,
                "retryable": False,
            }
        else:
            assert response.status_code == 200
            assert response.content == expected
    assert lean_answered
