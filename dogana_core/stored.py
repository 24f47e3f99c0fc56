"""The ledger as a receiver stores it: an index, and its regions a chunk at a time.

A ledger's wire form (Ledger.to_json) spells out every region, so reading it decodes them all and
writing it writes them all: seconds at 20,000 regions, for every decision and every publication.
A receiver stores it in two parts instead:

    the index   one line of JSON: the position, the head, and for each chunk of the ledger's
                RegionMap its number of regions, its first low end and the digest of its bytes
                {"chunks":[[regions, first low end, digest], ...],"generation":...,
                 "publication_id":...,"stored":2}
    the chunks  each chunk's bytes under its digest: the RFC 8785 bytes of its regions' identity
                forms, comma separated, exactly as they enter the ledger's identity

Beside each chunk, a receiver may store its summary (summary_form): what claims over the chunk
state without reading its regions, so that a new process states a long history's claims from
the summaries alone. A summary is a pure function of its chunk's bytes, stored under the same
digest: a cache, never a source. A missing one, or one in another form (read_summary gives
None), is computed again from the regions; one stored is checked against the regions whenever
they are decoded, and Receiver.verify decodes them all.

An apply replaces one chunk or a few, so a publication writes those and the index. A chunk is
named by the SHA-256 of its bytes, so bytes kept for a digest can never be another chunk's: a
reader may keep them across reads, publications and processes, and the bytes read for a digest
are checked against it. A loaded ledger decodes only the chunks an apply touches, and its
identity hashes the chunks' bytes as they are. This form never travels: the wire form stays
Ledger.to_json, and the identities are the spec's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property, lru_cache

from dogana_core.contract import Contract
from dogana_core.errors import SerializationError
from dogana_core.ledger import Ledger
from dogana_core.manifest import SHA256_HEX
from dogana_core.region import Chunk, RegionMap, Summary
from dogana_core.values import Position, Scalar
from dogana_core.wire import JSON, Optional, Text, Value, parse_json, read_integer
from dogana_core.wire import Position as PositionCodec

STORED = 2
"""The version of this form, written in its index."""

SUMMARY = 1
"""The version of a stored summary's form, its first element."""

_FIELDS = {"chunks", "generation", "publication_id", "stored"}
_HEAD = Optional(Value())


def digest(chunk: Chunk) -> str:
    """The name a chunk is stored under: SHA-256 of its bytes, computed once per chunk."""
    name: str | None = chunk.memo.get("digest")
    if name is None:
        name = chunk.memo["digest"] = hashlib.sha256(chunk.canonical).hexdigest()
    return name


def named(ledger: Ledger) -> dict[str, Chunk]:
    """The chunks of a ledger by digest, in order."""
    regions = ledger.regions
    assert isinstance(regions, RegionMap)
    return {digest(chunk): chunk for chunk in regions.chunks}


def stored_form(ledger: Ledger) -> tuple[str, dict[str, bytes]]:
    """The index of a ledger, and the bytes of its chunks by digest."""
    regions = ledger.regions
    assert isinstance(regions, RegionMap)
    chunks = regions.chunks
    index = {
        "chunks": [[c.count, _head_form(c), digest(c)] for c in chunks],
        "generation": Optional(PositionCodec()).encode(ledger.generation, False),
        "publication_id": ledger.publication_id,
        "stored": STORED,
    }
    # json.dumps escapes every control character: the index is one line.
    text = json.dumps(index, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text, {digest(chunk): chunk.canonical for chunk in chunks}


@dataclass(frozen=True)
class Index:
    """A stored ledger's index, read: what to fetch (digests), then the ledger from the bytes."""

    chunks: tuple[tuple[int, Scalar | None, str], ...]
    generation: Position | None
    publication_id: str | None

    @classmethod
    def read(cls, text: str) -> Index:
        """The index stored_form wrote; SerializationError names what is wrong."""
        data = parse_json(text)
        if not isinstance(data, dict) or set(data) != _FIELDS:
            raise SerializationError(
                "stored ledger", f"an index has the fields {', '.join(sorted(_FIELDS))}"
            )
        if data["stored"] != STORED:
            raise SerializationError("stored ledger.stored", f"{data['stored']!r} is not {STORED}")
        if not isinstance(data["chunks"], list):
            raise SerializationError("stored ledger.chunks", "expected a list")
        return cls(
            tuple(
                _entry(entry, f"stored ledger.chunks[{n}]")
                for n, entry in enumerate(data["chunks"])
            ),
            Optional(PositionCodec()).decode(data["generation"], "stored ledger.generation"),
            Optional(Text(nonempty=True)).decode(
                data["publication_id"], "stored ledger.publication_id"
            ),
        )

    @cached_property
    def digests(self) -> tuple[str, ...]:
        return tuple(name for _, _, name in self.chunks)

    def ledger(
        self,
        contract: Contract,
        chunks: Mapping[str, bytes | Chunk],
        summaries: Mapping[str, Summary] | None = None,
    ) -> Ledger:
        """The ledger under contract, from its chunks' bytes (each checked against its digest
        by whoever read it), or from chunks a reader kept by digest; no region is decoded
        until one is read, nor for claims over a chunk whose summary was stored.

        A chunk is the same for every ledger that names its digest, so a kept one is shared
        as it is, with the regions it decoded and the claims it stated: a ledger read again
        decodes nothing an earlier read of it did."""
        missing = [name for name in self.digests if name not in chunks]
        if missing:
            raise SerializationError("stored ledger", f"chunk {missing[0]} is missing")
        stored = []
        for count, head, name in self.chunks:
            found = chunks[name]
            if isinstance(found, Chunk):
                if found.count != count or found.head != head:
                    raise SerializationError(
                        "Ledger.regions",
                        f"chunk {name} holds {found.count} regions from {found.head!r}, its "
                        f"index says {count} from {head!r}",
                    )
                stored.append(found)
                continue
            chunk = Chunk.stored(found, count, head, (summaries or {}).get(name))
            chunk.memo["digest"] = name  # checked by its reader: not hashed again to store it
            stored.append(chunk)
        return Ledger(contract, RegionMap.of_chunks(stored), self.generation, self.publication_id)


def summary_form(chunk: Chunk) -> str:
    """The stored text of a chunk's Summary, one line of JSON:
    [SUMMARY, unknown, patched, earliest, latest, deletions], dates in ISO 8601 UTC or null.
    A chunk decodes its regions for it only when it has no summary yet."""
    summary = chunk.summary
    dates = [
        None if d is None else d.isoformat()
        for d in (summary.earliest, summary.latest, summary.deletions)
    ]
    return json.dumps([SUMMARY, summary.unknown, summary.patched, *dates], separators=(",", ":"))


def read_summary(text: str) -> Summary | None:
    """The Summary summary_form wrote; None for any other text, a summary in another form or
    a damaged one: its reader computes the summary again from the chunk's regions."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, list) or len(data) != 6 or data[0] is True or data[0] != SUMMARY:
        return None
    unknown, patched, *dates = data[1:]
    if not isinstance(unknown, bool) or not isinstance(patched, bool):
        return None
    instants: list[datetime | None] = []
    for date in dates:
        if date is None:
            instants.append(None)
            continue
        try:
            instant = datetime.fromisoformat(date) if isinstance(date, str) else None
        except ValueError:
            instant = None
        if instant is None or instant.utcoffset() is None or instant.utcoffset():
            return None
        instants.append(instant.replace(tzinfo=UTC))
    earliest, latest, deletions = instants
    if (earliest is None) != (latest is None) or (earliest is None) != (deletions is None):
        return None
    if earliest is None and (patched or not unknown):  # a chunk of unknown regions only
        return None
    return Summary(unknown, patched, earliest, latest, deletions)


def _head_form(chunk: Chunk) -> JSON:
    """The wire form of a chunk's first low end, encoded once per chunk."""
    form: JSON = chunk.memo.get("head")
    if form is None and chunk.head is not None:
        form = chunk.memo["head"] = _HEAD.encode(chunk.head, True)
    return form


def _entry(entry: JSON, where: str) -> tuple[int, Scalar | None, str]:
    if not isinstance(entry, list) or len(entry) != 3:
        raise SerializationError(where, "expected [regions, first low end, digest]")
    count, name = read_integer(entry[0], where), entry[2]
    if count < 1 or not isinstance(name, str) or not SHA256_HEX.fullmatch(name):
        raise SerializationError(where, "a chunk holds a region or more, named by its SHA-256")
    head = entry[1]
    if isinstance(head, dict) and len(head) == 1:
        # A tagged end: the index after each publication repeats the ends of every chunk it
        # did not touch, so each is decoded once per process.
        ((tag, body),) = head.items()
        if isinstance(body, str):
            try:
                return count, _tagged_head(tag, body), name
            except SerializationError:
                pass  # decoded again below, so that the error names this entry
    return count, _HEAD.decode(head, where), name


@lru_cache(maxsize=2**16)
def _tagged_head(tag: str, body: str) -> Scalar | None:
    return _HEAD.decode({tag: body}, "stored ledger")


def forget() -> None:
    """Forget the index ends decoded so far, as a new process starts without them."""
    _tagged_head.cache_clear()


def checked(name: str, chunk: bytes) -> bytes:
    """chunk, read for the digest name: SerializationError if they differ."""
    if hashlib.sha256(chunk).hexdigest() != name:
        raise SerializationError("stored ledger", f"the bytes read for chunk {name} are another's")
    return chunk
