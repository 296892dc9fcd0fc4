"""The application contract, replayed: every request of ``lean_contract`` answers the bytes,
headers and status recorded before the lean door (issue 35, item 4), and each conformance
case answers what ``python -m resolver resolve`` prints.

``LEAN_CONTRACT_RECORD=1`` records the answers instead (only ever from the stack as it was
before the lean door: the fixtures are the reference)."""

import pytest

from profiles.api import lean
from profiles.import_export.imports import workspace_import
from tests.profiles.api.conftest import load_demo
from tests.profiles.conftest import WORKSPACE_CASES, api_key_for
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


def throttled_to_zero(settings) -> None:
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
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
