"""Stop the upgrade while stored material is beyond a SPEC v1.1 §2.2 limit.

Material saved before the limits existed may hold text with a NUL, a title of a million
characters or metadata nested 480 levels deep; the engine would then refuse the stored
workspace, and every resolution with it. This check reads every consumer, layer, item and
profile (with its rules), validates each with the engine's own validator of one entry, and,
when any value is beyond a limit, raises with the full list — the path of each value in the
exported workspace document, the row it lives in and what is wrong — so that ``migrate``
stops, nothing is changed, and the upgrade resumes once the values are fixed. On a clean
database it changes nothing.

The rows are read through the historical models and mapped to documents here, with the
field names as of this migration (a migration does not import the code it predates);
the validators are the engine's, so the limits are the ones in force.
"""

from django.core.management.base import CommandError
from django.db import migrations

from resolver import validate_consumer, validate_item, validate_layer, validate_profile

# Frozen here: document field -> model field of a rule, as of this migration.
RULE_FIELDS = {
    "participation": "participation",
    "mode": "mode",
    "required": "required",
    "priority": "priority",
    "maxItems": "max_items",
    "maxTokens": "max_tokens",
    "order": "order",
    "facets": "facets",
}
CURRENTNESS_FIELDS = {
    "maxAgeDays": "currentness_max_age_days",
    "field": "currentness_field",
    "onStale": "currentness_on_stale",
    "onUnknown": "currentness_on_unknown",
}


def _given(document: dict) -> dict:
    """Drop what was not given (NULL or empty), as the export leaves it out."""
    return {name: value for name, value in document.items() if value not in (None, "", [], {})}


def _number(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def consumer_document(consumer) -> dict:
    render = _given(
        {"format": consumer.render_format, "includeCurrentness": consumer.include_currentness}
    )
    return _given({"key": consumer.key, "name": consumer.name, "render": render})


def layer_document(layer) -> dict:
    applies_to = _given(
        {
            "objectives": layer.applies_to_objectives,
            "consumers": layer.applies_to_consumers,
        }
    )
    return _given(
        {
            "key": layer.key,
            "name": layer.name,
            "description": layer.description,
            "availability": None if layer.availability == "auto" else layer.availability,
            "appliesTo": applies_to,
            "requiresInput": layer.requires_input,
            "itemFilter": layer.item_filter,
        }
    )


def item_document(item) -> dict:
    return {
        "path": item.path,
        **_given({"title": item.title, "body": item.body, "metadata": item.metadata}),
    }


def rule_document(rule) -> dict:
    document = {}
    for doc_field, model_field in RULE_FIELDS.items():
        value = getattr(rule, model_field)
        if value is not None:
            document[doc_field] = _number(value) if doc_field == "priority" else value
    if rule.currentness_max_age_days is not None:
        document["currentness"] = {
            doc_field: getattr(rule, model_field)
            for doc_field, model_field in CURRENTNESS_FIELDS.items()
            if getattr(rule, model_field) is not None
        }
    return document


def profile_document(profile, rules, *, consumer_keys: dict, layer_keys: dict) -> dict:
    document = {
        "key": profile.key,
        **_given({"name": profile.name}),
        "consumer": consumer_keys.get(profile.consumer_id, ""),
        "objective": profile.objective,
        **_given({"environment": profile.environment}),
        "budget": profile.budget,
        **_given({"description": profile.description}),
    }
    if rules:
        document["rules"] = {
            layer_keys.get(rule.layer_id, ""): rule_document(rule) for rule in rules
        }
    return document


def stored_material_issues(apps, using: str = "default") -> list[str]:
    """Return one line per stored value the engine's validators refuse, in document order."""
    Consumer = apps.get_model("profiles", "Consumer")
    Layer = apps.get_model("profiles", "Layer")
    Item = apps.get_model("profiles", "Item")
    Profile = apps.get_model("profiles", "Profile")
    Rule = apps.get_model("profiles", "Rule")
    order = ("position", "id")
    lines = []

    def report(issues, where: str) -> None:
        lines.extend(f"{issue} ({where})" for issue in issues)

    consumer_keys = {}
    for index, consumer in enumerate(Consumer.objects.using(using).order_by(*order)):
        consumer_keys[consumer.pk] = consumer.key
        path = f"consumers[{index}]"
        report(
            validate_consumer(consumer_document(consumer), path=path), f"consumer {consumer.key!r}"
        )

    layer_keys = {}
    for index, layer in enumerate(Layer.objects.using(using).order_by(*order)):
        layer_keys[layer.pk] = layer.key
        path = f"layers[{index}]"
        report(validate_layer(layer_document(layer), path=path), f"layer {layer.key!r}")
        items = Item.objects.using(using).filter(layer_id=layer.pk).order_by(*order)
        for item_index, item in enumerate(items.iterator(chunk_size=500)):
            report(
                validate_item(item_document(item), path=f"{path}.items[{item_index}]"),
                f"layer {layer.key!r}, item {item.path!r}",
            )

    rules_by_profile = {}
    for rule in Rule.objects.using(using).order_by("profile_id", *order):
        rules_by_profile.setdefault(rule.profile_id, []).append(rule)
    for index, profile in enumerate(Profile.objects.using(using).order_by(*order)):
        document = profile_document(
            profile,
            rules_by_profile.get(profile.pk, []),
            consumer_keys=consumer_keys,
            layer_keys=layer_keys,
        )
        issues = validate_profile(
            document,
            path=f"profiles[{index}]",
            layer_keys=set(layer_keys.values()),
            consumer_keys=set(consumer_keys.values()),
        )
        report(issues, f"profile {profile.key!r}")
    return lines


def check_stored_material(apps, schema_editor):
    lines = stored_material_issues(apps, using=schema_editor.connection.alias)
    if lines:
        listing = "\n".join(f"  {line}" for line in lines)
        raise CommandError(
            f"{len(lines)} stored value(s) are beyond the limits of SPEC v1.1 §2.2, which this "
            "release enforces. Nothing was migrated. Fix them (in the studio, the admin or the "
            "API of the release still running, or in an export re-imported there), then run "
            f"migrate again:\n{listing}"
        )


class Migration(migrations.Migration):
    dependencies = [("profiles", "0004_editors_group")]

    operations = [migrations.RunPython(check_stored_material, migrations.RunPython.noop)]
