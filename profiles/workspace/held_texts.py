"""Held layers' item texts in a file that every server process maps, read only when rendered.

A held layer (one without an ``itemFilter``: a knowledge base of 100,000 articles) is compiled
into every worker, which ranks it from the items' metadata and stored terms. Its texts are
needed only for what a resolution renders (an item's body, summary or excerpt), so a worker
does not hold them: the texts of one version of the layer (its ``content_token``) are written
once, by the first process that needs them, to a file of ``MATERIAL_TEXTS_DIR``, and every
process maps that file. An item's body is then a ``MappedText`` (a ``TextReference`` of the
engine): reading it decodes the item's bytes from the mapping, and the pages a worker never
reads take none of its memory. The file is immutable; a newer version of the layer gets a
new file, and the old ones are removed (a process that still maps one keeps its pages).

Each text is stored with its item's id and ``updated_at``, and an item is given a reference
only when its row, as the worker read it, has that same ``updated_at``: a row written after
the file was made has its text read from the database with it (and held, like the texts of
items patched in later). So a reference always stands for the text of the version of the
item the worker compiled. Layers of fewer than ``MAPPED_TEXTS_MIN_ITEMS`` items keep their
texts in memory (default 1,000), and ``MAPPED_TEXTS_MIN_ITEMS = None`` maps nothing.
"""

import fcntl
import hashlib
import mmap
import os
import tempfile
import threading
from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection

from profiles.models import Item
from resolver.model import TextReference

MAGIC = b"CTXTEXT1"
HEADER = 24  # magic, item count, end of the texts (int64 each after the magic)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# Files built (by this process) and mappings opened, for tests and diagnostics.
built = 0
opened = 0
_lock = threading.Lock()


def minimum_items() -> int | None:
    """Return the size from which a held layer's texts are mapped (None: never)."""
    return settings.MAPPED_TEXTS_MIN_ITEMS


def mapped(item_count: int) -> bool:
    """Return whether a held layer of this many items has its texts mapped."""
    least = minimum_items()
    return least is not None and item_count >= least


def stamp(updated_at: datetime) -> int:
    """Return a row's ``updated_at`` as integer microseconds since 1970 (exact)."""
    return (updated_at - _EPOCH) // _MICROSECOND


class MappedText(TextReference):
    """An item's body in a mapped texts file: ``text()`` decodes it from the mapping."""

    __slots__ = ("_at", "_file")

    def __init__(self, file: "LayerTexts", at: int):
        self._file = file
        self._at = at

    def text(self) -> str:
        offsets = self._file.offsets
        start, end = int(offsets[self._at]), int(offsets[self._at + 1])
        return self._file.buffer[start:end].decode("utf-8")

    def _version(self) -> tuple[int, int]:
        return int(self._file.ids[self._at]), int(self._file.stamps[self._at])

    def __eq__(self, other) -> bool:
        # The same item written at the same instant: the same text. Equal to a string when
        # that is its text (an entry whose text was read compares equal to its item).
        if other.__class__ is str:
            return self.text() == other
        return other.__class__ is MappedText and self._version() == other._version()

    def __hash__(self) -> int:
        return hash(self._version())

    def __repr__(self) -> str:
        return f"MappedText(item={self._version()[0]})"


class LayerTexts:
    """One file of texts, mapped: its items' ids (ascending), stamps and text offsets are
    arrays over the mapping itself."""

    def __init__(self, path: Path):
        global opened
        with open(path, "rb") as file:
            self.buffer = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        if self.buffer[:8] != MAGIC:
            raise ValueError(f"{path.name} is not a texts file")
        count, texts_end = np.frombuffer(self.buffer, dtype=np.int64, count=2, offset=8).tolist()
        at = texts_end
        self.ids = np.frombuffer(self.buffer, dtype=np.int64, count=count, offset=at)
        self.stamps = np.frombuffer(self.buffer, dtype=np.int64, count=count, offset=at + 8 * count)
        self.offsets = np.frombuffer(
            self.buffer, dtype=np.int64, count=count + 1, offset=at + 16 * count
        )
        opened += 1

    def references(self, item_ids: list[int], stamps: list[int]) -> list:
        """Return the text of each version (item id, ``stamp`` of its ``updated_at``): a
        reference, "" for an empty text, None when the file does not hold that version."""
        if not item_ids:
            return []
        wanted = np.array(item_ids, dtype=np.int64)
        at = np.searchsorted(self.ids, wanted)
        inside = at < len(self.ids)
        at[~inside] = 0
        held = inside & (self.ids[at] == wanted) & (self.stamps[at] == np.array(stamps))
        empty = self.offsets[at] == self.offsets[at + 1]
        out: list = [None] * len(item_ids)
        for n in np.flatnonzero(held & ~empty).tolist():
            out[n] = MappedText(self, int(at[n]))
        for n in np.flatnonzero(held & empty).tolist():
            out[n] = ""
        return out


def _directory() -> Path:
    """The files' directory: one per database (tests run many databases side by side)."""
    base = settings.MATERIAL_TEXTS_DIR or (Path(tempfile.gettempdir()) / "ctxstudio-texts")
    database = connection.settings_dict
    name = f"{database.get('ENGINE')}|{database.get('HOST')}|{database.get('PORT')}|"
    name += str(database.get("NAME"))
    folder = Path(base) / hashlib.sha256(name.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def layers_texts(layers: dict[int, str]) -> dict[int, LayerTexts]:
    """Return the mapped texts of each layer's version (layer id -> ``content_token``),
    writing the files no process has written yet (one query for all of them; one process
    writes a file, the others wait for it and map it). Raises ``OSError`` when the files
    cannot be written or read (the caller then holds the texts itself)."""
    folder = _directory()
    paths = {
        layer_id: folder / f"layer-{layer_id}-{token}.texts" for layer_id, token in layers.items()
    }
    for _ in range(3):
        if not all(path.exists() for path in paths.values()):
            with _lock, open(folder / "write.lock", "a+b") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    missing = {
                        layer_id: path for layer_id, path in paths.items() if not path.exists()
                    }
                    if missing:
                        _write(missing)
                        for layer_id, path in missing.items():
                            _remove_others(folder, layer_id, keep=path)
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        try:
            return {layer_id: LayerTexts(path) for layer_id, path in paths.items()}
        except FileNotFoundError:
            continue  # removed meanwhile by a process compiling a newer version: write it
    raise FileNotFoundError(f"the texts of layers {sorted(layers)} kept being removed")


class _File:
    """One texts file being written (atomically: under a temporary name until complete)."""

    def __init__(self, path: Path):
        self.path = path
        self.temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        self.file = open(self.temporary, "wb")  # noqa: SIM115 -- closed by finish()/discard()
        self.file.write(bytes(HEADER))
        self.position = HEADER
        self.ids, self.stamps, self.offsets = array("q"), array("q"), array("q")

    def add(self, item_id: int, updated_at: datetime, body: str) -> None:
        data = body.encode("utf-8")
        self.ids.append(item_id)
        self.stamps.append(stamp(updated_at))
        self.offsets.append(self.position)
        self.file.write(data)
        self.position += len(data)

    def finish(self) -> None:
        self.offsets.append(self.position)
        padding = -self.position % 8  # the arrays after the texts are 8-byte aligned
        self.file.write(bytes(padding))
        self.file.write(self.ids.tobytes() + self.stamps.tobytes() + self.offsets.tobytes())
        self.file.seek(0)
        self.file.write(MAGIC + array("q", [len(self.ids), self.position + padding]).tobytes())
        self.file.close()
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        self.file.close()
        self.temporary.unlink(missing_ok=True)


def _write(paths: dict[int, Path]) -> None:
    """Write the texts of the layers' items as stored now (by layer, id order)."""
    global built
    files = {layer_id: _File(path) for layer_id, path in paths.items()}
    try:
        rows = (
            Item.objects.filter(layer_id__in=sorted(paths))
            .order_by("layer_id", "id")
            .values_list("layer_id", "id", "updated_at", "body")
            .iterator(chunk_size=2000)
        )
        for layer_id, item_id, updated_at, body in rows:
            files[layer_id].add(item_id, updated_at, body)
        for file in files.values():
            file.finish()
    except BaseException:
        for file in files.values():
            file.discard()
        raise
    built += len(files)


def _remove_others(folder: Path, layer_id: int, *, keep: Path) -> None:
    """Remove the layer's other versions (a process mapping one keeps what it mapped)."""
    for other in folder.glob(f"layer-{layer_id}-*.texts"):
        if other != keep:
            other.unlink(missing_ok=True)


def texts_in_place(items: list[dict]) -> list[dict]:
    """Return item entries with every mapped body read into a string (what a write that
    compares or stores whole entries works on)."""
    return [
        {**item, "body": item["body"].text()} if isinstance(item.get("body"), MappedText) else item
        for item in items
    ]
