"""Every existing profile gets version 1: its current document (SPEC §2, with rules).

The document is built here rather than by ``profiles.mappers`` so that this migration keeps
meaning what it meant when it was written.
"""

import math

from django.db import migrations

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


def _number(value):
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _rule_document(rule) -> dict:
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


def _profile_document(profile, rules) -> dict:
    document = {"key": profile.key}
    if profile.name:
        document["name"] = profile.name
    document["consumer"] = profile.consumer.key
    document["objective"] = profile.objective
    if profile.environment is not None:
        document["environment"] = profile.environment
    document["budget"] = profile.budget
    if profile.description:
        document["description"] = profile.description
    if rules:
        document["rules"] = {rule.layer.key: _rule_document(rule) for rule in rules}
    return document


def versions_for_existing_profiles(apps, schema_editor):
    Profile = apps.get_model("profiles", "Profile")
    Rule = apps.get_model("profiles", "Rule")
    ProfileVersion = apps.get_model("profiles", "ProfileVersion")
    rules_by_profile = {}
    for rule in Rule.objects.select_related("layer").order_by("profile_id", "position", "id"):
        rules_by_profile.setdefault(rule.profile_id, []).append(rule)
    versions = []
    for profile in Profile.objects.select_related("consumer").order_by("position", "id"):
        if ProfileVersion.objects.filter(profile_key=profile.key).exists():
            continue
        versions.append(
            ProfileVersion(
                profile_key=profile.key,
                number=1,
                author_id=profile.updated_by_id,
                message="The profile as it was when versions began.",
                document=_profile_document(profile, rules_by_profile.get(profile.pk, [])),
                source="migration",
            )
        )
    ProfileVersion.objects.bulk_create(versions, batch_size=500)
    Profile.objects.filter(key__in=[version.profile_key for version in versions]).update(version=1)


def forget_versions(apps, schema_editor):
    apps.get_model("profiles", "ProfileVersion").objects.all().delete()
    apps.get_model("profiles", "Profile").objects.update(version=0)


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0008_profile_versions_environments_change_requests"),
    ]

    operations = [
        migrations.RunPython(versions_for_existing_profiles, forget_versions),
    ]
