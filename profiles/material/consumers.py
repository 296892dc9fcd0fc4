"""Writes of consumers (SPEC §2 ``consumers[]``): create, update, delete — one entry each."""

from django.db import IntegrityError

from profiles.activity.records import activity_record
from profiles.models import Consumer
from profiles.versioning.protection import protection_check
from profiles.workspace.concurrency import check_if_match, consumer_etag, workspace_write
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.mappers import map_consumer_to_resolver, map_consumer_values
from profiles.workspace.origin import WriteOrigin, origin_of
from profiles.workspace.selectors import consumer_get
from profiles.workspace.validation import validate_consumer
from profiles.workspace.writing import (
    Conflict,
    assign,
    conflict_for,
    delete_row,
    raise_if_invalid,
    save_row,
    workspace_changed,
)


def consumer_create(*, document: dict, user=None, origin: WriteOrigin | None = None) -> Consumer:
    """Create a consumer from its SPEC §2 entry; raise ``EntryInvalid`` or ``Conflict``.
    (No profile uses a new consumer: no protected answer can change.)"""
    origin = origin_of(origin)
    consumer = Consumer()
    try:
        with workspace_write():
            raise_if_invalid(validate_consumer(document), consumer)
            assign(consumer, map_consumer_values(document))
            save_row(consumer, user=origin.author or user)
            workspace_changed(profiles=True)
            activity_record(
                kind="consumer",
                key=consumer.key,
                before=None,
                after=map_consumer_to_resolver(consumer),
                user=user,
                origin=origin,
            )
    except IntegrityError as exc:
        raise conflict_for(consumer) from exc
    return consumer


def consumer_update(
    *,
    key: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Consumer:
    """Change a consumer: ``changes`` replace the entry's fields (None: back to the default);
    with ``replace`` they are the whole entry. Raise ``Consumer.DoesNotExist``,
    ``PreconditionFailed``, ``EntryInvalid``, ``Conflict`` (a key taken) or
    ``ChangeRequestRequired`` (its key or render settings change while profiles of protected
    environments use it)."""
    origin = origin_of(origin)
    consumer = None
    try:
        with workspace_write():
            consumer = consumer_get(key=key, lock=True)
            before = map_consumer_to_resolver(consumer)
            entry = {"key": key} if replace else dict(before)
            document = {**entry, **changes}
            raise_if_invalid(validate_consumer(document), consumer)
            # A malformed body is refused as such, whatever its If-Match.
            check_if_match(if_match, consumer_etag(consumer))
            if assign(consumer, map_consumer_values(document)):
                after = map_consumer_to_resolver(consumer)
                protection_check(
                    [EntityChange("consumer", key, before, after)], user=user, origin=origin
                )
                save_row(consumer, user=origin.author or user)
                workspace_changed(profiles=True)
                activity_record(
                    kind="consumer",
                    key=consumer.key,
                    before=before,
                    after=after,
                    user=user,
                    origin=origin,
                )
    except IntegrityError as exc:
        raise conflict_for(consumer) from exc
    return consumer


def consumer_delete(
    *, key: str, user=None, if_match: str | None = None, origin: WriteOrigin | None = None
) -> None:
    """Delete a consumer no profile uses; raise ``Conflict`` naming the profiles that do."""
    origin = origin_of(origin)
    with workspace_write():
        consumer = consumer_get(key=key, lock=True)
        check_if_match(if_match, consumer_etag(consumer))
        users = list(consumer.profiles.order_by("key").values_list("key", flat=True))
        if users:
            raise Conflict(f'consumer "{key}" is used by profiles: ' + ", ".join(users))
        before = map_consumer_to_resolver(consumer)
        delete_row(consumer, user=origin.author or user)
        workspace_changed(profiles=True)
        activity_record(
            kind="consumer", key=key, before=before, after=None, user=user, origin=origin
        )
