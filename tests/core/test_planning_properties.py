"""Properties of planning: what the planner asks for, read honestly, is what was required.

Histories are built the way a scheduler builds them: next_extraction for a random shape (and a
random window, or the rolling one) at a random later boundary, fulfilled by an honest extractor
that reads a little after the boundary. Then:

- next_extraction's request, fulfilled honestly, is always accepted;
- plan_delivery returns nothing only when the claims already meet the requirement, and its
  request, fulfilled honestly, is accepted and meets the requirement; a contract with a complete
  whole-table shape can always be planned;
- plan_together returns nothing only when the group is exact no earlier than at_least, and its
  requests, read in one snapshot at until and applied with Group.apply at until, are all
  accepted and give exact_as_of == until.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import count
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from planning_fixtures import NO_LIMIT, SUNDAY, day

from dogana_core import Contract, InvalidContract, Manifest, PlanningError, Shape
from dogana_core.group import Group, plan_together
from dogana_core.ledger import Ledger
from dogana_core.planner import ExtractionRequest, Requirement, next_extraction, plan_delivery
from dogana_core.values import Position

PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_generations = count()

# Contracts ---------------------------------------------------------------------------------------


@st.composite
def costs(draw: st.DrawFn) -> int:
    return draw(st.integers(0, 3))


@st.composite
def windowed_contracts(draw: st.DrawFn, *, with_full: bool) -> Contract:
    """A keyed table with an optional DATE window column and timestamp changes."""
    shapes: dict[str, Shape] = {}
    if with_full or draw(st.booleans()):
        shapes["full"] = Shape.complete(cost=draw(costs()))
    if draw(st.booleans()):
        size = draw(st.sampled_from([None, 1, 7, 30]))
        shapes["days"] = Shape.complete(
            window=True,
            cost=draw(costs()),
            window_size=None if size is None else timedelta(days=size),
        )
    if draw(st.booleans()):
        shapes["changes"] = Shape.changes(
            tombstones=draw(st.booleans()),
            cost=draw(costs()),
            lookback=draw(st.sampled_from([timedelta(0), timedelta(hours=1), timedelta(hours=30)])),
        )
    if draw(st.booleans()):
        shapes["recent"] = Shape.changes(
            window=True, tombstones=draw(st.booleans()), cost=draw(costs())
        )
    if not shapes:
        shapes["full"] = Shape.complete(cost=draw(costs()))
    windowed = any(shape.is_window for shape in shapes.values())
    tombstones = any(shape.has_tombstones for shape in shapes.values())
    cursor = draw(st.booleans())
    types = {"id": "int"}
    if windowed:
        types["order_date"] = "date"
    if cursor:
        types["updated_at"] = "datetime"
    if tombstones:
        types["deleted"] = "bool"
    return Contract(
        "orders",
        ("id",),
        shapes,
        window_column="order_date" if windowed else None,
        cursor_column="updated_at" if cursor else None,
        deleted_column="deleted" if tombstones else None,
        types=types,
    )


@st.composite
def position_contracts(draw: st.DrawFn, *, with_full: bool, checkpoint: str) -> Contract:
    """A keyed table read by generation or sequence feeds."""
    table = "customers" if checkpoint == "generation" else "lines"
    shapes: dict[str, Shape] = {}
    if with_full or draw(st.booleans()):
        shapes["full"] = Shape.complete(cost=draw(costs()))
    shapes["feed"] = Shape.changes(
        checkpoint=checkpoint, tombstones=draw(st.booleans()), cost=draw(costs())
    )
    if draw(st.booleans()):
        shapes["quick"] = Shape.changes(checkpoint=checkpoint, cost=draw(costs()))
    tombstones = any(shape.has_tombstones for shape in shapes.values())
    return Contract(
        table,
        ("id",),
        shapes,
        deleted_column="deleted" if tombstones else None,
        types={"id": "int", "deleted": "bool"} if tombstones else {"id": "int"},
    )


@st.composite
def keyless_contracts(draw: st.DrawFn, *, with_full: bool) -> Contract:
    shapes = {"append": Shape.changes(cost=draw(costs()))}
    if with_full or draw(st.booleans()):
        shapes["full"] = Shape.complete(cost=draw(costs()))
    return Contract(
        "events",
        (),
        shapes,
        cursor_column="logged_at",
        types={"logged_at": "datetime"},
        start_at=SUNDAY - timedelta(days=30),
    )


def contracts(*, with_full: bool) -> st.SearchStrategy[Contract]:
    return st.one_of(
        windowed_contracts(with_full=with_full),
        position_contracts(with_full=with_full, checkpoint="generation"),
        position_contracts(with_full=with_full, checkpoint="sequence"),
        keyless_contracts(with_full=with_full),
    )


# Honest extractors and histories -----------------------------------------------------------------


def honest(data: st.DataObject, request: ExtractionRequest, contract: Contract) -> Manifest:
    """An honest read of request: a snapshot at or a little after until, the window and since
    the request names, the position the read saw, and rows it may hold."""
    late = data.draw(st.sampled_from([timedelta(0), timedelta(minutes=3)]), label="late")
    return fulfilled(data, request, contract, request.until + late)


def fulfilled(
    data: st.DataObject, request: ExtractionRequest, contract: Contract, produced_at: datetime
) -> Manifest:
    shape = contract.shape(request.shape)
    generation: Position | None = None
    if request.issue_position:
        if contract.position_type is str:
            generation = f"g{next(_generations)}"
        elif isinstance(request.since, int):
            generation = request.since + data.draw(st.integers(0, 3), label="advance")
        else:
            generation = data.draw(st.integers(0, 100), label="position")
    empty = (isinstance(request.since, int) and request.since == generation) or (
        isinstance(request.since, datetime)
        and request.since == produced_at
        and (contract.cursor_column is not None or not contract.keyed)
    )
    rows = 0 if empty else data.draw(st.integers(0, 5), label="rows")
    tombstones = 0 if empty or not shape.has_tombstones else data.draw(st.integers(0, 2))
    return request.manifest(
        contract, produced_at, generation=generation, rows=rows, tombstones=tombstones
    )


def windows(contract: Contract) -> st.SearchStrategy[tuple[date, date] | None]:
    if contract.window_column is None:
        return st.none()
    return st.one_of(
        st.none(),
        st.tuples(st.integers(1, 40), st.integers(0, 10)).map(
            lambda pair: (day(pair[0]), day(pair[0] + pair[1]))
        ),
    )


def history(data: st.DataObject, contract: Contract) -> tuple[Ledger, datetime]:
    """A ledger after a scheduler's random runs of next_extraction, and the last boundary."""
    ledger = Ledger.new(contract)
    t = SUNDAY
    names = [name for name, _ in contract.shapes]
    # Most tables start with a complete read, which issues the position feeds continue from.
    first = [name for name, s in contract.shapes if s.is_complete and not s.is_window]
    if first and data.draw(st.booleans(), label="starts complete"):
        names = [first[0], *names]
    for run in range(data.draw(st.integers(0, 7), label="runs")):
        t += timedelta(minutes=data.draw(st.integers(1, 30 * 60), label="wait"))
        name = names[0] if run == 0 else data.draw(st.sampled_from(names), label="shape")
        window = (
            data.draw(windows(contract), label="window") if contract.shape(name).is_window else None
        )
        try:
            request = next_extraction(ledger, name, t, window=window)
        except PlanningError:
            continue
        # next_extraction rehearses its request: read honestly, it is always accepted.
        ledger = ledger.apply(honest(data, request, contract))
    return ledger, t


def meets(ledger: Ledger, requirement: Requirement) -> bool:
    claims = ledger.claims(SUNDAY, limit=NO_LIMIT, window=requirement.window)
    if claims.complete_as_of is None or claims.complete_as_of < requirement.complete_as_of:
        return False
    needed = requirement.deletions_as_of
    return needed is None or (
        claims.deletions_as_of is not None and claims.deletions_as_of >= needed
    )


def instant_near(data: st.DataObject, t: datetime, label: str) -> datetime:
    return t + timedelta(minutes=data.draw(st.integers(-48 * 60, 48 * 60), label=label))


# plan_delivery -----------------------------------------------------------------------------------


@PROPERTIES
@given(st.data(), contracts(with_full=False))
def test_plan_delivery_fulfilled_honestly_always_reaches_the_requirement(
    data: st.DataObject, contract: Contract
) -> None:
    ledger, t = history(data, contract)
    complete = instant_near(data, t, "complete_as_of")
    deletions = None
    if data.draw(st.booleans(), label="deletions required"):
        deletions = complete - timedelta(minutes=data.draw(st.integers(0, 48 * 60)))
    requirement = Requirement(
        contract.table,
        complete,
        deletions_as_of=deletions,
        window=data.draw(windows(contract), label="requirement window"),
    )
    has_full = any(s.is_complete and not s.is_window for _, s in contract.shapes)
    try:
        request = plan_delivery(ledger, requirement)
    except PlanningError:
        # A complete whole-table read is always admissible and reaches (t, t) everywhere.
        assert not has_full
        event("plan_delivery: nothing fits")
        return
    if request is None:
        assert meets(ledger, requirement)
        event("plan_delivery: claims suffice")
        return
    event(f"plan_delivery: planned {contract.shape(request.shape).checkpoint} read")
    assert not meets(ledger, requirement)
    assert request.until >= requirement.complete_as_of
    after = ledger.apply(honest(data, request, contract))
    assert meets(after, requirement)
    assert plan_delivery(after, requirement) is None


@PROPERTIES
@given(st.data(), contracts(with_full=True))
def test_plan_delivery_picks_the_cheapest_shape_that_reaches_the_requirement(
    data: st.DataObject, contract: Contract
) -> None:
    """No cheaper shape (by cost, then name) would have been accepted and reached it."""
    ledger, t = history(data, contract)
    requirement = Requirement(
        contract.table,
        instant_near(data, t, "complete_as_of"),
        window=data.draw(windows(contract), label="requirement window"),
    )
    request = plan_delivery(ledger, requirement)
    if request is None:
        return
    chosen = (contract.shape(request.shape).cost, request.shape)
    for name, shape in contract.shapes:
        if (shape.cost, name) >= chosen:
            continue
        if shape.is_window and requirement.window is None:
            continue
        window = requirement.window if shape.is_window else None
        try:
            cheaper = next_extraction(ledger, name, request.until, window=window)
        except PlanningError:
            continue
        try:
            after = ledger.apply(fulfilled(data, cheaper, contract, request.until))
        except InvalidContract:
            continue
        assert not meets(after, requirement), f"{name} was cheaper and reaches it"


# plan_together -----------------------------------------------------------------------------------


@st.composite
def groups(draw: st.DrawFn) -> list[Contract]:
    families = draw(
        st.lists(
            st.sampled_from(["orders", "customers", "lines", "events"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    made = {
        "orders": windowed_contracts(with_full=True),
        "customers": position_contracts(with_full=True, checkpoint="generation"),
        "lines": position_contracts(with_full=True, checkpoint="sequence"),
        "events": keyless_contracts(with_full=True),
    }
    return [draw(made[family]) for family in families]


@PROPERTIES
@given(st.data(), groups())
def test_plan_together_applied_at_until_is_exact_at_until(
    data: st.DataObject, contracts: list[Contract]
) -> None:
    group = Group(contracts)
    ledgers: dict[str, Ledger] = {}
    latest = SUNDAY
    for contract in contracts:
        ledgers[contract.table], t = history(data, contract)
        latest = max(latest, t)
    cut: dict[str, Any] = {}
    for contract in contracts:
        window = data.draw(windows(contract), label=f"{contract.table} window")
        if window is not None:
            cut[contract.table] = window
    at_least = instant_near(data, latest, "at_least")
    requests = plan_together(group, ledgers, at_least, windows=cut)
    if requests is None:
        exact = group.claims(ledgers, at_least, limit=NO_LIMIT, windows=cut).exact_as_of
        assert exact is not None and exact >= at_least
        event("plan_together: already exact")
        return
    event(f"plan_together: {len(requests)} table(s)")
    for request in requests:
        event(f"plan_together: {group.contract(request.table).shape(request.shape).checkpoint}")
    assert [r.table for r in requests] == list(group.tables)
    (until,) = {request.until for request in requests}
    assert until >= at_least
    # One snapshot at until for every table, applied together at until.
    manifests = [fulfilled(data, r, group.contract(r.table), until) for r in requests]
    receipts = group.apply(ledgers, manifests, now=until)
    assert all(receipt.accepted for receipt in receipts), [r.failed for r in receipts]
    after = {r.table: ledgers[r.table].follow(r) for r in receipts}
    assert group.claims(after, until, limit=NO_LIMIT, windows=cut).exact_as_of == until
    assert plan_together(group, after, until, windows=cut) is None


def test_the_histories_reach_patched_and_windowed_ledgers() -> None:
    """The strategies above are worth something only if their histories vary: a sanity check
    that a scheduler's runs produce patched regions and several regions."""
    contract = Contract(
        "orders",
        ("id",),
        {
            "full": Shape.complete(),
            "days": Shape.complete(window=True, window_size=timedelta(days=7)),
            "changes": Shape.changes(),
        },
        window_column="order_date",
        cursor_column="updated_at",
        types={"id": "int", "order_date": "date", "updated_at": "datetime"},
    )
    ledger = Ledger.new(contract)
    t = datetime(2026, 10, 18, 2, tzinfo=UTC)
    for name in ("full", "changes", "days"):
        t += timedelta(hours=5)
        request = next_extraction(ledger, name, t)
        ledger = ledger.apply(request.manifest(contract, t, rows=1))
    states = {r.state for r in ledger.claims(t, limit=NO_LIMIT).regions}
    assert len(ledger.regions) >= 2 and "patched" in states
