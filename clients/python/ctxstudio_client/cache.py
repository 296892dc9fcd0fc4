"""The bounded per-process cache of recent answers, by request (path and canonical body).

Bounded twice: ``max_entries`` answers and ``max_bytes`` of their bytes, the least recently
used leaving first. An entry keeps the bytes, the ETag (sent as ``If-None-Match`` when the
same request is sent again) and when the server last vouched for the bytes (a 200 or a 304).
"""

import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    data: bytes
    etag: str | None
    stored_at: float  # time.monotonic() of the last 200 or 304
    headers: tuple[tuple[str, str], ...] = ()

    def age(self) -> float:
        return max(0.0, time.monotonic() - self.stored_at)


def request_key(path: str, body: dict) -> str:
    """Return the cache key of a request: its path and its body with sorted keys."""
    return path + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"))


class AnswerCache:
    def __init__(self, max_entries: int = 256, max_bytes: int = 32 * 1024 * 1024):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def after_fork(self) -> None:
        """A child of fork: a lock held by another thread at the fork is never released."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: str) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: str, entry: Entry) -> None:
        if self.max_entries <= 0 or len(entry.data) > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old.data)
            self._entries[key] = entry
            self._bytes += len(entry.data)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.data)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
