"""The API's documented bodies are the engine's vocabulary: fields, choices and key pattern."""

import pytest

from profiles.api import serializers as s
from profiles.models import (
    Availability,
    CurrentnessAction,
    Mode,
    Order,
    Participation,
    RenderFormat,
)
from profiles.validation import SCENARIO_DOCUMENT_FIELDS
from resolver import model
from resolver import validation as engine


def writable(serializer_class) -> set[str]:
    return {name for name, field in serializer_class().fields.items() if not field.read_only}


@pytest.mark.parametrize(
    ("serializer_class", "fields"),
    [
        (s.ConsumerSerializer, engine.CONSUMER_FIELDS),
        (s.ConsumerUpdateSerializer, engine.CONSUMER_FIELDS),
        (s.LayerSerializer, engine.LAYER_FIELDS),
        (s.LayerUpdateSerializer, tuple(set(engine.LAYER_FIELDS) - {"items"})),
        (s.ItemSerializer, engine.ITEM_FIELDS),
        (s.ProfileSerializer, engine.PROFILE_FIELDS),
        (s.RuleSerializer, engine.RULE_FIELDS),
        (s.CurrentnessSerializer, engine.CURRENTNESS_FIELDS),
        (s.RenderSerializer, engine.RENDER_FIELDS),
        (s.AppliesToSerializer, engine.APPLIES_FIELDS),
        (s.ScenarioSerializer, SCENARIO_DOCUMENT_FIELDS),
    ],
)
def test_entry_serializer__fields__are_the_fields_the_engine_accepts(serializer_class, fields):
    assert writable(serializer_class) == set(fields)


@pytest.mark.parametrize(
    ("field", "choices"),
    [
        (s.RuleSerializer().fields["participation"], model.PARTICIPATIONS),
        (s.RuleSerializer().fields["mode"], model.MODES),
        (s.RuleSerializer().fields["order"], model.ORDERS),
        (s.CurrentnessSerializer().fields["onStale"], model.ON_POLICIES),
        (s.LayerSerializer().fields["availability"], model.AVAILABILITIES),
        (s.RenderSerializer().fields["format"], model.FORMATS),
    ],
)
def test_choice_fields__documented_choices__are_the_engines(field, choices):
    assert list(field.choices) == list(choices)


@pytest.mark.parametrize(
    ("choices", "values"),
    [
        (Participation, model.PARTICIPATIONS),
        (Mode, model.MODES),
        (Order, model.ORDERS),
        (CurrentnessAction, model.ON_POLICIES),
        (Availability, model.AVAILABILITIES),
        (RenderFormat, model.FORMATS),
    ],
)
def test_model_choices__values__are_the_engines(choices, values):
    assert tuple(choices.values) == values


def test_key_fields__pattern__is_the_engines_key_pattern():
    field = s.ConsumerSerializer().fields["key"]

    assert field._args[0] == f"^{engine.KEY_RE.pattern}$"
