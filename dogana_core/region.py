"""Region, and the persistent sorted partition a ledger keeps its regions in.

A Region is an interval of the window column's values with the two dates the ledger proves
there: complete_as_of (c) and deletions_as_of (d), both absent (unknown) or d <= c.

One value, one wire form. Every domain is discrete (values.successor), so every interval can be
written half-open, and that is the only form a Region accepts:

- a bounded low end is closed, a bounded high end is open: [low, high);
- an unbounded end (None) is open;
- a low end at its domain's minimum ("", date.min, datetime.min) is written unbounded, and a
  high end beyond its domain's maximum is unbounded, so a window reaching date.max or
  datetime.max creates no empty region beyond it;
- low < high, and a high end is never a domain minimum: no region is empty.

A closed window [a, b] is the Region [a, successor(b)) (Region.closed). The identity vectors
depend on this choice: other implementations must write regions the same way.

RegionMap holds a ledger's regions as a persistent sequence of small chunks with a bisect index,
so that replacing the regions a delivery covers costs what it touches, plus a copy of the
chunk index, instead of a copy of the whole history. Each chunk caches its canonical bytes so a
ledger's identity re-encodes only the chunks that changed, and its Summary so that claims over
a chunk held whole need not look at each of its regions.

A receiver stores a map a chunk at a time, as its bytes (stored.py): a map of stored chunks
(RegionMap.of_chunks) decodes no region until one is read, so reading a ledger to decide on a
delivery costs the chunks the delivery touches, plus hashing the bytes for the identity.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from itertools import accumulate, chain, pairwise
from typing import Any, Protocol, overload

from dogana_core.errors import InvalidContract, SerializationError
from dogana_core.jcs import canonicalize
from dogana_core.values import (
    ORDERED_TYPES,
    LogicalType,
    Scalar,
    check_scalar,
    exact_integer,
    is_domain_minimum,
    successor,
    type_of,
    utc,
)
from dogana_core.wire import Boolean, DateTimeTag, Optional, Value, Wire, wire_field

Evidence = tuple[datetime | None, datetime | None]
"""A region's (complete_as_of, deletions_as_of)."""

UNKNOWN: Evidence = (None, None)


def before(a: Any, b: Any) -> bool:
    """a < b for two bounded values of one domain (mypy cannot see that a union is one type)."""
    return bool(a < b)


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


@dataclass(frozen=True)
class Region(Wire):
    """[low, high) with its dates. Region() is the whole domain, unknown."""

    low: Scalar | None = wire_field(Optional(Value()), default=None)
    high: Scalar | None = wire_field(Optional(Value()), default=None)
    low_open: bool = wire_field(Boolean(), default=True)
    high_open: bool = wire_field(Boolean(), default=True)
    complete_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)
    deletions_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        kind = None
        for name in ("low", "high"):
            value = getattr(self, name)
            if value is not None:
                kind = _endpoint_type(value, f"Region.{name}", kind)
                value = check_scalar(value, kind, f"Region.{name}")
                if isinstance(value, int):
                    exact_integer(value, f"Region.{name}")
                set_(self, name, value)
        low, high = self.low, self.high
        if self.low_open is not (low is None):
            raise InvalidContract(
                "Region.low_open: canonical regions are closed at a bounded low end and open at an "
                f"unbounded one; got low={low!r} with low_open={self.low_open!r}"
            )
        if self.high_open is not True:
            raise InvalidContract(
                "Region.high_open: canonical regions are open at the high end; write the closed "
                "end b "
                "as the open end successor(b)"
            )
        if low is not None and is_domain_minimum(low):
            raise InvalidContract(
                f"Region.low: {low!r} is its domain's minimum; write it as None (unbounded)"
            )
        if high is not None and is_domain_minimum(high):
            raise InvalidContract(
                f"Region.high: {high!r} is its domain's minimum; the region would be empty"
            )
        if low is not None and high is not None and not before(low, high):
            raise InvalidContract(
                f"Region: low {low!r} is not before high {high!r}; a region is never empty"
            )
        c, d = self.complete_as_of, self.deletions_as_of
        if (c is None) is not (d is None):
            raise InvalidContract(
                "Region.deletions_as_of: the two dates are both absent (unknown) or both present"
            )
        if c is not None and d is not None:
            c = utc(c, "Region.complete_as_of")
            d = utc(d, "Region.deletions_as_of")
            if d > c:
                raise InvalidContract(
                    f"Region.deletions_as_of: {d.isoformat()} is after complete_as_of "
                    f"{c.isoformat()}; "
                    "d <= c always"
                )
            set_(self, "complete_as_of", c)
            set_(self, "deletions_as_of", d)

    @classmethod
    def span(
        cls,
        low: Scalar | None,
        high: Scalar | None,
        complete_as_of: datetime | None = None,
        deletions_as_of: datetime | None = None,
    ) -> Region:
        """The half-open [low, high) in canonical form: a domain minimum as low becomes None."""
        if low is not None and is_domain_minimum(low):
            low = None
        return cls(low, high, low is None, True, complete_as_of, deletions_as_of)

    @classmethod
    def closed(
        cls,
        low: Scalar,
        high: Scalar,
        complete_as_of: datetime | None = None,
        deletions_as_of: datetime | None = None,
    ) -> Region:
        """The closed window [low, high], as [low, successor(high)); unbounded past a domain end."""
        return cls.span(low, successor(high), complete_as_of, deletions_as_of)

    @cached_property
    def canonical(self) -> bytes:
        """The RFC 8785 bytes of the identity form, kept: a ledger's identity reuses them."""
        return canonicalize(self.identity_dict())

    @property
    def known(self) -> bool:
        return self.complete_as_of is not None

    @property
    def evidence(self) -> Evidence:
        return (self.complete_as_of, self.deletions_as_of)

    def with_evidence(self, evidence: Evidence) -> Region:
        return Region(self.low, self.high, self.low_open, self.high_open, *evidence)


def _endpoint_type(value: Any, what: str, expected: LogicalType | None) -> LogicalType:
    try:
        kind = type_of(value)
    except InvalidContract as exc:
        raise InvalidContract(f"{what}: {exc}") from None
    if kind not in ORDERED_TYPES:
        raise InvalidContract(f"{what}: {kind} is not an ordered domain")
    if expected is not None and kind is not expected:
        raise InvalidContract(f"{what}: {kind} {value!r} is not of the other end's type {expected}")
    return kind


# The persistent partition -----------------------------------------------------------------------

CHUNK = 64
"""Regions per chunk at most. A splice keeps chunks at least half full where it can, and fills
them whole at the end of the map, where a history grows a day at a time: only the last chunk
is then short, and a long history has half as many chunks to read, store and hash."""


class Chunk:
    """A run of consecutive regions with their low ends for bisect; never changed once built.

    A chunk read from storage (Chunk.stored) holds only its canonical bytes, its length and its
    first low end until a caller reads its regions: a ledger's identity hashes the bytes, and an
    apply decodes the few chunks it touches. memo is for what readers derive from the regions
    (claims.py keeps its RegionClaims there): a chunk never changes, so neither does that.
    """

    __slots__ = ("_canonical", "_summary", "count", "head", "lows", "memo", "regions")

    regions: tuple[Region, ...]
    # Any: the lows are of one domain, which the type of Scalar cannot say.
    lows: tuple[Any, ...]

    def __init__(self, regions: tuple[Region, ...]) -> None:
        self.regions = regions
        self.lows = tuple(region.low for region in regions)
        self.count = len(regions)
        self.head: Any = self.lows[0]
        self._canonical: bytes | None = None
        self._summary: Summary | None = None
        self.memo: dict[Any, Any] = {}

    @classmethod
    def stored(
        cls, canonical: bytes, count: int, head: Scalar | None, summary: Summary | None = None
    ) -> Chunk:
        """A chunk known by its canonical bytes; its regions are decoded when first read.

        summary, when its reader stored one, states claims over the chunk without decoding it;
        it is checked against the regions whenever they are decoded."""
        chunk = cls.__new__(cls)
        chunk._canonical = canonical
        chunk.count = count
        chunk.head = head
        chunk._summary = summary
        chunk.memo = {}
        return chunk

    def __getattr__(self, name: str) -> Any:
        # Called only for an unset slot: the regions and lows of a stored chunk not yet read.
        if name not in ("regions", "lows") or self._canonical is None:
            raise AttributeError(name)
        regions = _decoded(self._canonical)
        if len(regions) != self.count or (regions[0].low != self.head):
            raise SerializationError(
                "Ledger.regions",
                f"a stored chunk holds {len(regions)} regions from {regions[0].low!r}, its index "
                f"says {self.count} from {self.head!r}",
            )
        if self._summary is not None and self._summary != Summary.of(regions):
            raise SerializationError(
                "Ledger.regions",
                f"a stored chunk's summary {self._summary} is not its regions' "
                f"{Summary.of(regions)}",
            )
        self.regions = regions
        self.lows = tuple(region.low for region in regions)
        return getattr(self, name)

    @property
    def decoded(self) -> bool:
        """Whether the regions are at hand: built with them, or read and decoded since."""
        try:
            object.__getattribute__(self, "regions")  # not __getattr__, which would decode
        except AttributeError:
            return False
        return True

    @property
    def canonical(self) -> bytes:
        """The RFC 8785 bytes of these regions' identity forms, comma separated."""
        if self._canonical is None:
            self._canonical = b",".join(region.canonical for region in self.regions)
        return self._canonical

    @property
    def summary(self) -> Summary:
        if self._summary is None:
            self._summary = Summary.of(self.regions)
        return self._summary

    def index_after(self, value: Scalar) -> int:
        """How many regions of this chunk start at or before value."""
        # Only the map's first region has no low end, and it starts before everything.
        start = 1 if self.lows[0] is None else 0
        return bisect_right(self.lows, value, start)


@dataclass(frozen=True)
class Summary:
    """What a run of regions states as a whole, for claims that need not look at each region:
    whether one is unknown, whether one known region is patched (d < c), and the earliest and
    latest complete_as_of and the earliest deletions_as_of over the known ones."""

    unknown: bool
    patched: bool
    earliest: datetime | None
    latest: datetime | None
    deletions: datetime | None

    @classmethod
    def of(cls, regions: Sequence[Region]) -> Summary:
        known = [region.evidence for region in regions if region.complete_as_of is not None]
        if not known:
            return cls(bool(regions), False, None, None, None)
        completes = [c for c, _ in known]
        return cls(
            len(known) < len(regions),
            any(d < c for c, d in known),  # type: ignore[operator]
            min(completes),  # type: ignore[type-var]
            max(completes),  # type: ignore[type-var]
            min(d for _, d in known),  # type: ignore[type-var]
        )


class RegionMap(Sequence[Region]):
    """Sorted regions partitioning a domain, no two neighbours with equal evidence.

    Built from regions it checks whole once (RegionMap.of); then replace() builds a new map that
    shares every chunk it does not touch with this one. A place in the map is a pair (chunk,
    offset), so that nothing is renumbered when a splice changes a chunk's length.
    """

    __slots__ = ("_chunks", "_ends", "_hash", "_heads", "_len")

    def __init__(self, chunks: tuple[Chunk, ...], heads: tuple[Any, ...], length: int) -> None:
        self._chunks = chunks
        # The low end of each chunk's first region; the first is None, never compared.
        self._heads = heads
        self._len = length
        self._ends: tuple[int, ...] | None = None
        self._hash: int | None = None

    @classmethod
    def _build(cls, chunks: tuple[Chunk, ...]) -> RegionMap:
        return cls(
            chunks, tuple(chunk.head for chunk in chunks), sum(chunk.count for chunk in chunks)
        )

    @classmethod
    def of(
        cls, regions: Sequence[Region], window_type: LogicalType | None, what: str = "regions"
    ) -> RegionMap:
        """Check that regions partition the domain of window_type, sorted, no equal neighbours."""
        regions = tuple(regions)
        if not regions:
            raise InvalidContract(f"{what}: a ledger has at least one region")
        for index, region in enumerate(regions):
            if not isinstance(region, Region):
                raise InvalidContract(
                    f"{what}[{index}]: expected a Region, got {type(region).__name__}"
                )
            for end in (region.low, region.high):
                if end is not None and (window_type is None or type_of(end) is not window_type):
                    expected = (
                        "no bounds (the contract has no window column)"
                        if window_type is None
                        else window_type
                    )
                    raise InvalidContract(f"{what}[{index}]: endpoint {end!r} is not {expected}")
        if regions[0].low is not None:
            raise InvalidContract(
                f"{what}[0]: the first region starts unbounded; regions cover the domain"
            )
        if regions[-1].high is not None:
            raise InvalidContract(
                f"{what}[-1]: the last region ends unbounded; regions cover the domain"
            )
        for index, (left, right) in enumerate(pairwise(regions)):
            if left.high is None or left.high != right.low:
                raise InvalidContract(
                    f"{what}[{index + 1}]: starts at {right.low!r}, not where region {index} ends "
                    f"({left.high!r}); regions are sorted and neither overlap nor leave gaps"
                )
            if left.evidence == right.evidence:
                raise InvalidContract(
                    f"{what}[{index + 1}]: has the same dates as its neighbour; equal neighbours "
                    "merge"
                )
        return cls._build(_chunked(regions))

    # Sequence ------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Region: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Region, ...]: ...

    def __getitem__(self, index: int | slice) -> Region | tuple[Region, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("region index out of range")
        if index == 0:
            return self._chunks[0].regions[0]
        if self._ends is None:
            self._ends = tuple(accumulate(chunk.count for chunk in self._chunks))
        k = bisect_right(self._ends, index)
        return self._chunks[k].regions[index - (self._ends[k - 1] if k else 0)]

    def __iter__(self) -> Iterator[Region]:
        return chain.from_iterable(chunk.regions for chunk in self._chunks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RegionMap | tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        return f"RegionMap({tuple(self)!r})"

    def feed(self, digest: Hasher) -> None:
        """Hash the RFC 8785 bytes of the array of these regions' identity forms."""
        digest.update(b"[")
        for index, chunk in enumerate(self._chunks):
            if index:
                digest.update(b",")
            digest.update(chunk.canonical)
        digest.update(b"]")

    def runs(self, low: Scalar | None, high: Scalar | None) -> Iterator[Chunk | list[Region]]:
        """What over(low, high) returns, a chunk at a time: a Chunk when [low, high) holds it
        whole, else the list of its regions there, cut to it. Costs one step per chunk plus
        the regions of the two chunks at the edges."""
        (k, p), (kl, pl) = self._holding(low), self._last_before(high)
        for index in range(k, kl + 1):
            chunk = self._chunks[index]
            first = p if index == k else 0
            last = pl if index == kl else chunk.count - 1
            whole = (index > k or low is None) and (index < kl or high is None)
            if whole and first == 0 and last == chunk.count - 1:
                yield chunk
            else:
                yield [_clip(region, low, high) for region in chunk.regions[first : last + 1]]

    def a_bounded_end(self) -> Scalar | None:
        """An end of a region that is a value, None when the one region is the whole domain:
        the second chunk's first low end where there is one, so no chunk is decoded for it."""
        if len(self._chunks) > 1:
            return self._heads[1]  # type: ignore[no-any-return]
        return self[0].high

    # Storage -------------------------------------------------------------------------------------

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self._chunks

    @classmethod
    def of_chunks(cls, chunks: Sequence[Chunk], what: str = "Ledger.regions") -> RegionMap:
        """The map of stored chunks (Chunk.stored), in order; each is checked when decoded."""
        if not chunks or chunks[0].head is not None:
            raise SerializationError(what, "the first of at least one chunk starts unbounded")
        return cls._build(tuple(chunks))

    # Places --------------------------------------------------------------------------------------

    def _holding(self, value: Scalar | None) -> tuple[int, int]:
        """The place of the region holding value; None is the low end of the domain."""
        if value is None:
            return (0, 0)
        k = bisect_right(self._heads, value, 1) - 1
        return (k, self._chunks[k].index_after(value) - 1)

    def _last_before(self, high: Scalar | None) -> tuple[int, int]:
        """The place of the last region starting before high; None is past the domain's end."""
        if high is None:
            return (len(self._chunks) - 1, self._chunks[-1].count - 1)
        k = bisect_left(self._heads, high, 1) - 1
        chunk = self._chunks[k]
        return (k, bisect_left(chunk.lows, high, 1 if k == 0 else 0) - 1)

    def _between(self, first: tuple[int, int], last: tuple[int, int]) -> list[Region]:
        """The regions from place first to place last, both included."""
        (k, p), (kl, pl) = first, last
        if k == kl:
            return list(self._chunks[k].regions[p : pl + 1])
        out = list(self._chunks[k].regions[p:])
        for chunk in self._chunks[k + 1 : kl]:
            out.extend(chunk.regions)
        out.extend(self._chunks[kl].regions[: pl + 1])
        return out

    def _step(self, place: tuple[int, int], by: int) -> tuple[int, int]:
        """The place of the neighbour before (by=-1) or after (by=1), or place at an end."""
        k, p = place
        if by < 0:
            if p > 0:
                return (k, p - 1)
            return (k - 1, self._chunks[k - 1].count - 1) if k > 0 else place
        if p + 1 < self._chunks[k].count:
            return (k, p + 1)
        return (k + 1, 0) if k + 1 < len(self._chunks) else place

    # Reading and updating ------------------------------------------------------------------------

    def over(self, low: Scalar | None, high: Scalar | None) -> list[Region]:
        """The regions that meet [low, high), cut to it; costs what it returns."""
        regions = self._between(self._holding(low), self._last_before(high))
        return [_clip(region, low, high) for region in regions]

    def replace(
        self, low: Scalar | None, high: Scalar | None, pieces: Sequence[Region]
    ) -> RegionMap:
        """A map where [low, high) holds pieces (which partition it) and the rest is unchanged.

        Equal neighbours merge, across the edges of [low, high) too, so the result keeps every
        invariant without looking at any region the pieces do not touch or border.
        """
        # One neighbour on each side joins the splice so that it can merge with the edges.
        first = self._step(self._holding(low), -1)
        last = self._step(self._last_before(high), 1)
        old = self._between(first, last)
        local = [_clip(region, None, low) for region in old if _starts_before(region, low)]
        local.extend(pieces)
        local.extend(_clip(region, high, None) for region in old if _ends_after(region, high))
        return self._splice(first, last, len(old), _merged(local))

    def _splice(
        self, first: tuple[int, int], last: tuple[int, int], removed: int, regions: list[Region]
    ) -> RegionMap:
        (ki, pi), (kj, pj) = first, last
        run = [*self._chunks[ki].regions[:pi], *regions, *self._chunks[kj].regions[pj + 1 :]]
        # A short run borrows a neighbouring chunk so that chunks stay at least half full and
        # the chunk index stays about len / CHUNK long however the history grew; the last
        # chunk may stay short, since the chunks a growing history fills before it are whole.
        at_end = kj + 1 == len(self._chunks)
        if len(run) < CHUNK // 2 and ki > 0 and not at_end:
            ki -= 1
            run[:0] = self._chunks[ki].regions
        elif len(run) < CHUNK // 2 and not at_end:
            kj += 1
            run.extend(self._chunks[kj].regions)
        middle = _chunked(run, whole=at_end)
        return RegionMap(
            (*self._chunks[:ki], *middle, *self._chunks[kj + 1 :]),
            (*self._heads[:ki], *(chunk.head for chunk in middle), *self._heads[kj + 1 :]),
            self._len - removed + len(regions),
        )


def _decoded(canonical: bytes) -> tuple[Region, ...]:
    """The regions of a stored chunk, read from their identity forms (defaults omitted).

    Each region keeps its own bytes as its canonical form, so that a chunk an apply rebuilds
    joins them instead of encoding its regions again. A value met twice (a region's high end
    is its neighbour's low end, and both dates are often one instant) is decoded once. The
    JSON is read by the json module alone: bytes that are not the canonical ones read as the
    same regions would give another identity, which Receiver.verify refuses.
    """
    text = canonical.decode("utf-8")
    regions: list[Region] = []
    seen: dict[tuple[bool, str, str], Any] = {}
    start = 0
    while True:
        where = f"Ledger.regions[{len(regions)}]"
        try:
            item, end = _SPANS.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            raise SerializationError(where, f"not JSON: {exc}") from None
        if not isinstance(item, dict) or item.get("kind") != "Region" or not set(item) <= _FIELDS:
            raise SerializationError(where, "expected the identity form of a Region")
        try:
            region = Region(
                *(
                    _decode_field(name, item[name], where, seen) if name in item else default
                    for name, default in _DEFAULTS.items()
                )
            )
        except InvalidContract as exc:
            if isinstance(exc, SerializationError) and exc.path.startswith(f"{where}."):
                raise  # a field's refusal already names the region and the field
            raise SerializationError(where, str(exc)) from None
        region.__dict__["canonical"] = text[start:end].encode("utf-8")  # the cached_property's
        regions.append(region)
        if end == len(text):
            return tuple(regions)
        if text[end] != ",":
            raise SerializationError(where, "regions are separated by commas")
        start = end + 1


def _decode_field(name: str, data: Any, where: str, seen: dict[tuple[bool, str, str], Any]) -> Any:
    if not isinstance(data, dict) or len(data) != 1:
        return _CODECS[name].decode(data, f"{where}.{name}")
    # A tagged value: its decoding depends on its tag and text, and on the field being an end
    # (any value) or a date (a $datetime only).
    ((tag, body),) = data.items()
    key = (name in ("low", "high"), tag, body) if isinstance(body, str) else None
    if key is None or key not in seen:
        value = _CODECS[name].decode(data, f"{where}.{name}")
        if key is None:
            return value
        seen[key] = value
    return seen[key]


_SPANS = json.JSONDecoder()  # reads a region and says where it ends
_CODECS = {spec.name: spec.metadata["codec"] for spec in fields(Region)}
_DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in fields(Region)}
_FIELDS = {"kind", *_CODECS}


def _chunked(regions: Sequence[Region], *, whole: bool = False) -> tuple[Chunk, ...]:
    """Chunks of at most CHUNK regions, of even lengths, or (whole) full but for the last."""
    if whole:
        return tuple(
            Chunk(tuple(regions[start : start + CHUNK]))
            for start in range(0, max(1, len(regions)), CHUNK)
        )
    count = max(1, -(-len(regions) // CHUNK))
    size, extra = divmod(len(regions), count)
    chunks: list[Chunk] = []
    start = 0
    for n in range(count):
        stop = start + size + (1 if n < extra else 0)
        chunks.append(Chunk(tuple(regions[start:stop])))
        start = stop
    return tuple(chunks)


def _starts_before(region: Region, low: Scalar | None) -> bool:
    return low is not None and (region.low is None or before(region.low, low))


def _ends_after(region: Region, high: Scalar | None) -> bool:
    return high is not None and (region.high is None or before(high, region.high))


def _clip(region: Region, low: Scalar | None, high: Scalar | None) -> Region:
    """region cut to [low, high), which it must meet."""
    new_low = (
        region.low if low is None or (region.low is not None and before(low, region.low)) else low
    )
    keep_high = high is None or (region.high is not None and before(region.high, high))
    new_high = region.high if keep_high else high
    if new_low == region.low and new_high == region.high:
        return region
    return Region.span(new_low, new_high, *region.evidence)


def _merged(regions: list[Region]) -> list[Region]:
    """Adjacent regions with equal evidence joined into one."""
    out: list[Region] = []
    for region in regions:
        if out and out[-1].evidence == region.evidence:
            region = Region.span(out[-1].low, region.high, *region.evidence)
            out[-1] = region
        else:
            out.append(region)
    return out
