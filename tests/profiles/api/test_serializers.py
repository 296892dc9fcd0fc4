"""The API's documented bodies are the engine's vocabulary: fields, choices and key pattern."""

import pytest

from profiles.api.serializers import authoring as serializers_authoring
from profiles.api.serializers import material as serializers_material
from profiles.models import (
    Availability,
    CurrentnessAction,
    Mode,
    Order,
    Participation,
    RenderFormat,
)
from profiles.workspace.validation import SCENARIO_DOCUMENT_FIELDS
from resolver import model
from resolver import validation as engine


def writable(serializer_class) -> set[str]:
    return {name for name, field in serializer_class().fields.items() if not field.read_only}


@pytest.mark.parametrize(
    ("serializer_class", "fields"),
    [
        (serializers_material.ConsumerSerializer, engine.CONSUMER_FIELDS),
        # An update's key is the URL's: read-only (issue 22).
        (serializers_material.ConsumerUpdateSerializer, set(engine.CONSUMER_FIELDS) - {"key"}),
        # ``governed`` is staff's flag beside the entry, not a field of the document (issue 21).
        (serializers_material.LayerSerializer, {*engine.LAYER_FIELDS, "governed"}),
        (
            serializers_material.LayerUpdateSerializer,
            {*engine.LAYER_FIELDS, "governed"} - {"items", "key"},
        ),
        (serializers_material.ItemSerializer, engine.ITEM_FIELDS),
        (serializers_authoring.ProfileSerializer, engine.PROFILE_FIELDS),
        (serializers_authoring.RuleSerializer, engine.RULE_FIELDS),
        (serializers_authoring.CurrentnessSerializer, engine.CURRENTNESS_FIELDS),
        (serializers_material.RenderSerializer, engine.RENDER_FIELDS),
        (serializers_material.AppliesToSerializer, engine.APPLIES_FIELDS),
        (serializers_authoring.ScenarioSerializer, SCENARIO_DOCUMENT_FIELDS),
    ],
)
def test_entry_serializer__fields__are_the_fields_the_engine_accepts(serializer_class, fields):
    assert writable(serializer_class) == set(fields)


@pytest.mark.parametrize(
    ("field", "choices"),
    [
        (serializers_authoring.RuleSerializer().fields["participation"], model.PARTICIPATIONS),
        (serializers_authoring.RuleSerializer().fields["mode"], model.MODES),
        (serializers_authoring.RuleSerializer().fields["order"], model.ORDERS),
        (serializers_authoring.CurrentnessSerializer().fields["onStale"], model.ON_POLICIES),
        (serializers_material.LayerSerializer().fields["availability"], model.AVAILABILITIES),
        (serializers_material.RenderSerializer().fields["format"], model.FORMATS),
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
    field = serializers_material.ConsumerSerializer().fields["key"]

    assert field._args[0] == f"^{engine.KEY_RE.pattern}$"
