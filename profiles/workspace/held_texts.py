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

**The files are the service's own and verified before use** (issue 33, items 7 and 8). They
go to a folder per database under ``MATERIAL_TEXTS_DIR`` (by default ``var/texts`` in the
project, beside the SQLite database), created 0700, each file 0600. A folder that is not a
directory owned by this process's user, or that its group or others may write, is refused:
the texts are then held in memory, the error is logged and the readiness door (``/readyz``)
names it (``texts_problem``). A file is written under a temporary name and renamed into
place, never opened for writing again (so a mapping never shrinks under a worker); before
it is mapped its owner, mode, header, size, layout and digest are checked: an HMAC, keyed by
the project's ``SECRET_KEY``, of the layer's content token, the texts and the arrays. A file
that does not verify (truncated, garbage, another version's, written by somebody else) is
discarded and rebuilt from the database, and the fact is logged and shown on ``/readyz``.
"""

import fcntl
import hashlib
import hmac
import logging
import mmap
import os
import stat
import threading
import time
from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection

from profiles.models import Item
from profiles.workspace import metrics
from resolver.model import TextReference

logger = logging.getLogger(__name__)

MAGIC = b"CTXTEXT2"  # the format's version: a file of any other is rebuilt
# The magic, then int64s: item count, end of the texts (and start of the arrays), file size;
# then the 32-byte digest.
HEADER = 64
_FIELDS = slice(8, 32)
_DIGEST = slice(32, 64)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_READ_CHUNK = 1 << 20

# Files built (by this process) and mappings opened, for tests and diagnostics.
built = 0
opened = 0
_lock = threading.Lock()

#: Why this process last failed to map its held texts and holds them in memory instead
#: ("" while it maps them), for the readiness door: the folder refused, or files that could
#: not be written and verified...
mapping_problem = ""
#: ... and the last file that did not verify and was rebuilt (when, and why).
last_rebuilt = ""


class TextsFolderRefused(PermissionError):
    """The texts folder is not this process's own, or others may write it."""


class TextsFileDamaged(ValueError):
    """A texts file that does not read as a complete file of this version of its layer."""


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


def texts_problem() -> str:
    """Return what keeps this process from mapping its held texts ("" when nothing does)."""
    return mapping_problem


def _digest(token: str):
    """Return the HMAC that signs a file of the layer version ``token`` (fed the texts and
    arrays, then the header's fields): keyed by the project's secret, so that a file made by
    anybody else, or for another version, does not verify."""
    key = hashlib.sha256(b"ctxstudio.held_texts:" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, token.encode() + b"\0", hashlib.sha256)


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
    """One file of texts, verified and mapped: its items' ids (ascending), stamps and text
    offsets are arrays over the mapping itself."""

    def __init__(self, path: Path, token: str):
        global opened
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            size = _verified(fd, path, token)
            self.buffer = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        count, texts_end, _ = np.frombuffer(self.buffer, dtype=np.int64, count=3, offset=8)
        count, at = int(count), int(texts_end)
        self.ids = np.frombuffer(self.buffer, dtype=np.int64, count=count, offset=at)
        self.stamps = np.frombuffer(self.buffer, dtype=np.int64, count=count, offset=at + 8 * count)
        self.offsets = np.frombuffer(
            self.buffer, dtype=np.int64, count=count + 1, offset=at + 16 * count
        )
        _check_layout(self.ids, self.offsets, texts_end=at, name=path.name)
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


def _verified(fd: int, path: Path, token: str) -> int:
    """Check the open file ``fd`` before it is mapped: a regular file of this process's user
    that nobody else may write, of the size its header gives, whose digest is that of the
    layer version ``token``; return its size. The digest is read through
    the descriptor, so a file renamed over the path meanwhile changes nothing; the file is
    never written after its rename, so the mapping cannot shrink under the worker."""
    info = os.fstat(fd)
    name = path.name
    if not stat.S_ISREG(info.st_mode):
        raise TextsFileDamaged(f"{name} is not a regular file")
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise TextsFileDamaged(
            f"{name} is not private to this service (owner {info.st_uid}, "
            f"mode {stat.S_IMODE(info.st_mode):o})"
        )
    header = os.pread(fd, HEADER, 0)
    if len(header) < HEADER or header[:8] != MAGIC:
        raise TextsFileDamaged(f"{name} is not a texts file of this version")
    count, texts_end, size = array("q", header[_FIELDS])
    if count < 0 or texts_end < HEADER or texts_end % 8 or size != texts_end + (3 * count + 1) * 8:
        raise TextsFileDamaged(f"{name} has a header that does not add up")
    if info.st_size != size:
        raise TextsFileDamaged(f"{name} is {info.st_size} bytes, its header says {size}")
    digest = _digest(token)
    at = HEADER
    while at < size:
        chunk = os.pread(fd, min(_READ_CHUNK, size - at), at)
        if not chunk:
            raise TextsFileDamaged(f"{name} ended at byte {at} of {size}")
        digest.update(chunk)
        at += len(chunk)
    digest.update(header[_FIELDS])
    if not hmac.compare_digest(digest.digest(), header[_DIGEST]):
        raise TextsFileDamaged(f"{name} does not match its layer's version (digest differs)")
    return size


def _check_layout(ids, offsets, *, texts_end: int, name: str) -> None:
    """Check what a reader relies on: ids ascending, each text inside the texts."""
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise TextsFileDamaged(f"{name}: item ids not in ascending order")
    if (
        int(offsets[0]) != HEADER
        or int(offsets[-1]) > texts_end
        or (len(offsets) > 1 and not bool(np.all(offsets[1:] >= offsets[:-1])))
    ):
        raise TextsFileDamaged(f"{name}: text offsets outside the texts")


def _private_folder(folder: Path, *, ours: bool) -> None:
    """Create ``folder`` (0700) if missing, then refuse it unless it is a directory owned by
    this process's user that neither its group nor others may write. A folder of our own
    (``ours``: the one per database we create inside the base) is made 0700 if it was not."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise TextsFolderRefused(f"{folder} is not a directory") from None
    info = os.lstat(folder) if ours else os.stat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise TextsFolderRefused(f"{folder} is not a directory")
    if info.st_uid != os.geteuid():
        raise TextsFolderRefused(
            f"{folder} is owned by user {info.st_uid}, not by this service's user ({os.geteuid()})"
        )
    if ours and info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    elif info.st_mode & 0o022:
        raise TextsFolderRefused(
            f"{folder} may be written by its group or others "
            f"(mode {stat.S_IMODE(info.st_mode):o}): use a folder only this service can write"
        )


def _directory() -> Path:
    """The files' directory, checked: one per database (tests run many databases side by
    side), inside ``MATERIAL_TEXTS_DIR``. Raises ``TextsFolderRefused`` (an ``OSError``)."""
    base = Path(settings.MATERIAL_TEXTS_DIR)
    database = connection.settings_dict
    name = f"{database.get('ENGINE')}|{database.get('HOST')}|{database.get('PORT')}|"
    name += str(database.get("NAME"))
    folder = base / hashlib.sha256(name.encode()).hexdigest()[:16]
    _private_folder(base, ours=False)
    _private_folder(folder, ours=True)
    return folder


def layers_texts(layers: dict[int, str]) -> dict[int, LayerTexts]:
    """Return the mapped texts of each layer's version (layer id -> ``content_token``),
    writing the files no process has written yet (one query for all of them; one process
    writes a file, the others wait for it and map it). A file that does not verify is
    discarded and written again. Raises ``OSError`` when the files cannot be written or
    read, or the folder is refused (the caller then holds the texts itself): logged as an
    error and kept for the readiness door (``texts_problem``) until a later call maps them."""
    global mapping_problem
    try:
        found = _layers_texts(layers)
    except OSError as exc:
        problem = f"held texts not mapped (held in memory): {exc}"
        if problem != mapping_problem:
            logger.error("MATERIAL_TEXTS_DIR %s: %s", settings.MATERIAL_TEXTS_DIR, problem)
        mapping_problem = problem
        raise
    mapping_problem = ""
    return found


def _layers_texts(layers: dict[int, str]) -> dict[int, LayerTexts]:
    folder = _directory()
    paths = {
        layer_id: folder / f"layer-{layer_id}-{token}.texts" for layer_id, token in layers.items()
    }
    found: dict[int, LayerTexts] = {}
    damaged: dict[int, tuple] = {}
    for _ in range(3):
        for layer_id, path in paths.items():
            if layer_id in found:
                continue
            try:
                found[layer_id] = LayerTexts(path, layers[layer_id])
            except FileNotFoundError:
                pass  # not written yet, or removed meanwhile by a process writing a newer one
            except (ValueError, OSError) as exc:  # TextsFileDamaged among them
                damaged[layer_id] = (path, exc)
        if len(found) == len(paths):
            return found
        missing = {layer_id: path for layer_id, path in paths.items() if layer_id not in found}
        with _lock, _write_lock(folder):
            for layer_id, (path, exc) in damaged.items():
                _discard(path, layers[layer_id], exc)
            damaged.clear()
            unwritten = {layer_id: path for layer_id, path in missing.items() if not path.exists()}
            if unwritten:
                _write(unwritten, tokens=layers)
                for layer_id, path in unwritten.items():
                    _remove_others(folder, layer_id, keep=path)
    raise OSError(f"the texts of layers {sorted(layers)} could not be written and verified")


class _write_lock:
    """The folder's writers' lock (a private lock file, flock'ed)."""

    def __init__(self, folder: Path):
        self.path = folder / "write.lock"

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _discard(path: Path, token: str, exc: BaseException) -> None:
    """Remove a file that did not verify (under the writers' lock), unless another process
    has already rebuilt it (a file that verifies now is kept)."""
    global last_rebuilt
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    except OSError:
        fd = None  # a symbolic link or worse: not ours to read, removed below
    if fd is not None:
        try:
            _verified(fd, path, token)
            return  # rebuilt meanwhile
        except (ValueError, OSError):
            pass
        finally:
            os.close(fd)
    path.unlink(missing_ok=True)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    last_rebuilt = f"{path.name} rebuilt at {when}: {exc}"
    logger.warning("held texts: %s did not verify (%s): discarded and rebuilt", path.name, exc)


class _File:
    """One texts file being written: under a private temporary name (created 0600, never
    reused) until complete, then renamed into place and never opened for writing again."""

    def __init__(self, path: Path, token: str):
        self.path = path
        self.temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        self.temporary.unlink(missing_ok=True)
        fd = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self.file = os.fdopen(fd, "wb")
        self.file.write(bytes(HEADER))
        self.position = HEADER
        self.digest = _digest(token)
        self.ids, self.stamps, self.offsets = array("q"), array("q"), array("q")

    def add(self, item_id: int, updated_at: datetime, body: str) -> None:
        data = body.encode("utf-8")
        self.ids.append(item_id)
        self.stamps.append(stamp(updated_at))
        self.offsets.append(self.position)
        self.file.write(data)
        self.digest.update(data)
        self.position += len(data)

    def finish(self) -> None:
        self.offsets.append(self.position)
        padding = bytes(-self.position % 8)  # the arrays after the texts are 8-byte aligned
        arrays = self.ids.tobytes() + self.stamps.tobytes() + self.offsets.tobytes()
        texts_end = self.position + len(padding)
        fields = array("q", [len(self.ids), texts_end, texts_end + len(arrays)]).tobytes()
        self.digest.update(padding + arrays + fields)
        self.file.write(padding + arrays)
        self.file.seek(0)
        self.file.write(MAGIC + fields + self.digest.digest())
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        self.file.close()
        self.temporary.unlink(missing_ok=True)


def _write(paths: dict[int, Path], *, tokens: dict[int, str]) -> None:
    """Write the texts of the layers' items as stored now (by layer, id order)."""
    global built
    files = {}
    try:
        for layer_id, path in paths.items():
            files[layer_id] = _File(path, tokens[layer_id])
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
    metrics.texts_files_written.inc(len(files))


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
