"""The snapshot kept fresh: polled in a background thread, kept on disk, verified on load.

``SnapshotStore`` holds the last snapshot the server gave (``GET /api/v1/snapshot``) as a
``LocalSnapshot`` (compiled by ``resolver``, or the reason it cannot be used) and:

* **stale-while-revalidate**: calls read the snapshot it holds and never wait for the
  server; a daemon thread polls every ``interval`` seconds (±10% jitter) with
  ``If-None-Match`` (304 while unchanged) and swaps in a new snapshot once compiled
  (``interval=None``: no thread, the application calls ``refresh``);
* **persisted**: every new snapshot is written to a private file (0600, in a folder made
  0700 that must belong to this user and be closed to others), under a temporary name then
  renamed, with an HMAC of its bytes keyed by the API key; a cold start reads it before the
  first local call, so a process started while the server is down still answers. A file
  that does not verify (another owner, open permissions, truncated, altered, another
  server's or key's) is removed and the snapshot fetched again;
* **fork-safe** (``forksafe``): in a child the thread is gone and the lock new; the next
  call starts the thread again.
"""

import dataclasses
import hashlib
import hmac
import json
import logging
import os
import random
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ctxstudio_client import forksafe
from ctxstudio_client.errors import ClientError

logger = logging.getLogger("ctxstudio_client")

FILE_FORMAT = "ctxstudio-client-snapshot/1"


@dataclass(frozen=True)
class LocalSnapshot:
    """A snapshot as this process can use it: when it was fetched (wall clock), and either a
    compiled workspace or ``refusal`` (why it cannot be evaluated). ``data`` (its bytes) is
    kept only until they are written to the file."""

    data: bytes
    etag: str
    fetched_at: float
    engine: str
    compiled: object = None
    served: tuple[str, ...] = ()
    refusal: str = ""
    from_file: bool = False

    def age(self) -> float:
        return max(0.0, time.time() - self.fetched_at)


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxstudio-client"


class SnapshotStore:
    """``fetch(etag) -> (status, etag, data)`` polls the server (raises ``ClientError``);
    ``prepare(data, etag, fetched_at) -> LocalSnapshot`` compiles a snapshot's bytes."""

    def __init__(
        self, fetch, prepare, *, secret: str, source: str, directory, interval: float | None
    ):
        self._fetch = fetch
        self._prepare = prepare
        self._secret = secret.encode()
        self._source = hashlib.sha256(source.encode()).hexdigest()
        self.interval = interval
        self.path: Path | None = None
        if directory is not False:
            folder = Path(directory) if directory is not None else default_directory()
            self.path = folder / f"{self._source[:24]}.snapshot"
        self.current: LocalSnapshot | None = None
        self.refreshes = 0  # polls answered (200 or 304), for diagnostics and tests
        self.last_error: str = ""
        self.persist_problem: str = ""
        self._loaded = False
        self._closed = False
        self._init_process()
        forksafe.register(self)

    def _init_process(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._tried = threading.Event()  # set after each poll, answered or not
        self._thread: threading.Thread | None = None

    def after_fork(self) -> None:
        self._init_process()

    # -- what calls use ----------------------------------------------------------------------

    def get(self, wait: float = 0.0) -> LocalSnapshot | None:
        """Return the snapshot held (loading the file on first use), starting the thread;
        with none held, wait up to ``wait`` seconds for the thread's first poll."""
        if self._pid != os.getpid():
            self._init_process()
        if self._thread is None or not self._thread.is_alive():
            with self._lock:
                if not self._loaded:
                    self._loaded = True
                    self._load_file()
                if self.interval is None:
                    pass  # refreshed by the application (``refresh``), no thread
                elif not self._closed and (self._thread is None or not self._thread.is_alive()):
                    self._thread = threading.Thread(
                        target=self._run, name="ctxstudio-snapshot", daemon=True
                    )
                    self._thread.start()
        if self.current is None and wait > 0:
            if self.interval is None:
                self._poll()
            else:
                self._tried.wait(wait)
        return self.current

    def refresh(self) -> bool:
        """Poll the server once; return whether the snapshot changed. Raises ``ClientError``."""
        held = self.current
        status, etag, data = self._fetch(held.etag if held is not None else None)
        self.refreshes += 1
        if status == 304 and held is not None:
            self.current = dataclasses.replace(held, fetched_at=time.time())  # vouched for
            return False
        snapshot = self._prepare(data, etag or "", time.time())
        self._persist(snapshot)  # before it is used: a call that sees it finds it on disk
        # The bytes were for the file: the compiled workspace is what calls use.
        self.current = dataclasses.replace(snapshot, data=b"")
        return True

    def wake(self) -> None:
        """Ask the thread to poll now (tests, or after the application learns of a change)."""
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    # -- the thread -------------------------------------------------------------------------

    def _poll(self) -> None:
        """Refresh once; a failure is logged and kept in ``last_error``, never raised."""
        try:
            self.refresh()
            self.last_error = ""
        except ClientError as exc:
            if not self.last_error:  # once per outage, not once per poll
                logger.warning("snapshot refresh failed: %s", exc)
            self.last_error = str(exc)
        except Exception as exc:  # a bad snapshot must not end the thread
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("snapshot refresh failed")
        self._tried.set()

    def _run(self) -> None:
        while not self._closed:
            self._poll()
            self._wake.wait(self.interval * random.uniform(0.9, 1.1))
            self._wake.clear()

    # -- the file ---------------------------------------------------------------------------

    def _mac(self, etag: str, fetched_at: float, data: bytes) -> str:
        head = json.dumps([self._source, etag, fetched_at]).encode()
        return hmac.new(self._secret, head + b"\n" + data, hashlib.sha256).hexdigest()

    def _private_folder(self) -> Path | None:
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = folder.stat()
        except OSError as exc:
            self.persist_problem = f"{folder}: {exc}"
            return None
        if info.st_uid != os.getuid() or info.st_mode & 0o077 or not stat.S_ISDIR(info.st_mode):
            self.persist_problem = (
                f"{folder} is not a folder of this user closed to others (0700): "
                "the snapshot is kept in memory only"
            )
            logger.warning(self.persist_problem)
            return None
        return folder

    def _persist(self, snapshot: LocalSnapshot) -> None:
        if self.path is None or (folder := self._private_folder()) is None:
            return
        header = {
            "format": FILE_FORMAT,
            "etag": snapshot.etag,
            "fetchedAt": snapshot.fetched_at,
            "length": len(snapshot.data),
            "mac": self._mac(snapshot.etag, snapshot.fetched_at, snapshot.data),
        }
        try:
            descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".snapshot-")
            with os.fdopen(descriptor, "wb") as out:  # mkstemp makes it 0600
                out.write(json.dumps(header).encode() + b"\n" + snapshot.data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
            self.persist_problem = ""
        except OSError as exc:
            self.persist_problem = f"{self.path}: {exc}"
            logger.warning("snapshot not persisted: %s", exc)

    def _load_file(self) -> None:
        """Read the persisted snapshot, if it verifies; else remove it (and log why)."""
        if self.path is None or self._private_folder() is None:
            return
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                raw = handle.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            logger.warning("snapshot file unreadable (%s): fetched again", exc)
            return
        problem = self._file_problem(info, raw)
        if problem:
            logger.warning("snapshot file %s ignored (%s): fetched again", self.path, problem)
            self.path.unlink(missing_ok=True)
            return
        header, data = raw.split(b"\n", 1)
        meta = json.loads(header)
        try:
            prepared = self._prepare(data, meta["etag"], meta["fetchedAt"], from_file=True)
            self.current = dataclasses.replace(prepared, data=b"")
        except Exception as exc:
            logger.warning("snapshot file %s ignored (%s): fetched again", self.path, exc)
            self.path.unlink(missing_ok=True)

    def _file_problem(self, info, raw: bytes) -> str:
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            return "not this user's, or open to others"
        header, _, data = raw.partition(b"\n")
        try:
            meta = json.loads(header)
            expected = self._mac(meta["etag"], meta["fetchedAt"], data)
            if meta["format"] != FILE_FORMAT or meta["length"] != len(data):
                return "another format, or truncated"
        except (ValueError, KeyError, TypeError):
            return "no valid header"
        if not hmac.compare_digest(str(meta.get("mac")), expected):
            return "its signature does not match (altered, or another server's or key's)"
        return ""
