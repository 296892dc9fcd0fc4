"""What a call returns: the server's exact bytes (``data``), where they came from
(``origin``) and how old they are (``age``), and the SPEC §7 resolution as typed objects,
parsed on first use (an application that forwards the bytes never pays for the parse)."""

import json
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any


class Origin(StrEnum):
    """Where an answer came from. Never a silent fallback: every answer says one of these."""

    REMOTE = "remote"  # the server answered this call with the bytes
    NOT_MODIFIED = "not_modified"  # the server answered 304: the cached bytes are current
    CACHED = "cached"  # from the cache, younger than the call's max_age; the server not asked
    STALE = "stale"  # the server failed; from the cache, within the call's max_stale
    LOCAL = "local"  # resolved in this process from the snapshot (see ``degraded``)


@dataclass(frozen=True, slots=True)
class Issue:
    code: str
    layer: str
    detail: str | None


@dataclass(frozen=True, slots=True)
class Output:
    format: str
    text: str
    estimated_tokens: int


@dataclass(frozen=True, slots=True)
class Budget:
    limit: int
    estimated_tokens: int
    remaining: int


@dataclass(frozen=True, slots=True)
class ProfileRef:
    key: str
    name: str
    consumer: str
    objective: str
    environment: str | None


@dataclass(frozen=True, slots=True)
class LayerRecord:
    layer: str
    name: str
    decision: str  # inline | on-demand | omitted
    reason: str
    available: str
    applicable: str
    rendered_items: tuple[str, ...]
    record: dict = field(repr=False, compare=False)  # the whole SPEC §7 layer record


@dataclass(frozen=True, slots=True)
class Reference:
    ref: str
    layer: str
    item: str
    title: str
    reason: str
    rendered: bool


@dataclass(eq=False)
class Answer:
    """An answer's bytes and provenance; ``json`` parses the bytes (once)."""

    data: bytes
    origin: Origin
    age: float = 0.0  # seconds since the bytes were produced (0 for remote and local)
    etag: str | None = None
    # Why the answer is not local although local evaluation was asked ("" otherwise).
    note: str = ""

    @cached_property
    def json(self) -> Any:
        return json.loads(self.data)


@dataclass(eq=False)
class Resolution(Answer):
    """A resolution (SPEC §7). ``degraded`` names the served layers a local evaluation
    resolved as unavailable (``local="degraded"``); ``profile_version`` is the server's
    ``X-Profile-Version``."""

    profile_version: int | None = None
    degraded: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return self.json["status"]

    @property
    def now(self) -> str:
        return self.json["now"]

    @cached_property
    def profile(self) -> ProfileRef:
        p = self.json["profile"]
        return ProfileRef(p["key"], p["name"], p["consumer"], p["objective"], p["environment"])

    @cached_property
    def output(self) -> Output | None:
        o = self.json["output"]
        return None if o is None else Output(o["format"], o["text"], o["estimatedTokens"])

    @property
    def text(self) -> str | None:
        """The rendered context (None when ``BLOCKED``)."""
        return None if self.output is None else self.output.text

    @cached_property
    def budget(self) -> Budget:
        b = self.json["budget"]
        return Budget(b["limit"], b["estimatedTokens"], b["remaining"])

    @cached_property
    def blockers(self) -> tuple[Issue, ...]:
        return tuple(Issue(b["code"], b["layer"], b.get("detail")) for b in self.json["blockers"])

    @cached_property
    def warnings(self) -> tuple[Issue, ...]:
        return tuple(Issue(w["code"], w["layer"], w.get("detail")) for w in self.json["warnings"])

    @cached_property
    def layers(self) -> tuple[LayerRecord, ...]:
        return tuple(
            LayerRecord(
                layer=r["layer"],
                name=r["name"],
                decision=r["decision"]["kind"],
                reason=r["decision"]["reason"],
                available=r["available"]["state"],
                applicable=r["applicable"]["state"],
                rendered_items=tuple(r["rendered"].get("items", ())),
                record=r,
            )
            for r in self.json["layers"]
        )

    @cached_property
    def references(self) -> tuple[Reference, ...]:
        return tuple(
            Reference(r["ref"], r["layer"], r["item"], r["title"], r["reason"], r["rendered"])
            for r in self.json["references"]
        )


@dataclass(eq=False)
class ExpandedItem(Answer):
    """One item a resolution offers (``expand``)."""

    @property
    def ref(self) -> str:
        return self.json["ref"]

    @property
    def title(self) -> str:
        return self.json.get("title", "")

    @property
    def body(self) -> str:
        return self.json.get("body", "")

    @property
    def metadata(self) -> dict:
        return self.json.get("metadata", {})
