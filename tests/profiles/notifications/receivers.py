"""Real webhook receivers for the tests: HTTP servers on 127.0.0.1 in a thread of the test.

``Receiver`` records every request (headers, body) and answers the statuses it was given in
turn (the last one again after that). ``silent_receiver`` accepts connections and never
answers, as a receiver that hangs does.
"""

import contextlib
import hashlib
import hmac
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.core.management import call_command


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=lambda: [200])
    headers: dict[str, str] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    url: str = ""

    def answer(self) -> int:
        index = min(len(self.requests) - 1, len(self.statuses) - 1)
        return self.statuses[index]


def signature_valid(secret: str, received: Received) -> bool:
    """Check a delivery as a receiver would: HMAC-SHA256 of the raw body, compared in
    constant time with the ``X-Signature-256`` header."""
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, received.headers.get("X-Signature-256", ""))


@contextlib.contextmanager
def receiver(*statuses: int, headers: dict[str, str] | None = None, host: str = "127.0.0.1"):
    """Run a receiver answering ``statuses`` in turn (200 by default); yield it."""
    state = Receiver(statuses=list(statuses) or [200], headers=headers or {})

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            state.requests.append(Received(self.path, dict(self.headers.items()), body))
            status = state.answer()
            self.send_response(status)
            for name, value in state.headers.items():
                self.send_header(name, value)
            text = b"thanks" if status < 300 else b"receiver says no"
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://{host}:{server.server_address[1]}/hooks/context-studio"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def silent_receiver():
    """Listen on 127.0.0.1 and accept connections that are never answered; yield the URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # the kernel completes the handshakes; nobody ever reads or answers
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hooks/never-answers"
    finally:
        listener.close()


def run_worker():
    """Run the deliveries' worker (their queue's own) until nothing is due (it needs
    committed rows: the tests that call it run in real transactions)."""
    call_command(
        "db_worker",
        "--batch",
        "--no-startup-delay",
        "--interval",
        "0",
        "--queue-name",
        "webhooks",
        verbosity=0,
    )
