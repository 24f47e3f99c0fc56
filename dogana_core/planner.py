"""Planning: what a table needs read next, and the cheapest read that gives it.

A Requirement names what a reader needs of one table: complete as of an instant, optionally with
deletions as of an instant, over the whole table or one closed window. plan_delivery answers it
with nothing when the table's claims already suffice, or with an ExtractionRequest: the shape to
read, the boundary to read at, the window and the checkpoint to read from. next_extraction builds
the routine request of one named shape, the nightly job's question "what do I read now?".

The planner never guesses whether a read would be admitted: every candidate is turned into the
manifest an honest extractor would declare and applied to the ledger, and the claims of the
ledger that would result are compared with the requirement. So the planner and the gate cannot
disagree: whatever plan_delivery returns, fulfilled honestly, is accepted and reaches the
requirement.

Honest fulfilment of a request means: read the source in one snapshot taken at or after
request.until, declare that snapshot's instant as produced_at, and declare the window and since the
request names. ExtractionRequest.manifest builds that manifest and refuses the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.errors import InvalidContract, PlanningError, RejectedDelivery
from dogana_core.ledger import Ledger
from dogana_core.region import Region, before
from dogana_core.shape import Checkpoint, Shape
from dogana_core.values import (
    DATETIME_MAX,
    DATETIME_MIN,
    MICROSECOND,
    LogicalType,
    Position,
    Scalar,
    check_scalar,
    check_text,
    is_domain_minimum,
    successor,
    type_of,
    utc,
)
from dogana_core.wire import (
    Array,
    Boolean,
    DateTimeTag,
    Optional,
    Text,
    Value,
    Wire,
    wire_field,
)

if TYPE_CHECKING:
    from dogana_core.contract import Contract
    from dogana_core.manifest import Manifest

Window = tuple[Scalar, Scalar]
"""A closed window [low, high] of the window column, both ends included, as manifests carry it."""


def check_window(window: Any, what: str) -> Window:
    """A closed window: two ordered scalars of one type, low not after high, datetimes in UTC."""
    try:
        low, high = window
    except (TypeError, ValueError):
        raise InvalidContract(f"{what}: a window is a pair [low, high]") from None
    kind = type_of(low)
    if kind not in (LogicalType.INT, LogicalType.STR, LogicalType.DATE, LogicalType.DATETIME):
        raise InvalidContract(f"{what}: {kind} is not an ordered type")
    low = check_scalar(low, kind, f"{what}[0]")
    high = check_scalar(high, kind, f"{what}[1]")
    if low > high:  # type: ignore[operator]
        raise InvalidContract(f"{what}: low {low!r} is after high {high!r}")
    return (low, high)


def window_for(contract: Contract, window: Any, what: str) -> Window:
    """A closed window of contract's window column, of the column's declared type."""
    if contract.window_column is None:
        raise InvalidContract(
            f"{what}: table {contract.table!r} has no window column; ask for the whole table"
        )
    window_type = contract.window_type
    assert window_type is not None
    low, high = check_window(window, what)
    for index, bound in enumerate((low, high)):
        check_scalar(bound, window_type, f"{what}[{index}] ({contract.window_column})")
    return (low, high)


@dataclass(frozen=True)
class Requirement(Wire):
    """What a reader needs of one table: Requirement(table, complete_as_of, *, deletions_as_of,
    window).

    Met when, over the window (the whole table when None), the table's complete_as_of is no
    earlier than complete_as_of and, when deletions_as_of is given, its deletions_as_of no
    earlier than deletions_as_of. Both are minima over the regions, so a requirement never holds
    over a region nothing has proven. How old is too old is the reader's: a requirement names the
    instants it needs, not an age.

    Queries that negate an input (NOT EXISTS, anti-joins, difference) or compute exact COUNT and
    SUM need deletions_as_of as well: without it, a deleted row still present is counted.

    deletions_as_of may be later than complete_as_of (negation asks for exactly that): a region's
    deletions date is never after its complete date, so it needs complete_as_of at deletions_as_of
    too, a stronger requirement planned like any other (floor).
    """

    table: str = wire_field(Text(nonempty=True))
    complete_as_of: datetime = wire_field(DateTimeTag())
    _: KW_ONLY
    deletions_as_of: datetime | None = wire_field(Optional(DateTimeTag()), default=None)
    window: Window | None = wire_field(Optional(Array(Value(), length=2)), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not check_text(self.table, "Requirement.table"):
            raise InvalidContract("Requirement.table: names the table")
        set_(self, "complete_as_of", utc(self.complete_as_of, "Requirement.complete_as_of"))
        if self.deletions_as_of is not None:
            set_(self, "deletions_as_of", utc(self.deletions_as_of, "Requirement.deletions_as_of"))
        if self.window is not None:
            set_(self, "window", check_window(self.window, "Requirement.window"))

    @property
    def floor(self) -> datetime:
        """The complete_as_of it needs: complete_as_of, or deletions_as_of when that is later."""
        if self.deletions_as_of is None:
            return self.complete_as_of
        return max(self.complete_as_of, self.deletions_as_of)

    @classmethod
    def exact(cls, table: str, instant: datetime, *, window: Any = None) -> Requirement:
        """Both dates at instant: the region shows the source at instant, or later."""
        return cls(table, instant, deletions_as_of=instant, window=window)


@dataclass(frozen=True)
class ExtractionRequest(Wire):
    """What an extractor must read: ExtractionRequest(table, shape, until, *, window, since,
    issue_position).

    - shape names the contract's shape to read.
    - until is the read's boundary. Read the source in one consistent snapshot taken at or after
      until, and declare that snapshot's instant as produced_at: the extractor guarantees every
      change up to it. Declare until itself only if the read saw the source at until. One
      snapshot is REPEATABLE READ, SERIALIZABLE or one exported snapshot on PostgreSQL, START
      TRANSACTION WITH CONSISTENT SNAPSHOT on MySQL and MariaDB, a read-only transaction or AS
      OF one SCN on Oracle, SNAPSHOT isolation on SQL Server. A read that is not one snapshot
      (an API paged for forty minutes, statements under READ COMMITTED, the default of
      PostgreSQL, Oracle and SQL Server) shows no single instant, and whatever it declares is
      wrong. Requests planned together (plan_together) are read in one snapshot for every table.
    - window is the closed window of the window column to read, both ends included, for window
      shapes; None for whole-table shapes.
    - since is where a changed-only read starts: an aware datetime for timestamp shapes (read the
      rows whose cursor is in (since, produced_at]), the held generation string for generation
      shapes, the held integer position for sequence shapes (read (since, generation]). None for
      complete shapes.
    - issue_position says the read must declare the position it saw as Manifest.generation: every
      generation or sequence read does, and so does a complete whole-table read of a table that
      has generation or sequence shapes, so that the next feed has a position to start from.

    The manifest to declare is request.manifest(contract, produced_at, ...).
    """

    table: str = wire_field(Text(nonempty=True))
    shape: str = wire_field(Text(nonempty=True))
    until: datetime = wire_field(DateTimeTag())
    _: KW_ONLY
    window: Window | None = wire_field(Optional(Array(Value(), length=2)), default=None)
    since: Scalar | None = wire_field(Optional(Value()), default=None)
    issue_position: bool = wire_field(Boolean(), default=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not check_text(self.table, "ExtractionRequest.table"):
            raise InvalidContract("ExtractionRequest.table: names the table")
        if not check_text(self.shape, "ExtractionRequest.shape"):
            raise InvalidContract("ExtractionRequest.shape: names a shape of the contract")
        set_(self, "until", utc(self.until, "ExtractionRequest.until"))
        if self.window is not None:
            set_(self, "window", check_window(self.window, "ExtractionRequest.window"))
        if self.since is not None:
            kind = type_of(self.since)
            if kind not in (LogicalType.INT, LogicalType.STR, LogicalType.DATETIME):
                raise InvalidContract(
                    "ExtractionRequest.since: an aware datetime, a generation string or a "
                    f"sequence integer, got {self.since!r}"
                )
            set_(self, "since", check_scalar(self.since, kind, "ExtractionRequest.since"))
        if not isinstance(self.issue_position, bool):
            raise InvalidContract("ExtractionRequest.issue_position: true or false")

    def manifest(
        self,
        contract: Contract,
        produced_at: datetime,
        *,
        generation: Position | None = None,
        rows: int = 0,
        tombstones: int = 0,
        content_hash: str | None = None,
    ) -> Manifest:
        """The manifest of a read that fulfils this request, checked against contract.

        produced_at is the instant of the snapshot the read saw, never earlier than until;
        generation is the position it issues, required when issue_position is set.
        """
        if contract.table != self.table:
            raise InvalidContract(
                f"ExtractionRequest.table: {self.table!r} is not the contract's table "
                f"{contract.table!r}"
            )
        produced_at = utc(produced_at, "produced_at")
        if produced_at < self.until:
            raise InvalidContract(
                f"produced_at: {produced_at.isoformat()} is before the request's boundary "
                f"{self.until.isoformat()}; read at or after it"
            )
        if self.issue_position and generation is None:
            raise InvalidContract(
                f"generation: shape {self.shape!r} issues the position the read saw; name it"
            )
        return contract.manifest(
            self.shape,
            produced_at,
            window=self.window,
            since=self.since,
            generation=generation,
            rows=rows,
            tombstones=tombstones,
            content_hash=content_hash,
        )


# Planning ---------------------------------------------------------------------------------------


def plan_delivery(ledger: Ledger, requirement: Requirement) -> ExtractionRequest | None:
    """The cheapest read that establishes requirement, or None when the claims already suffice.

    Claims suffice when, over the requirement's window, the table's complete_as_of (the minimum
    over its regions) is no earlier than requirement.complete_as_of and, when the requirement
    names deletions_as_of, the table's deletions_as_of is no earlier than that. Freshness is not
    asked: a requirement names instants, and claims never show a past state of the ledger.

    Otherwise the contract's shapes are tried cheapest first, ties broken by name:

    - a window requirement admits window shapes (over exactly that window) and whole-table
      shapes; a whole-table requirement admits whole-table shapes only;
    - each candidate's boundary is the earliest admissible one: the required complete_as_of, or
      one microsecond after the latest complete_as_of the read covers when that is later, since
      a read must be later than every covered complete_as_of (Transitions 2). So the boundary
      may be later than required, and the extractor must then read at or after that boundary.
      A boundary still in the future is read once the source has passed it: the gate refuses a
      produced_at later than the receiver's now;
    - changed-only candidates (feeds) are excluded over unknown regions, and where the
      requirement needs a deletions date they cannot reach: a generation or sequence feed starts
      from the held position and repairs deletions only where both dates are equal; a timestamp
      feed with tombstones repairs them where its since is no later than the deletions date, so
      the planner starts it early enough when deletions are required;
    - each remaining candidate is rehearsed: its manifest is applied to the ledger, and the
      claims of the ledger that would result must meet the requirement.

    Raises PlanningError naming every candidate and why it fits not, when none does.
    """
    contract = ledger.contract
    requirement = _requirement_for(contract, requirement)
    if _meets(ledger, requirement):
        return None
    return cheapest_read(ledger, requirement)


def next_extraction(
    ledger: Ledger, shape_name: str, until: datetime, *, window: Any = None
) -> ExtractionRequest:
    """The routine read of shape_name with boundary until: what a scheduled extractor reads next.

    - A window shape reads window when given; otherwise the rolling window of the shape's
      window_size ending at until (at until's UTC date for a DATE window column), extended back
      over the unknown regions just below it to meet the last complete evidence, so that a run
      that was skipped leaves no hole. Where nothing below was ever proven, it is not extended.
    - A timestamp shape starts at since = the earliest complete_as_of it covers minus the shape's
      lookback. A keyless append starts where every covered region's evidence ends, so they must
      share one complete_as_of; the first append on an untouched ledger starts at the contract's
      start_at.
    - A generation shape starts from the held generation; a sequence shape from the held integer
      position.

    The request is rehearsed against the ledger; a read the ledger would refuse (until not after
    the covered evidence, a changes read over unknown regions, no held position...) raises
    PlanningError naming the rule. Declare until as produced_at only if the read saw the source at
    until; a snapshot taken later declares its own instant.
    """
    contract = ledger.contract
    shape = contract.shape(shape_name)
    until = utc(until, "next_extraction until")
    if shape.is_window:
        if window is None:
            chosen = _rolling_window(ledger, shape_name, shape, until)
        else:
            chosen = window_for(contract, window, "next_extraction window")
    elif window is not None:
        raise InvalidContract(
            f"next_extraction: shape {shape_name!r} covers the whole table; it reads no window"
        )
    else:
        chosen = None
    request = _request(ledger, shape_name, shape, until, chosen)
    _rehearse(ledger, request)
    return request


def cheapest_read(
    ledger: Ledger,
    requirement: Requirement,
    *,
    exact: bool = False,
) -> ExtractionRequest:
    """The cheapest read establishing requirement, ties broken by name (see plan_delivery).

    Each candidate reads at its earliest admissible boundary no earlier than
    requirement.complete_as_of. With exact, a candidate must instead reach (until, until) over
    the requirement's window at its own boundary until, as plan_together needs. PlanningError
    lists why each candidate fits not.
    """
    contract = ledger.contract
    requirement = _requirement_for(contract, requirement)
    floor = requirement.floor
    reasons: list[str] = []
    candidates = sorted(contract.shapes, key=lambda item: (item[1].cost, item[0]))
    for name, shape in candidates:
        window = requirement.window if shape.is_window else None
        try:
            until = max(floor, _boundary(ledger, shape, window))
            target = requirement
            if exact:
                target = Requirement.exact(contract.table, until, window=requirement.window)
            why = _excluded(ledger, shape, target)
            if why is not None:
                raise PlanningError(why)
            request = _request(ledger, name, shape, until, window, target)
            after = _rehearse(ledger, request)
        except PlanningError as exc:
            reasons.append(f"{name}: {exc}")
            continue
        if not _meets(after, target):
            reasons.append(f"{name}: its read would not establish the requirement")
            continue
        return request
    window = requirement.window
    where = "the whole table" if window is None else f"window {list(window)}"
    if exact:
        needs = f"(p, p) at a boundary p no earlier than {floor.isoformat()}"
    else:
        needs = f"complete as of {floor.isoformat()}"
        if requirement.deletions_as_of is not None:
            needs += f" with deletions as of {requirement.deletions_as_of.isoformat()}"
    raise PlanningError(
        f"no shape of table {contract.table!r} establishes {needs} over {where}: "
        + "; ".join(reasons)
    )


# The parts --------------------------------------------------------------------------------------


def _requirement_for(contract: Contract, requirement: Requirement) -> Requirement:
    if not isinstance(requirement, Requirement):
        raise InvalidContract(
            f"plan_delivery: expected a Requirement, got {type(requirement).__name__}"
        )
    if requirement.table != contract.table:
        raise InvalidContract(
            f"Requirement.table: {requirement.table!r} is not the ledger's table {contract.table!r}"
        )
    if requirement.window is not None:
        window_for(contract, requirement.window, "Requirement.window")
    return requirement


def _claims(ledger: Ledger, window: Window | None) -> Claims:
    # A requirement names instants, not an age: with no limit nothing expires and now is moot.
    return ledger.claims(DATETIME_MAX, limit=NO_LIMIT, window=window)


def _meets(ledger: Ledger, requirement: Requirement) -> bool:
    claims = _claims(ledger, requirement.window)
    if claims.complete_as_of is None or claims.complete_as_of < requirement.floor:
        return False
    required = requirement.deletions_as_of
    return required is None or (
        claims.deletions_as_of is not None and claims.deletions_as_of >= required
    )


def _excluded(ledger: Ledger, shape: Shape, requirement: Requirement) -> str | None:
    """Why a shape cannot meet requirement before any rehearsal, or None."""
    if shape.is_window and requirement.window is None:
        return "a requirement on the whole table needs a whole-table shape"
    if shape.is_complete:
        return None
    window = requirement.window if shape.is_window else None
    low, high = _bounds(window)
    covered = ledger.regions_over(low, high)
    if any(not region.known for region in covered) and not _first_append(ledger):
        return "a changed-only read needs every region it covers known; one is unknown"
    required = requirement.deletions_as_of
    if required is None or not ledger.contract.keyed:
        return None
    short = [r for r in covered if r.deletions_as_of is not None and r.deletions_as_of < required]
    if not short:
        return None
    if not shape.has_tombstones:
        return "its deletions are none, so it cannot raise a deletions date"
    if shape.checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE) and any(
        r.deletions_as_of != r.complete_as_of for r in short
    ):
        return (
            f"a {shape.checkpoint} feed starts from the held position and repairs deletions only "
            "where both dates are equal"
        )
    return None


def _request(
    ledger: Ledger,
    name: str,
    shape: Shape,
    until: datetime,
    window: Window | None,
    requirement: Requirement | None = None,
) -> ExtractionRequest:
    """The request of shape over window (None: the whole table) with boundary until."""
    contract = ledger.contract
    since: Scalar | None = None
    if shape.checkpoint is Checkpoint.TIMESTAMP:
        since = _timestamp_since(ledger, shape, window, requirement)
    elif shape.checkpoint is Checkpoint.GENERATION:
        if not isinstance(ledger.generation, str):
            raise PlanningError(
                "Transitions 5 (generation changes have since equal to the held generation): the "
                f"ledger holds {_position(ledger.generation)}; a complete whole-table delivery "
                "issuing a generation comes first"
            )
        since = ledger.generation
    elif shape.checkpoint is Checkpoint.SEQUENCE:
        if not isinstance(ledger.generation, int):
            raise PlanningError(
                "Transitions 6 (a missing or opaque position needs a complete delivery issuing "
                f"one): the ledger holds {_position(ledger.generation)}"
            )
        since = ledger.generation
    feeds = any(
        s.checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE) for _, s in contract.shapes
    )
    issue_position = shape.checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE) or (
        shape.is_complete and not shape.is_window and feeds
    )
    return ExtractionRequest(
        contract.table, name, until, window=window, since=since, issue_position=issue_position
    )


def _timestamp_since(
    ledger: Ledger, shape: Shape, window: Window | None, requirement: Requirement | None
) -> datetime:
    contract = ledger.contract
    covered = ledger.regions_over(*_bounds(window))
    if not contract.keyed:
        if _first_append(ledger):
            assert contract.start_at is not None
            return contract.start_at
        dates = {region.complete_as_of for region in covered}
        if None in dates:
            raise PlanningError(
                "Transitions 3 (every region a changed-only delivery covers is known): an append "
                "after the first needs every region known; deliver a complete whole-table read"
            )
        if len(dates) != 1:
            raise PlanningError(
                "Transitions 3 (every later append has since equal to complete_as_of in every "
                "region it covers): the regions are complete as of different instants, so no "
                "single since fits them all; deliver a complete whole-table read first"
            )
        (shared,) = dates
        assert shared is not None
        return shared
    if any(not region.known for region in covered):
        raise PlanningError(
            "Transitions 3 (every region a changed-only delivery covers is known): a region it "
            "would cover is unknown; deliver a complete read of it first"
        )
    start = min(r.complete_as_of for r in covered if r.complete_as_of is not None)
    required = None if requirement is None else requirement.deletions_as_of
    if required is not None and shape.has_tombstones:
        # Tombstones since s repair deletions where s <= d: start no later than every
        # deletions date that is short of the requirement.
        short = [
            r.deletions_as_of
            for r in covered
            if r.deletions_as_of is not None and r.deletions_as_of < required
        ]
        start = min([start, *short])
    try:
        return start - shape.lookback
    except OverflowError:
        return DATETIME_MIN


def _first_append(ledger: Ledger) -> bool:
    """The first append on an untouched ledger starts at start_at over unknown regions."""
    contract = ledger.contract
    return not contract.keyed and not ledger.has_history and contract.start_at is not None


def _boundary(ledger: Ledger, shape: Shape, window: Window | None) -> datetime:
    """The earliest boundary a read of shape over window (None: the table) may declare: one
    microsecond after the latest complete_as_of it covers (Transitions 2), or the domain's start
    over unknown regions."""
    covered = ledger.regions_over(*_bounds(window if shape.is_window else None))
    latest = max((r.complete_as_of for r in covered if r.complete_as_of is not None), default=None)
    if latest is None:
        return DATETIME_MIN
    if latest == DATETIME_MAX:
        raise PlanningError(
            "Transitions 2 (every affected known region has t > complete_as_of): a region is "
            "complete as of the last representable instant; no later read exists"
        )
    return latest + MICROSECOND


def _rolling_window(ledger: Ledger, name: str, shape: Shape, until: datetime) -> Window:
    contract = ledger.contract
    if shape.window_size is None:
        raise PlanningError(
            f"shape {name!r} declares no window_size, so it has no rolling window; name the window"
        )
    end: date | datetime = until.date() if contract.window_type is LogicalType.DATE else until
    low, high = shape.window_ending_at(end)
    return (_extend_back(ledger, low), high)


def _extend_back(ledger: Ledger, low: Scalar) -> Scalar:
    """low moved back over the unknown region just below it, to where known evidence ends.

    Neighbouring regions with equal dates merge, so at most one unknown region lies between low
    and the evidence below it.
    """
    regions = ledger.regions
    i = _holding(regions, low)
    region = regions[i]
    # The region holding the values just below low: this one, unless it starts at low.
    below = i if region.low is None or before(region.low, low) else i - 1
    if below < 0 or regions[below].known:
        return low  # the window starts at the domain's start, or evidence already meets it
    if below == 0:
        return low  # nothing below was ever proven: there is no evidence to meet
    high = regions[below - 1].high
    assert high is not None
    return high


def _holding(regions: Sequence[Region], value: Scalar) -> int:
    """The index of the region holding value, by bisection over the sorted regions."""
    first, last = 0, len(regions)
    while last - first > 1:
        middle = (first + last) // 2
        start = regions[middle].low
        if start is not None and before(value, start):
            last = middle
        else:
            first = middle
    return first


def _bounds(window: Window | None) -> tuple[Scalar | None, Scalar | None]:
    """The half-open [low, high) of a closed window; (None, None) for the whole table."""
    if window is None:
        return (None, None)
    low, high = window
    return (None if is_domain_minimum(low) else low, successor(high))


_PLANNED_GENERATION = "dogana:planned"
"""The generation a planning rehearsal issues: feeds' dates do not depend on its value."""


def _rehearse(ledger: Ledger, request: ExtractionRequest) -> Ledger:
    """The ledger an honest read of request at its boundary leaves; PlanningError naming the
    transition when the ledger would refuse it."""
    contract = ledger.contract
    generation: Position | None = None
    if request.issue_position:
        if contract.position_type is str:
            generation = _PLANNED_GENERATION
        elif isinstance(request.since, int):
            # A sequence read of the empty interval (since, since]: nothing changed.
            generation = request.since
        else:
            generation = ledger.generation if isinstance(ledger.generation, int) else 0
    try:
        manifest = request.manifest(contract, request.until, generation=generation)
        return ledger.apply(manifest)
    except (InvalidContract, RejectedDelivery) as exc:
        raise PlanningError(f"the ledger would refuse the read: {exc}") from None


def _position(held: Position | None) -> str:
    if held is None:
        return "no position"
    return f"the string position {held!r}" if isinstance(held, str) else f"the integer {held}"
