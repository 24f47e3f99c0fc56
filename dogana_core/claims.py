"""Claims: what a reader may rely on, region by region, at the reader's time now.

How old is too old is the reader's decision, not the table's, so every call names a limit. A
region's state at now, worst first:

    unknown    no dates: nothing has been proven there (unknown is not empty)
    expired    now - complete_as_of > limit (exactly limit old is not expired)
    patched    deletions_as_of < complete_as_of: rows deleted since d may still be present
    complete   deletions_as_of = complete_as_of: the region is the source at that instant

An expired region that is also patched is expired. The table's state is its worst region's.
Its two dates are the minimum of each date over its regions, taken separately, and absent if any
region is unknown: lower bounds, not one instant. exact_as_of is that one instant, when every
region's dates are (p, p) for the same p.

Claims describe the ledger as it is: an earlier now states the same dates, it never shows a past
state of the ledger.

A Claims may hold the regions of several tables (Group.claims); each RegionClaim names its table
and the minima are taken across all of them.

On the wire, limit timedelta.max (no limit: nothing expires) is null, since $seconds cannot
write it exactly; reading null gives timedelta.max back.

Claims a ledger states (Claims.of_runs) take the table's state, its dates and exact_as_of from
each chunk's Summary, and list their RegionClaims when regions is first read: a freshness check
or a sensor that reads the dates of a long history in a new process decodes none of its regions,
and a reader that lists them gets the same RegionClaims Claims.at would state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import chain
from typing import Any

from dogana_core.errors import InvalidContract, SerializationError
from dogana_core.region import Chunk, Region, Summary, before
from dogana_core.values import Scalar, check_text, utc
from dogana_core.wire import (
    JSON,
    Array,
    Boolean,
    Choice,
    Codec,
    DateTimeTag,
    DurationTag,
    Nested,
    Optional,
    Text,
    Value,
    Wire,
    wire_field,
)

NO_LIMIT = timedelta.max
"""The limit that expires nothing; null on the wire."""


class State(StrEnum):
    """A region's or a table's state, worst first."""

    UNKNOWN = "unknown"
    EXPIRED = "expired"
    PATCHED = "patched"
    COMPLETE = "complete"

    @property
    def rank(self) -> int:
        """0 for the worst state."""
        return list(State).index(self)

    @classmethod
    def worst(cls, states: Iterable[State]) -> State:
        return min(states, key=lambda state: state.rank)


def state_at(
    complete_as_of: datetime | None,
    deletions_as_of: datetime | None,
    now: datetime,
    limit: timedelta,
) -> State:
    """The state of a region with these dates, stated at now by a reader allowing limit."""
    if complete_as_of is None or deletions_as_of is None:
        return State.UNKNOWN
    if limit != NO_LIMIT and now - complete_as_of > limit:
        return State.EXPIRED
    if deletions_as_of < complete_as_of:
        return State.PATCHED
    return State.COMPLETE


class Limit(Codec[timedelta]):
    """A nonnegative duration; timedelta.max (no limit) travels as null."""

    def encode(self, value: timedelta, identity: bool) -> JSON:
        return None if value == NO_LIMIT else DurationTag().encode(value, identity)

    def decode(self, data: JSON, path: str) -> timedelta:
        if data is None:
            return NO_LIMIT
        value = DurationTag().decode(data, path)
        if value == NO_LIMIT:
            raise SerializationError(path, "no limit is written null")
        return value

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"anyOf": [{"type": "null"}, DurationTag().schema(defs)]}


@dataclass(frozen=True)
class RegionClaim(Wire):
    """One region of one table, with its state at the Claims' now (a Region plus table and "
    "state)."""

    table: str = wire_field(Text(nonempty=True))
    low: Scalar | None = wire_field(Optional(Value()), default=None)
    high: Scalar | None = wire_field(Optional(Value()), default=None)
    low_open: bool = wire_field(Boolean(), default=True)
    high_open: bool = wire_field(Boolean(), default=True)
    complete_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)
    deletions_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)
    state: State = wire_field(Choice(State), default=State.UNKNOWN)

    def __post_init__(self) -> None:
        if not check_text(self.table, "RegionClaim.table"):
            raise InvalidContract("RegionClaim.table: names the table the region belongs to")
        # Region checks the canonical form and the dates, and normalises them.
        region = self.region
        for name in ("low", "high", "complete_as_of", "deletions_as_of"):
            object.__setattr__(self, name, getattr(region, name))
        try:
            state = State(self.state)
        except ValueError:
            raise InvalidContract(f"RegionClaim.state: {self.state!r} is not a state") from None
        object.__setattr__(self, "state", state)
        c, d = region.evidence
        consistent = {
            State.UNKNOWN: c is None,
            State.EXPIRED: c is not None,
            State.PATCHED: c is not None and d is not None and d < c,
            State.COMPLETE: c is not None and c == d,
        }[state]
        if not consistent:
            raise InvalidContract(f"RegionClaim.state: {state} does not fit dates ({c}, {d})")

    @classmethod
    def of(cls, table: str, region: Region, state: State) -> RegionClaim:
        return cls(
            table,
            region.low,
            region.high,
            region.low_open,
            region.high_open,
            *region.evidence,
            state,
        )

    @property
    def region(self) -> Region:
        return Region(
            self.low,
            self.high,
            self.low_open,
            self.high_open,
            self.complete_as_of,
            self.deletions_as_of,
        )


@dataclass(frozen=True)
class Claims(Wire):
    """Regions stated at now with limit, the worst state, and the two dates' separate minima."""

    now: datetime = wire_field(DateTimeTag())
    limit: timedelta = wire_field(Limit())
    regions: tuple[RegionClaim, ...] = wire_field(Array(Nested(lambda: RegionClaim)))
    state: State = wire_field(Choice(State))
    complete_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)
    deletions_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        now = utc(self.now, "Claims.now")
        set_(self, "now", now)
        _check_limit(self.limit)
        regions = tuple(self.regions)
        if not regions or not all(isinstance(region, RegionClaim) for region in regions):
            raise InvalidContract("Claims.regions: claims state at least one RegionClaim")
        set_(self, "regions", regions)
        _check_order(regions)
        for index, region in enumerate(regions):
            expected = state_at(region.complete_as_of, region.deletions_as_of, now, self.limit)
            if region.state is not expected:
                raise InvalidContract(
                    f"Claims.regions[{index}]: state {region.state}, but at now with this limit "
                    f"it is {expected}"
                )
        expected_state = State.worst(region.state for region in regions)
        if State(self.state) is not expected_state:
            raise InvalidContract(
                f"Claims.state: {self.state}, but the worst region is {expected_state}"
            )
        set_(self, "state", expected_state)
        c, d = _minima(regions)
        for name, expected_date in (("complete_as_of", c), ("deletions_as_of", d)):
            value = getattr(self, name)
            value = None if value is None else utc(value, f"Claims.{name}")
            if value != expected_date:
                raise InvalidContract(
                    f"Claims.{name}: {value}, but the minimum over the regions is {expected_date} "
                    "(absent if any region is unknown)"
                )
            set_(self, name, value)

    @classmethod
    def at(cls, now: datetime, limit: timedelta, regions: Iterable[tuple[str, Region]]) -> Claims:
        """Claims over (table, region) pairs, stated at now by a reader allowing limit."""
        now = utc(now, "Claims.now")
        _check_limit(limit)
        claims = tuple(
            RegionClaim.of(table, region, state_at(*region.evidence, now, limit))
            for table, region in regions
        )
        c, d = _minima(claims)
        return cls(now, limit, claims, State.worst(claim.state for claim in claims), c, d)

    @classmethod
    def of_runs(
        cls, now: datetime, limit: timedelta, table: str, runs: Iterable[Chunk | list[Region]]
    ) -> Claims:
        """Claims.at over one table's regions as RegionMap.runs gives them, and equal to it.

        A chunk held whole is stated from its Summary, and its RegionClaims are built once and
        kept in the chunk, for the two cases that do not depend on now: no region expired, or
        every known region expired. So claims over a long history cost a step per chunk, plus
        the regions of the chunks that straddle now - limit or the window's edges.
        """
        now = utc(now, "Claims.now")
        _check_limit(limit)
        parts: list[Chunk | tuple[RegionClaim, ...]] = []
        summaries: list[Summary] = []
        for run in runs:
            if isinstance(run, Chunk):
                parts.append(run)
                summaries.append(run.summary)
            elif run:
                parts.append(
                    tuple(_claim(table, r, state_at(*r.evidence, now, limit)) for r in run)
                )
                summaries.append(Summary.of(run))
        if not parts:
            raise InvalidContract("Claims.regions: claims state at least one RegionClaim")

        def listed() -> tuple[RegionClaim, ...]:
            return tuple(
                chain.from_iterable(
                    _chunk_claims(table, part, now, limit) if isinstance(part, Chunk) else part
                    for part in parts
                )
            )

        known = [summary for summary in summaries if summary.earliest is not None]
        if any(summary.unknown for summary in summaries):
            state, c, d = State.UNKNOWN, None, None
        else:
            c = min(summary.earliest for summary in known)  # type: ignore[type-var]
            d = min(summary.deletions for summary in known)  # type: ignore[type-var]
            if limit != NO_LIMIT and now - c > limit:  # type: ignore[operator]
                state = State.EXPIRED
            elif any(summary.patched for summary in known):
                state = State.PATCHED
            else:
                state = State.COMPLETE
        count = sum(part.count if isinstance(part, Chunk) else len(part) for part in parts)
        return cls._built(now, limit, listed, count, (state, c, d, _exact(summaries)), table)

    @classmethod
    def joined(cls, now: datetime, limit: timedelta, parts: Iterable[Claims]) -> Claims:
        """Claims.at over the regions of parts, each of other tables and stated at the same now
        and limit, and equal to it: the parts' states and minima combined, not stated again."""
        parts = tuple(parts)
        now = utc(now, "Claims.now")
        if not parts or any(part.now != now or part.limit != limit for part in parts):
            raise InvalidContract("Claims.joined: claims stated at this now and limit, one or more")
        tables = [part._table() for part in parts]
        if any(table is None for table in tables):
            raise InvalidContract("Claims.joined: each part holds the regions of one table")
        if len(set(tables)) != len(tables):
            raise InvalidContract(f"Claims.joined: a table twice among {tables}")
        if any(part.complete_as_of is None for part in parts):
            c, d = None, None
        else:
            c = min(part.complete_as_of for part in parts)  # type: ignore[type-var]
            d = min(part.deletions_as_of for part in parts)  # type: ignore[type-var]
        state = State.worst(part.state for part in parts)
        # One region set is exact at p when every part's is exact at that same p.
        instants = {part.exact_as_of for part in parts}
        exact = instants.pop() if len(instants) == 1 else None

        def listed() -> tuple[RegionClaim, ...]:
            return tuple(chain.from_iterable(part.regions for part in parts))

        one = tables[0] if len(tables) == 1 else None
        count = sum(part.count for part in parts)
        return cls._built(now, limit, listed, count, (state, c, d, exact), one)

    @classmethod
    def _built(
        cls,
        now: datetime,
        limit: timedelta,
        listed: Callable[[], tuple[RegionClaim, ...]],
        count: int,
        stated: tuple[State, datetime | None, datetime | None, datetime | None],
        table: str | None,
    ) -> Claims:
        """Claims built valid, so not checked again (Claims.__post_init__ would state every
        region anew): the count regions listed() gives when first read, of table or of
        several tables (None), and stated: the state, the two dates and exact_as_of."""
        state, c, d, exact = stated
        claims = object.__new__(cls)
        claims.__dict__.update(
            now=now,
            limit=limit,
            state=state,
            complete_as_of=c,
            deletions_as_of=d,
            _listed=listed,
            _exact=exact,
            _count=count,
            _one_table=table,
        )
        return claims

    def __getattr__(self, name: str) -> Any:
        # Called only for what __dict__ lacks: the regions of claims built by _built, listed
        # once, when first read.
        if name != "regions":
            raise AttributeError(name)
        listed = self.__dict__.get("_listed")
        if listed is None:
            if "regions" in self.__dict__:  # listed by another thread meanwhile
                return self.__dict__["regions"]
            raise AttributeError(name)
        regions = listed()
        self.__dict__["regions"] = regions
        self.__dict__.pop("_listed", None)  # another thread may have listed them too
        return regions

    def __getstate__(self) -> dict[str, Any]:
        # A copy or a pickle holds the regions themselves, never what would list them.
        self.regions  # noqa: B018
        return dict(self.__dict__)

    @property
    def exact_as_of(self) -> datetime | None:
        """p when every region is exact at p, its dates (p, p); else None. Freshness aside."""
        if "_exact" in self.__dict__:
            return self.__dict__["_exact"]  # type: ignore[no-any-return]
        instants = {(region.complete_as_of, region.deletions_as_of) for region in self.regions}
        if len(instants) != 1:
            return None
        c, d = instants.pop()
        return c if c is not None and c == d else None

    @property
    def count(self) -> int:
        """How many regions the claims state, without listing them."""
        if "_count" in self.__dict__:
            return self.__dict__["_count"]  # type: ignore[no-any-return]
        return len(self.regions)

    def _table(self) -> str | None:
        """The table every region belongs to; None when they belong to several."""
        if "_one_table" in self.__dict__:
            return self.__dict__["_one_table"]  # type: ignore[no-any-return]
        tables = {region.table for region in self.regions}
        return tables.pop() if len(tables) == 1 else None

    def of_table(self, table: str) -> tuple[RegionClaim, ...]:
        return tuple(region for region in self.regions if region.table == table)


def _chunk_claims(
    table: str, chunk: Chunk, now: datetime, limit: timedelta
) -> tuple[RegionClaim, ...]:
    summary = chunk.summary
    if limit == NO_LIMIT or summary.earliest is None or now - summary.earliest <= limit:
        expired = False
    elif summary.latest is not None and now - summary.latest > limit:
        expired = True
    else:  # now - limit falls inside the chunk: each region's state depends on now
        return tuple(_claim(table, r, state_at(*r.evidence, now, limit)) for r in chunk.regions)
    key = ("claims", table, expired)
    claims: tuple[RegionClaim, ...] | None = chunk.memo.get(key)
    if claims is None:
        claims = tuple(_claim(table, r, _settled(r, expired)) for r in chunk.regions)
        chunk.memo[key] = claims
    return claims


def _exact(summaries: Iterable[Summary]) -> datetime | None:
    """Claims.exact_as_of of runs with these summaries: p when no region is unknown or
    patched (so each is (c, c)) and the earliest and latest complete_as_of are both p."""
    summaries = tuple(summaries)
    if any(summary.unknown or summary.patched for summary in summaries):
        return None
    earliest = {summary.earliest for summary in summaries}
    latest = {summary.latest for summary in summaries}
    if len(earliest) != 1 or earliest != latest:
        return None
    return earliest.pop()


def _settled(region: Region, expired: bool) -> State:
    """A region's state when whether it expired is known: what state_at gives then."""
    c, d = region.evidence
    if c is None or d is None:
        return State.UNKNOWN
    if expired:
        return State.EXPIRED
    return State.PATCHED if d < c else State.COMPLETE


def _claim(table: str, region: Region, state: State) -> RegionClaim:
    """RegionClaim.of for a valid region and the state state_at gives it, without checking
    them again (claims over a long history build thousands)."""
    claim = object.__new__(RegionClaim)
    claim.__dict__.update(
        table=table,
        low=region.low,
        high=region.high,
        low_open=region.low_open,
        high_open=region.high_open,
        complete_as_of=region.complete_as_of,
        deletions_as_of=region.deletions_as_of,
        state=state,
    )
    return claim


def _check_limit(limit: Any) -> None:
    if not isinstance(limit, timedelta) or limit < timedelta(0):
        raise InvalidContract(
            f"Claims.limit: {limit!r} must be a nonnegative duration (timedelta.max: no limit)"
        )


def _check_order(regions: tuple[RegionClaim, ...]) -> None:
    """Each table's regions are sorted and disjoint."""
    ends: dict[str, Scalar | None] = {}
    for index, region in enumerate(regions):
        if region.table in ends:
            previous_high = ends[region.table]
            if previous_high is None or region.low is None or before(region.low, previous_high):
                raise InvalidContract(
                    f"Claims.regions[{index}]: overlaps or precedes an earlier region of table "
                    f"{region.table}"
                )
        ends[region.table] = region.high


def _minima(regions: tuple[RegionClaim, ...]) -> tuple[datetime | None, datetime | None]:
    if any(region.complete_as_of is None for region in regions):
        return (None, None)
    return (
        min(region.complete_as_of for region in regions if region.complete_as_of is not None),
        min(region.deletions_as_of for region in regions if region.deletions_as_of is not None),
    )
