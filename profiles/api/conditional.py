"""Conditional reads: an ``ETag`` on answers that applications poll, and ``If-None-Match`` →
``304 Not Modified`` while the answer is unchanged (docs/api.md, "Poll for changes").

* **Resolve and expand** (``POST``) answer a weak ETag, a digest of the answer's bytes
  without the ``now`` it echoes: a request without ``now`` resolves at the current time, and
  its echo alone would make every answer new. Weak, because two answers with the same ETag
  can differ in that echo and in nothing else (RFC 9110 §8.8.1). While the workspace and the
  request give the same resolution, a poll with ``If-None-Match`` answers 304, whatever was
  written in between; when the clock alone changes what the request sees (an item turning
  stale), the ETag changes with it.
* **Entries** (``GET /api/v1/profiles/<key>`` and the other objects): their ETag, also the one
  ``If-Match`` checks, is a digest of the object's document, which is the whole answer.
* **The workspace export** (``GET /api/v1/workspace``): the workspace's content version (the
  token every write of a consumer, layer, item, profile or rule moves), with the format and
  layer asked for. It is read before the export streams, so the ETag is never newer than
  the answer it comes with.

``If-None-Match`` compares weakly (RFC 9110 §13.1.2): ``W/"x"`` matches ``"x"``, and ``*``
matches any answer.
"""

import hashlib

from django.utils.http import parse_etags
from rest_framework.response import Response

from resolver import EncodedResolution


def weak_etag(*parts: bytes | memoryview) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return f'W/"{digest.hexdigest()}"'


def resolution_etag(resolution: EncodedResolution) -> str:
    """Return the weak ETag of a resolution: its bytes without the echo of ``now``.

    The bytes around the echo are hashed where they lie (a full resolution can be
    megabytes: no copy of them is made on this path of every resolve).
    """
    data = memoryview(resolution.data)
    now = resolution.head.get("now")
    echo = b'"now":"' + now.encode() + b'"' if isinstance(now, str) else b""
    start = resolution.data.find(echo) if echo else -1
    if start < 0:
        return weak_etag(data)
    return weak_etag(data[:start], data[start + len(echo) :])


def _opaque(tag: str) -> str:
    return tag[2:] if tag.startswith("W/") else tag


def none_match_fails(request, etag: str) -> bool:
    """Return whether the request's ``If-None-Match`` names ``etag`` (answer 304)."""
    header = request.headers.get("If-None-Match")
    if not header:
        return False
    tags = parse_etags(header)
    if tags == ["*"]:
        return True
    current = _opaque(etag)
    return any(_opaque(tag) == current for tag in tags)


def not_modified(etag: str, headers: dict | None = None) -> Response:
    """Return the 304 of an unchanged answer: no body, its ETag (and the given headers)."""
    return Response(status=304, headers={"ETag": etag, **(headers or {})})
