"""A change set's item material reaches only who may read material (issue 33, item 2).

An item's path, title, body and metadata are customer data (READ_MATERIAL, the rule the
activity log applies to its item rows). A change set that writes items of a customer-scoped
layer shows them to editors and staff, and to a reader nowhere: not in the API's detail or
list, not on the studio's page, not in the default title, nor in the thread, emails and
webhooks' payloads of a scheduled apply that failed.
"""

import json

import pytest
from django.core import mail
from django.urls import reverse

from profiles.models import ChangeRequest, ChangeRequestComment, Item, Webhook, WebhookDelivery
from profiles.safechange.reviews import scheduled_apply_failed
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db

SECRETS = ("Card 4111 refunded twice", "Escalated ticket of ACME", "acme-vip")
TICKET = "tickets/acme-4711.md"  # a path that names the customer
THE_SET = [
    {
        "kind": "item",
        "op": "update",
        "layer": "layer-001",
        "path": "docs/item-0001.md",
        "value": {"body": SECRETS[0], "metadata": {"customer_id": "C-1", "status": "open"}},
    },
    {
        "kind": "item",
        "op": "create",
        "layer": "layer-001",
        "path": TICKET,
        "value": {
            "path": TICKET,
            "title": SECRETS[1],
            "body": "Call back.",
            "metadata": {"customer_id": "C-1", "channel": SECRETS[2]},
        },
    },
    {"kind": "item", "op": "delete", "layer": "layer-001", "path": "docs/item-0002.md"},
    {
        "kind": "layer",
        "op": "create",
        "value": {
            "key": "tickets-eu",
            "name": "Tickets EU",
            "itemFilter": {"customer_id": "customer_id"},
            "items": [
                {"path": "eu/acme-1.md", "title": "EU ticket", "body": SECRETS[0] + " in EU"}
            ],
        },
    },
    {"kind": "profile", "op": "update", "key": "profile-1", "value": {"budget": 700}},
]
ITEM_NAMES = (
    "layer-001/docs/item-0001.md",
    "layer-001/docs/item-0002.md",
    TICKET,
    "eu/acme-1.md",
    "EU ticket",
)


def opened(client) -> dict:
    response = client.post(API + "change-requests", {"changes": THE_SET}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def material_in(text: str) -> list[str]:
    return [secret for secret in (*SECRETS, *ITEM_NAMES) if secret in text]


def test_api_detail_and_list__reader__no_item_material_and_the_count_withheld(
    release, editor_client, reader_client
):
    created = opened(editor_client)

    detail = reader_client.get(f"{API}change-requests/{created['id']}")
    listed = reader_client.get(API + "change-requests")

    assert detail.status_code == listed.status_code == 200
    for response in (detail, listed):
        assert material_in(response.content.decode()) == []
    body = detail.json()
    assert body["itemsWithheld"] == 4  # three item entries, one item of the created layer
    assert body["entities"] == ["layer:tickets-eu", "profile:profile-1"]
    assert [(c["kind"], c["op"]) for c in body["entityChanges"]] == [
        ("layer", "create"),
        ("profile", "update"),
    ]
    assert "items" not in body["changes"][0]["value"]  # the created layer, without its items
    assert listed.json()["results"][0]["itemsWithheld"] == 4


def test_api_detail__editor_and_staff__see_every_item_change(release, editor_client, staff_client):
    created = opened(editor_client)

    for client in (editor_client, staff_client):
        body = client.get(f"{API}change-requests/{created['id']}").json()

        assert body["itemsWithheld"] == 0
        assert len(body["entityChanges"]) == len(THE_SET)
        assert f"item:layer-001/{TICKET}" in body["entities"]
        text = json.dumps(body)
        assert SECRETS[1] in text and SECRETS[2] in text


def test_default_title__names_no_item(release, editor_client, reader_client):
    created = opened(editor_client)

    assert created["title"] == (
        "Change 1 item in layer-001; create 1 item in layer-001; delete 1 item in layer-001; "
        "create layer tickets-eu; change profile-1"
    )
    assert material_in(created["title"]) == []


def test_studio_page__reader__no_item_material__editor_sees_it(
    release, editor, editor_client, reader, client
):
    created = opened(editor_client)
    url = reverse("change-request", args=[created["id"]])

    client.force_login(reader)
    page = client.get(url)
    assert page.status_code == 200
    assert material_in(page.content.decode()) == []
    assert "4 item changes not shown" in page.content.decode()

    client.force_login(editor)
    page = client.get(url)
    assert SECRETS[1] in page.content.decode()
    assert "not shown" not in page.content.decode()


def test_scheduled_apply_failed__thread_email_and_webhook_name_no_item(
    release, editor, editor_client, django_capture_on_commit_callbacks
):
    Webhook.objects.create(
        url="https://hooks.example.com/in",
        events=["change_request.apply_failed"],
        secret="s" * 32,
    )
    created = opened(editor_client)
    change_request = ChangeRequest.objects.get(pk=created["id"])
    editor.email = "editor@example.com"
    editor.save()
    # The item moved on: what the apply would say names it.
    Item.objects.filter(layer__key="layer-001", path="docs/item-0001.md").update(body="moved")
    reason = (
        f"item:layer-001/docs/item-0001.md changed since change request #{change_request.pk} "
        "was written: rebase it to recompute its impact, then apply it"
    )

    with django_capture_on_commit_callbacks(execute=True):
        scheduled_apply_failed(change_request, reason, code="STALE_CHANGE_REQUEST")

    comment = ChangeRequestComment.objects.get(change_request=change_request)
    (payload,) = WebhookDelivery.objects.values_list("payload", flat=True)
    (email,) = mail.outbox
    for text in (comment.body, json.dumps(payload), email.subject, email.body):
        assert material_in(text) == []
    assert "an item of layer layer-001 changed since" in comment.body
