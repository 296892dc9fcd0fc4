"""Writes of consumers (SPEC §2 ``consumers[]``): create, update, delete — one entry each."""

from django.db import IntegrityError

from profiles.models import Consumer
from profiles.workspace.concurrency import check_if_match, consumer_etag, workspace_write
from profiles.workspace.mappers import map_consumer_to_resolver, map_consumer_values
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


def consumer_create(*, document: dict, user=None) -> Consumer:
    """Create a consumer from its SPEC §2 entry; raise ``EntryInvalid`` or ``Conflict``."""
    consumer = Consumer()
    try:
        with workspace_write():
            raise_if_invalid(validate_consumer(document), consumer)
            assign(consumer, map_consumer_values(document))
            save_row(consumer, user=user)
            workspace_changed(profiles=True)
    except IntegrityError as exc:
        raise conflict_for(consumer) from exc
    return consumer


def consumer_update(
    *, key: str, changes: dict, replace: bool = False, user=None, if_match: str | None = None
) -> Consumer:
    """Change a consumer: ``changes`` replace the entry's fields (None: back to the default);
    with ``replace`` they are the whole entry. Raise ``Consumer.DoesNotExist``,
    ``PreconditionFailed``, ``EntryInvalid`` or ``Conflict`` (a key taken)."""
    consumer = None
    try:
        with workspace_write():
            consumer = consumer_get(key=key, lock=True)
            check_if_match(if_match, consumer_etag(consumer))
            entry = {"key": key} if replace else map_consumer_to_resolver(consumer)
            document = {**entry, **changes}
            raise_if_invalid(validate_consumer(document), consumer)
            if assign(consumer, map_consumer_values(document)):
                save_row(consumer, user=user)
                workspace_changed(profiles=True)
    except IntegrityError as exc:
        raise conflict_for(consumer) from exc
    return consumer


def consumer_delete(*, key: str, user=None, if_match: str | None = None) -> None:
    """Delete a consumer no profile uses; raise ``Conflict`` naming the profiles that do."""
    with workspace_write():
        consumer = consumer_get(key=key, lock=True)
        check_if_match(if_match, consumer_etag(consumer))
        users = list(consumer.profiles.order_by("key").values_list("key", flat=True))
        if users:
            raise Conflict(f'consumer "{key}" is used by profiles: ' + ", ".join(users))
        delete_row(consumer, user=user)
        workspace_changed(profiles=True)
