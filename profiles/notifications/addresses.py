"""Where a webhook may point: the URL's shape and the addresses its host resolves to (SSRF).

A webhook URL is a request the server makes on a staff member's say-so, from inside the
network it runs in. So a URL whose host is, or resolves to, a loopback, link-local, private,
shared (carrier-grade NAT), multicast, reserved or unspecified address is refused, IPv4 and
IPv6 alike (an IPv6 address that embeds an IPv4 one, ``::ffff:127.0.0.1`` or 6to4, is judged
by the IPv4 address too): otherwise a webhook could reach the database, a cloud's metadata
service (``169.254.169.254``) or an admin port on the loopback. ``WEBHOOKS_ALLOW_PRIVATE``
lifts the address rule (it defaults to ``DEBUG``, so a receiver on one's own machine can be
tried); the URL's shape is checked whatever it says.

The check runs when a webhook is saved and again before every delivery (a name may resolve
elsewhere by then), and a delivery connects to the very address that was checked
(``WebhookTarget.addresses``), so a second lookup cannot swap it for another.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

URL_MAX_LENGTH = 2000
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}


class WebhookInvalid(ValueError):
    """A field of a webhook is not valid; ``field`` names it (``url``, ``events[2]``…)."""

    code = "INVALID_REQUEST"

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class WebhookUrlRefused(WebhookInvalid):
    """The URL's host is, or resolves to, an address webhooks may not call (SSRF)."""

    code = "WEBHOOK_URL_REFUSED"


@dataclass(frozen=True)
class WebhookTarget:
    """A checked URL: where to connect (``addresses``, in order) and what to ask for."""

    scheme: str
    host: str
    port: int
    target: str  # path and query, as the request line sends them
    addresses: tuple[str, ...]


def private_allowed() -> bool:
    """Return whether webhooks may call private addresses (``WEBHOOKS_ALLOW_PRIVATE``)."""
    allowed = getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", None)
    return settings.DEBUG if allowed is None else bool(allowed)


def webhook_url_clean(url) -> str:
    """Return the URL stripped, or raise ``WebhookInvalid`` for one of the wrong shape."""
    if not isinstance(url, str) or not url.strip():
        raise WebhookInvalid("url", "is required: the http(s) URL to send events to")
    url = url.strip()
    if len(url) > URL_MAX_LENGTH:
        raise WebhookInvalid("url", f"is longer than {URL_MAX_LENGTH} characters")
    if any(ord(character) < 33 or ord(character) == 127 for character in url):
        raise WebhookInvalid("url", "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookInvalid("url", f"is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES:
        raise WebhookInvalid("url", "must start with http:// or https://")
    if not parts.hostname:
        raise WebhookInvalid("url", "names no host")
    try:
        ascii_host(parts.hostname)
    except UnicodeError:
        raise WebhookInvalid("url", "the host name is not a valid name") from None
    if parts.username is not None or parts.password is not None:
        raise WebhookInvalid("url", "must not carry a user name or password (sign with the secret)")
    if port == 0:
        raise WebhookInvalid("url", "port 0 is not a port one can send to")
    if parts.fragment:
        raise WebhookInvalid("url", "must not have a #fragment (it is never sent)")
    return url


def ascii_host(hostname: str) -> str:
    """Return the host as DNS and the Host header name it (IDNA for a non-ASCII name)."""
    if hostname.isascii():
        return hostname
    return hostname.encode("idna").decode("ascii")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    return address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]


def address_refusal(text: str) -> str | None:
    """Return why webhooks may not call this IP address ("a loopback address"), or None."""
    address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 zone names no address
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = address_refusal(str(embedded))
            if reason is not None:
                return f"{reason} (inside the IPv6 address)"
    for test, reason in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(address, test):
            return reason
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address"
    if not address.is_global:
        return "an address that is not public"
    return None


def _resolve(host: str, port: int) -> tuple[str, ...]:
    try:
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise WebhookUrlRefused("url", f'the host "{host}" does not resolve ({exc})') from None
    return tuple(dict.fromkeys(entry[4][0] for entry in found))


def webhook_url_target(url: str, *, allow_private: bool | None = None) -> WebhookTarget:
    """Check ``url`` and return where to send to it.

    Raises ``WebhookInvalid`` for a URL of the wrong shape and ``WebhookUrlRefused`` when its
    host does not resolve or any of its addresses is one webhooks may not call (unless
    ``allow_private``, by default ``WEBHOOKS_ALLOW_PRIVATE``). Every address must pass: a
    name that resolves to a public and a private address is refused.
    """
    url = webhook_url_clean(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = ascii_host(parts.hostname.rstrip(".") or parts.hostname)
    port = parts.port or DEFAULT_PORTS[scheme]
    addresses = _resolve(host, port)
    if not addresses:
        raise WebhookUrlRefused("url", f'the host "{host}" does not resolve')
    if not (private_allowed() if allow_private is None else allow_private):
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                shown = "" if address == host else f" resolves to {address}, which"
                raise WebhookUrlRefused(
                    "url",
                    f'the host "{host}"{shown} is {reason}: webhooks may call public '
                    "addresses only (WEBHOOKS_ALLOW_PRIVATE allows private ones)",
                )
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return WebhookTarget(scheme=scheme, host=host, port=port, target=target, addresses=addresses)


def webhook_url_check(url) -> str:
    """Return the cleaned URL a webhook may be saved with; raise as ``webhook_url_target``.

    Where private addresses are allowed, the host is not looked up now (a receiver not yet
    started is no reason to refuse); the delivery looks it up, as it always does.
    """
    url = webhook_url_clean(url)
    if not private_allowed():
        webhook_url_target(url, allow_private=False)
    return url
