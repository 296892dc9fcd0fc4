"""The webhook services: staff only, every field checked with its path, and no webhook at an
address inside the server's network (SSRF) unless the setting allows it."""

import socket

import pytest
from django.core.exceptions import PermissionDenied

from profiles.models import Webhook
from profiles.notifications.addresses import WebhookInvalid, WebhookUrlRefused, address_refusal
from profiles.notifications.webhooks import (
    secret_masked,
    webhook_create,
    webhook_delete,
    webhook_list,
    webhook_test,
    webhook_update,
)
from tests.profiles.notifications.conftest import SECRET, make_webhook

pytestmark = pytest.mark.django_db

PUBLIC_URL = "https://93.184.215.14/hooks"  # a public address: no lookup needed

REFUSED_URLS = [
    ("http://127.0.0.1:8000/hook", "loopback"),
    ("http://[::1]/hook", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://10.0.0.1/hook", "private"),
    ("http://192.168.1.20/hook", "private"),
    ("http://172.16.0.5/hook", "private"),
    ("http://100.64.0.1/hook", "not public"),  # carrier-grade NAT
    ("http://0.0.0.0/hook", "unspecified"),
    ("http://[::]/hook", "unspecified"),
    ("http://224.0.0.1/hook", "multicast"),
    ("http://[ff02::1]/hook", "multicast"),
    ("http://240.0.0.1/hook", "reserved"),
    ("http://[fe80::1]/hook", "link-local"),
    ("http://[fd00::1]/hook", "private"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),  # IPv4-mapped
    ("http://[::ffff:a9fe:a9fe]/hook", "link-local"),  # 169.254.169.254, mapped
    ("http://[2002:7f00:1::]/hook", "loopback"),  # 6to4 of 127.0.0.1
    ("http://localhost:8000/hook", "loopback"),  # a name that resolves to the loopback
    ("http://LOCALHOST./hook", "loopback"),
]


@pytest.mark.parametrize(("url", "kind"), REFUSED_URLS, ids=[url for url, _ in REFUSED_URLS])
def test_webhook_create__private_address_and_setting_off__refused(staff, settings, url, kind):
    settings.WEBHOOKS_ALLOW_PRIVATE = False

    with pytest.raises(WebhookUrlRefused) as refusal:
        make_webhook(staff, url)

    assert refusal.value.field == "url"
    assert kind in refusal.value.message
    assert "WEBHOOKS_ALLOW_PRIVATE" in refusal.value.message
    assert Webhook.objects.count() == 0


def test_webhook_create__name_resolving_to_loopback__says_what_it_resolves_to(staff, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    loopback = socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)[0][4][0]

    with pytest.raises(WebhookUrlRefused) as refusal:
        make_webhook(staff, "http://localhost/hook")

    assert f'"localhost" resolves to {loopback}' in refusal.value.message


def test_webhook_create__non_ascii_host__kept_and_looked_up_by_its_idna_name(staff, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False

    with pytest.raises(WebhookUrlRefused) as refusal:
        make_webhook(staff, "https://bücher.invalid/hook")

    assert '"xn--bcher-kva.invalid" does not resolve' in refusal.value.message


def test_webhook_create__public_address_and_setting_off__created(staff, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False

    webhook = make_webhook(staff, PUBLIC_URL)

    assert webhook.url == PUBLIC_URL
    assert address_refusal("2606:4700:4700::1111") is None


def test_webhook_update__url_to_private_address__refused_and_unchanged(staff, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    webhook = make_webhook(staff, PUBLIC_URL)

    with pytest.raises(WebhookUrlRefused):
        webhook_update(user=staff, webhook=webhook, url="http://169.254.169.254/")

    webhook.refresh_from_db()
    assert webhook.url == PUBLIC_URL


def test_allow_private__defaults_to_debug(staff, settings):
    del settings.WEBHOOKS_ALLOW_PRIVATE
    settings.DEBUG = True
    assert make_webhook(staff, "http://127.0.0.1:9/hook").pk

    settings.DEBUG = False
    with pytest.raises(WebhookUrlRefused):
        make_webhook(staff, "http://127.0.0.1:9/hook")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "is required"),
        ("ftp://example.com/hook", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "http:// or https://"),
        ("http:///no-host", "names no host"),
        ("http://user:pass@example.com/", "user name or password"),
        ("http://example.com/a b", "spaces or control characters"),
        ("http://example.com:99999/", "not a valid URL"),
        ("https://example.com/" + "a" * 2000, "longer than 2000"),
        ("https://" + "ü" * 70 + ".example/", "not a valid name"),  # a label is ≤ 63
    ],
)
def test_webhook_create__url_of_the_wrong_shape__refused_naming_url(staff, url, message):
    with pytest.raises(WebhookInvalid) as refusal:
        make_webhook(staff, url)

    assert refusal.value.field == "url"
    assert message in refusal.value.message


@pytest.mark.parametrize(
    ("events", "field", "message"),
    [
        ([], "events", "at least one"),
        ("import.finished", "events", "must be a list"),
        (["import.finished", "nope"], "events[1]", '"nope" is not an event'),
        (["ping"], "events[0]", '"ping" is not an event'),  # only "Send test" sends it
        (["import.finished", 3], "events[1]", "is not an event"),
        (["import.finished", "import.finished"], "events[1]", "listed twice"),
        (["import.finished"] * 50, "events", "more than the 6 events"),
    ],
)
def test_webhook_create__bad_events__refused_naming_the_entry(staff, events, field, message):
    with pytest.raises(WebhookInvalid) as refusal:
        webhook_create(user=staff, url=PUBLIC_URL, events=events, secret=SECRET)

    assert refusal.value.field == field
    assert message in refusal.value.message


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        (None, "is required"),
        ("", "is required"),
        ("short", "16 to 200 characters"),
        ("x" * 201, "16 to 200 characters"),
        ("sixteen-chars\n..", "control characters"),
    ],
)
def test_webhook_create__bad_secret__refused(staff, secret, message):
    with pytest.raises(WebhookInvalid) as refusal:
        webhook_create(user=staff, url=PUBLIC_URL, events=["import.finished"], secret=secret)

    assert refusal.value.field == "secret"
    assert message in refusal.value.message


def test_webhook_create__more_than_the_most__refused(staff, settings):
    settings.WEBHOOKS_MAX = 2
    make_webhook(staff, PUBLIC_URL)
    make_webhook(staff, PUBLIC_URL)

    with pytest.raises(WebhookInvalid, match="already 2 webhooks"):
        make_webhook(staff, PUBLIC_URL)


def test_secret_masked__shows_only_the_last_four_characters():
    assert secret_masked(SECRET) == "…ngth"


def test_webhook_services__editor__refused_at_every_one(staff, editor):
    webhook = make_webhook(staff, PUBLIC_URL)

    for attempt in (
        lambda: webhook_list(user=editor),
        lambda: make_webhook(editor, PUBLIC_URL),
        lambda: webhook_update(user=editor, webhook=webhook, active=False),
        lambda: webhook_delete(user=editor, webhook=webhook),
        lambda: webhook_test(user=editor, webhook=webhook),
    ):
        with pytest.raises(PermissionDenied, match="MANAGE_WEBHOOKS"):
            attempt()

    webhook.refresh_from_db()
    assert webhook.active
    assert webhook.deliveries.count() == 0


def test_webhook_update__fields__changed_and_secret_replaced(staff):
    webhook = make_webhook(staff, PUBLIC_URL)

    webhook_update(
        user=staff,
        webhook=webhook,
        events=["import.finished", "profile_version.created"],
        secret="a-brand-new-secret-value",
        active=False,
        description="  CI bridge  ",
    )

    webhook.refresh_from_db()
    assert webhook.events == ["import.finished", "profile_version.created"]
    assert webhook.secret == "a-brand-new-secret-value"
    assert (webhook.active, webhook.description) == (False, "CI bridge")
    with pytest.raises(WebhookInvalid) as refusal:
        webhook_update(user=staff, webhook=webhook, colour="red")
    assert refusal.value.field == "colour"
