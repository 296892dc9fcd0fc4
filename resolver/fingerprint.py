"""The engine's version as the bytes of its source: ``engine_version()``.

Local evaluation (the Python client, ``clients/python``) resolves with the same engine as
the server only when both run the same code: a snapshot names the server's engine version
and the client refuses local evaluation under any other. The version is the SPEC's resolver
identifier and a digest of every module of this package (path and bytes), so two copies of
the engine agree exactly when their code does; no number to remember to bump.

An edge module (it reads the package's own files), imported explicitly, never by
``import resolver``.
"""

import functools
import hashlib
from pathlib import Path

from resolver.reasons import RESOLVER_ID


@functools.cache
def engine_version() -> str:
    """Return ``ctxstudio/1+<digest>``: the resolver identifier and a digest of its source."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix().encode()
        data = path.read_bytes().replace(b"\r\n", b"\n")
        digest.update(len(name).to_bytes(4, "big") + name)
        digest.update(len(data).to_bytes(8, "big") + data)
    return f"{RESOLVER_ID}+{digest.hexdigest()[:16]}"
