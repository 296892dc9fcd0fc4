"""Exit 0 when the web server of this container answers ``GET /healthz`` with 200, else 1.

The web container's health check (compose.yaml): the image has Python but no curl.
"""

import os
import sys
import urllib.error
import urllib.request

port = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000").rpartition(":")[2]
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except (OSError, urllib.error.URLError) as exc:
    print(f"/healthz: {exc}", file=sys.stderr)
    sys.exit(1)
