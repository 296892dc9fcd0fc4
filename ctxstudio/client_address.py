"""The client's address, as the login lockouts count it, behind a known number of proxies."""

import ipaddress

from django.conf import settings


def client_address(request) -> str | None:
    """Return the address the request came from.

    With ``TRUSTED_PROXY_COUNT`` = 0 (the default) it is ``REMOTE_ADDR`` and any
    ``X-Forwarded-For`` is ignored: a client can write that header itself. Behind N reverse
    proxies that each append the address they received the request from, it is the N-th
    address from the right: the one the outermost proxy saw. A header with fewer entries, or
    with no address there, did not come through those proxies, so ``REMOTE_ADDR`` is kept.
    """
    remote_address = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if not proxies:
        return remote_address
    forwarded = [entry.strip() for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if len(forwarded) < proxies:
        return remote_address
    candidate = forwarded[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote_address
