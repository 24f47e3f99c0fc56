"""Claims ("Claims and planning" 1 to 3, "Tables together": Exact): one test per rule.

Ledger.claims(now, *, limit, window=None) cuts the regions to window and states each at the
reader's time now: unknown, expired, patched or complete, worst first. The table's state is its
worst region's; its two dates are separate minima, absent if any region is unknown.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from ledger_fixtures import FEED, HOUR, MONDAY, ORDERS, SUNDAY, day, make

from dogana_core import InvalidContract, SerializationError
from dogana_core.claims import NO_LIMIT, Claims, RegionClaim, State
from dogana_core.ledger import Ledger, Region

DAY = timedelta(days=1)
WEEK = timedelta(days=7)


def orders(*steps: tuple[str, dict[str, object]]) -> Ledger:
    ledger = Ledger.new(ORDERS)
    for shape, fields in steps:
        produced_at = fields.pop("at")
        ledger = ledger.apply(make(ORDERS, shape, produced_at, **fields))  # type: ignore[arg-type]
    return ledger


def full_on(t: object) -> tuple[str, dict[str, object]]:
    return ("full", {"at": t})


# Region states -----------------------------------------------------------------------------------


def test_a_region_nothing_proved_is_unknown() -> None:
    claims = Ledger.new(ORDERS).claims(MONDAY, limit=WEEK)
    assert [region.state for region in claims.regions] == [State.UNKNOWN]
    assert claims.state is State.UNKNOWN


def test_a_region_older_than_limit_at_now_is_expired() -> None:
    claims = orders(full_on(SUNDAY)).claims(MONDAY + timedelta(microseconds=1), limit=DAY)
    assert claims.state is State.EXPIRED


def test_a_region_exactly_limit_old_is_not_expired() -> None:
    assert orders(full_on(SUNDAY)).claims(MONDAY, limit=DAY).state is State.COMPLETE
    assert orders(full_on(SUNDAY)).claims(SUNDAY, limit=timedelta(0)).state is State.COMPLETE


def test_a_region_exactly_limit_old_is_not_expired_beside_an_older_one() -> None:
    # The regions share one stored chunk whose oldest date is past the limit: each region is
    # stated on its own dates, and the newest, exactly limit old, is not expired.
    ledger = orders(full_on(SUNDAY)).apply(make(ORDERS, "day", MONDAY, window=(day(3), day(3))))
    claims = ledger.claims(MONDAY + DAY, limit=DAY)
    states = {(r.low, r.high): r.state for r in claims.regions}
    assert states[(day(3), day(4))] is State.COMPLETE
    assert set(states.values()) == {State.COMPLETE, State.EXPIRED}


def test_timedelta_max_expires_no_region() -> None:
    far = SUNDAY.replace(year=9999)
    claims = orders(full_on(SUNDAY)).claims(far, limit=timedelta.max)
    assert claims.state is State.COMPLETE
    assert claims.limit == NO_LIMIT


def test_a_region_with_deletions_before_completeness_is_patched() -> None:
    ledger = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    assert ledger.claims(MONDAY, limit=WEEK).state is State.PATCHED


def test_a_region_with_equal_dates_is_complete() -> None:
    claims = orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK)
    assert [region.state for region in claims.regions] == [State.COMPLETE]


def test_an_expired_region_that_is_also_patched_is_expired() -> None:
    ledger = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    assert ledger.claims(MONDAY + 2 * DAY, limit=DAY).state is State.EXPIRED


def test_the_limit_is_a_nonnegative_duration() -> None:
    with pytest.raises(InvalidContract, match="nonnegative"):
        Ledger.new(ORDERS).claims(MONDAY, limit=timedelta(seconds=-1))


# The table ---------------------------------------------------------------------------------------


def test_the_tables_state_is_its_worst_regions() -> None:
    base = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    exact_day = base.apply(make(ORDERS, "day", MONDAY + HOUR, window=(day(3), day(3))))
    claims = exact_day.claims(MONDAY + HOUR, limit=WEEK)
    assert {region.state for region in claims.regions} == {State.PATCHED, State.COMPLETE}
    assert claims.state is State.PATCHED
    partly_unknown = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(1), day(1))))
    assert partly_unknown.claims(SUNDAY, limit=WEEK).state is State.UNKNOWN
    expired_part = exact_day.claims(MONDAY + HOUR + DAY, limit=timedelta(hours=24, minutes=30))
    assert [r.state for r in expired_part.regions] == [State.EXPIRED, State.COMPLETE, State.EXPIRED]
    assert expired_part.state is State.EXPIRED


def test_the_tables_two_dates_are_separate_minima() -> None:
    ledger = orders(full_on(SUNDAY))
    ledger = ledger.apply(make(ORDERS, "day", MONDAY, window=(day(2), day(2))))
    ledger = ledger.apply(
        make(ORDERS, "recent", MONDAY + HOUR, window=(day(1), day(9)), since=SUNDAY)
    )
    claims = ledger.claims(MONDAY + HOUR, limit=WEEK)
    # Day 2 is (Monday+1h, Monday), the rest of days 1 to 9 (Monday+1h, Sunday), the rest of
    # the table (Sunday, Sunday).
    assert claims.complete_as_of == SUNDAY
    assert claims.deletions_as_of == SUNDAY
    inside = ledger.claims(MONDAY + HOUR, limit=WEEK, window=(day(2), day(3)))
    assert inside.complete_as_of == MONDAY + HOUR
    assert inside.deletions_as_of == SUNDAY


def test_the_tables_dates_are_absent_if_any_region_is_unknown() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(1), day(5))))
    claims = ledger.claims(SUNDAY, limit=WEEK)
    assert (claims.complete_as_of, claims.deletions_as_of) == (None, None)
    known = ledger.claims(SUNDAY, limit=WEEK, window=(day(1), day(5)))
    assert (known.complete_as_of, known.deletions_as_of) == (SUNDAY, SUNDAY)


def test_the_deletions_date_stays_visible_when_changes_raised_every_completeness_date() -> None:
    ledger = orders(full_on(SUNDAY))
    for n in range(1, 4):
        ledger = ledger.apply(
            make(ORDERS, "changes", SUNDAY + n * DAY, since=SUNDAY + (n - 1) * DAY)
        )
    claims = ledger.claims(SUNDAY + 3 * DAY, limit=WEEK)
    assert claims.complete_as_of == SUNDAY + 3 * DAY
    assert claims.deletions_as_of == SUNDAY


def test_claims_cut_the_regions_to_the_window() -> None:
    ledger = orders(full_on(SUNDAY)).apply(make(ORDERS, "day", MONDAY, window=(day(5), day(6))))
    claims = ledger.claims(MONDAY, limit=WEEK, window=(day(6), day(8)))
    assert [(r.low, r.high) for r in claims.regions] == [(day(6), day(7)), (day(7), day(9))]
    assert [r.table for r in claims.regions] == ["orders", "orders"]


def test_claims_state_the_ledger_as_it_is_never_a_past_state() -> None:
    ledger = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    earlier = ledger.claims(SUNDAY, limit=WEEK)
    assert (earlier.complete_as_of, earlier.deletions_as_of) == (MONDAY, SUNDAY)
    assert earlier.now == SUNDAY


# Exact -------------------------------------------------------------------------------------------


def test_claims_are_exact_at_p_when_every_region_is() -> None:
    claims = orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK)
    assert claims.exact_as_of == SUNDAY


def test_equal_minima_do_not_make_every_region_exact() -> None:
    # A window proven later than the rest of its table: minima (Sunday, Sunday), no instant.
    ledger = orders(full_on(SUNDAY)).apply(make(ORDERS, "day", MONDAY, window=(day(3), day(3))))
    claims = ledger.claims(MONDAY, limit=WEEK)
    assert claims.complete_as_of == claims.deletions_as_of == SUNDAY
    assert claims.exact_as_of is None
    assert Ledger.new(ORDERS).claims(MONDAY, limit=WEEK).exact_as_of is None


def test_freshness_does_not_affect_exact_as_of() -> None:
    claims = orders(full_on(SUNDAY)).claims(SUNDAY + 30 * DAY, limit=DAY)
    assert claims.state is State.EXPIRED
    assert claims.exact_as_of == SUNDAY


# The spec's worked cases -------------------------------------------------------------------------


def test_a_full_on_sunday_then_changes_on_monday_is_patched() -> None:
    ledger = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    claims = ledger.claims(MONDAY, limit=WEEK)
    assert claims.state is State.PATCHED
    assert claims.complete_as_of == MONDAY
    assert claims.deletions_as_of == SUNDAY
    assert claims.exact_as_of is None


def test_negation_needs_the_deletions_date_of_the_negated_input() -> None:
    # "items with no movement": items exact at p, movements complete as of p but patched.
    p = MONDAY
    items = Ledger.new(FEED).apply(make(FEED, "full", p))
    movements = orders(full_on(SUNDAY), ("changes", {"at": p, "since": SUNDAY}))
    together = Claims.at(
        p,
        WEEK,
        [*(("items", r) for r in items.regions), *(("orders", r) for r in movements.regions)],
    )
    items_claims = items.claims(p, limit=WEEK)
    movement_claims = movements.claims(p, limit=WEEK)
    assert items_claims.exact_as_of == p
    assert (movement_claims.complete_as_of, movement_claims.deletions_as_of) == (p, SUNDAY)
    assert movement_claims.state is State.PATCHED
    # The positive side needs items complete as of p: it is. The negated side swaps the
    # requirements: movements must have deletions as of p, and they stop at Sunday, so a
    # deleted movement still present can hide its item: the answer lists only right answers,
    # but may miss some.
    assert movement_claims.deletions_as_of is not None and movement_claims.deletions_as_of < p
    # Taken together the minima are lower bounds across tables, not one instant.
    assert together.state is State.PATCHED
    assert (together.complete_as_of, together.deletions_as_of) == (p, SUNDAY)
    assert together.exact_as_of is None


def test_claims_of_several_tables_take_the_minima_across_tables() -> None:
    a = orders(full_on(SUNDAY)).regions[0]
    b = Region(complete_as_of=MONDAY, deletions_as_of=MONDAY)
    claims = Claims.at(MONDAY, WEEK, [("orders", a), ("items", b)])
    assert claims.complete_as_of == SUNDAY
    assert claims.of_table("items")[0].complete_as_of == MONDAY
    assert claims.exact_as_of is None


# The wire ----------------------------------------------------------------------------------------


def test_claims_round_trip_through_json_and_no_limit_is_null() -> None:
    ledger = orders(full_on(SUNDAY), ("changes", {"at": MONDAY, "since": SUNDAY}))
    for limit in (WEEK, timedelta(0), timedelta.max, timedelta(microseconds=1)):
        claims = ledger.claims(MONDAY, limit=limit, window=(day(1), day(2)))
        again = Claims.from_json(claims.to_json())
        assert again == claims
        assert again.limit == limit
    document = json.loads(ledger.claims(MONDAY, limit=timedelta.max).to_json())
    assert document["limit"] is None
    assert json.loads(ledger.claims(MONDAY, limit=WEEK).to_json())["limit"] == {"$seconds": 604800}
    claim = ledger.claims(MONDAY, limit=WEEK).regions[0]
    assert RegionClaim.from_json(claim.to_json()) == claim


def test_claims_refuse_a_limit_written_as_timedelta_max_seconds() -> None:
    document = json.loads(orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK).to_json())
    document["limit"] = {"$seconds": -1}
    with pytest.raises(SerializationError, match="negative"):
        Claims.from_dict(document)


def test_a_malformed_limit_on_the_wire_is_refused_naming_the_field() -> None:
    document = json.loads(orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK).to_json())
    document["limit"] = {"$seconds": -1}
    with pytest.raises(SerializationError) as refused:
        Claims.from_dict(document)
    assert str(refused.value) == "Claims.limit: $seconds -1 is negative"


def test_claims_cannot_hold_an_inconsistent_statement() -> None:
    claims = orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK)
    with pytest.raises(InvalidContract, match="worst region"):
        claims.replace(state=State.PATCHED)
    with pytest.raises(InvalidContract, match="minimum"):
        claims.replace(complete_as_of=MONDAY)
    with pytest.raises(InvalidContract, match="at now with this limit"):
        claims.replace(limit=timedelta(hours=1))
    with pytest.raises(InvalidContract, match="does not fit dates"):
        RegionClaim("orders", state=State.COMPLETE)
    with pytest.raises(InvalidContract, match="at least one"):
        claims.replace(regions=())


def test_claims_of_several_tables_join_claims_stated_at_one_now_and_limit() -> None:
    part = orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK)
    assert Claims.joined(MONDAY, WEEK, (part,)) == part
    for now, limit, parts in (
        (MONDAY + HOUR, WEEK, (part,)),
        (MONDAY, DAY, (part,)),
        (MONDAY, WEEK, ()),
    ):
        with pytest.raises(InvalidContract) as refused:
            Claims.joined(now, limit, parts)
        assert str(refused.value) == (
            "Claims.joined: claims stated at this now and limit, one or more"
        )


def test_claims_joined_take_each_parts_table_however_the_part_was_built() -> None:
    part = _claims()
    decoded = Claims.from_json(part.to_json())  # built by the constructor, not by Claims.joined
    items = Claims.at(MONDAY, WEEK, (("items", Region()),))
    both = Claims.joined(MONDAY, WEEK, (decoded, items))
    assert both.count == 2
    assert both.of_table("orders") == part.regions
    # Joined claims of one table are that table's claims; of two tables, no one table's.
    assert Claims.joined(MONDAY, WEEK, (Claims.joined(MONDAY, WEEK, (part,)), items)) == both
    lines = Claims.at(MONDAY, WEEK, (("lines", Region()),))
    with pytest.raises(InvalidContract) as refused:
        Claims.joined(MONDAY, WEEK, (both, lines))
    assert str(refused.value) == "Claims.joined: each part holds the regions of one table"


def _claims() -> Claims:
    return orders(full_on(SUNDAY)).claims(MONDAY, limit=WEEK)


PROVEN = {"complete_as_of": SUNDAY, "deletions_as_of": SUNDAY}
MALFORMED = {
    "RegionClaim.table": (
        lambda: RegionClaim("", **PROVEN, state=State.COMPLETE),
        "RegionClaim.table: names the table the region belongs to",
    ),
    "RegionClaim.table, not text": (
        lambda: RegionClaim(7, **PROVEN, state=State.COMPLETE),
        "RegionClaim.table: expected a string, got int",
    ),
    "RegionClaim.state": (
        lambda: RegionClaim("orders", state="maybe"),
        "RegionClaim.state: 'maybe' is not a state",
    ),
    "RegionClaim.state, against the dates": (
        lambda: RegionClaim("orders", state=State.COMPLETE),
        "RegionClaim.state: complete does not fit dates (None, None)",
    ),
    "RegionClaim.state, patched over equal dates": (
        lambda: RegionClaim("orders", **PROVEN, state=State.PATCHED),
        f"RegionClaim.state: patched does not fit dates ({SUNDAY}, {SUNDAY})",
    ),
    "RegionClaim.state, patched over no dates": (
        lambda: RegionClaim("orders", state=State.PATCHED),
        "RegionClaim.state: patched does not fit dates (None, None)",
    ),
    "Claims.regions, none": (
        lambda: _claims().replace(regions=()),
        "Claims.regions: claims state at least one RegionClaim",
    ),
    "Claims.regions, none of a table's runs": (
        lambda: Claims.of_runs(MONDAY, WEEK, "orders", ()),
        "Claims.regions: claims state at least one RegionClaim",
    ),
    "Claims.limit": (
        lambda: Claims.at(MONDAY, -DAY, ()),
        "Claims.limit: datetime.timedelta(days=-1) must be a nonnegative duration "
        "(timedelta.max: no limit)",
    ),
    "Claims.regions, overlapping": (
        lambda: Claims.at(
            MONDAY,
            WEEK,
            (
                ("orders", Region(None, day(5), **PROVEN)),
                ("orders", Region(day(3), None, False, **PROVEN)),
            ),
        ),
        "Claims.regions[1]: overlaps or precedes an earlier region of table orders",
    ),
    "Claims.regions, after a region unbounded above": (
        lambda: Claims.at(
            MONDAY,
            WEEK,
            (("orders", Region(**PROVEN)), ("orders", Region(day(3), None, False, **PROVEN))),
        ),
        "Claims.regions[1]: overlaps or precedes an earlier region of table orders",
    ),
    "Claims.regions, unbounded below after another": (
        lambda: Claims.at(
            MONDAY,
            WEEK,
            (
                ("orders", Region(None, day(5), **PROVEN)),
                ("orders", Region(None, day(9), **PROVEN)),
            ),
        ),
        "Claims.regions[1]: overlaps or precedes an earlier region of table orders",
    ),
    "Claims.regions, a state the limit does not give": (
        lambda: _claims().replace(limit=HOUR),
        "Claims.regions[0]: state complete, but at now with this limit it is expired",
    ),
    "Claims.state": (
        lambda: _claims().replace(state=State.PATCHED),
        "Claims.state: patched, but the worst region is complete",
    ),
    "Claims.complete_as_of": (
        lambda: _claims().replace(complete_as_of=MONDAY),
        f"Claims.complete_as_of: {MONDAY}, but the minimum over the regions is {SUNDAY} "
        "(absent if any region is unknown)",
    ),
    "Claims.complete_as_of, naive": (
        lambda: _claims().replace(complete_as_of=datetime(2026, 10, 18)),
        "Claims.complete_as_of: naive datetime 2026-10-18T00:00:00 carries no UTC offset",
    ),
    "Claims.joined, a part of two tables": (
        lambda: Claims.joined(
            MONDAY,
            WEEK,
            (Claims.at(MONDAY, WEEK, (("orders", Region()), ("items", Region()))),),
        ),
        "Claims.joined: each part holds the regions of one table",
    ),
    "Claims.joined, a table twice": (
        lambda: Claims.joined(MONDAY, WEEK, (_claims(), _claims())),
        "Claims.joined: a table twice among ['orders', 'orders']",
    ),
}


def test_claims_hold_their_now_in_utc_whatever_offset_it_is_given_in() -> None:
    claims = _claims()
    again = claims.replace(now=MONDAY.astimezone(timezone(timedelta(hours=2))))
    assert again == claims
    assert again.now.tzinfo is UTC
    given = claims.replace(regions=list(claims.regions), state="complete")
    assert given == claims
    assert given.state is State.COMPLETE


def test_a_region_claim_holds_its_state_as_a_state_whatever_form_it_is_given_in() -> None:
    assert RegionClaim("orders", state="unknown").state is State.UNKNOWN
    assert RegionClaim("orders", **PROVEN, state="complete").state is State.COMPLETE


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_claim_is_refused_naming_the_field(case: str) -> None:
    build, message = MALFORMED[case]
    with pytest.raises(InvalidContract) as refused:
        build()
    assert str(refused.value) == message


NAIVE = datetime(2026, 10, 19)
STATED_AT_NOW = {
    "Claims": lambda: Claims(NAIVE, WEEK, (), State.UNKNOWN),
    "Claims.at": lambda: Claims.at(NAIVE, WEEK, ()),
    "Claims.of_runs": lambda: Claims.of_runs(NAIVE, WEEK, "orders", ()),
    "Claims.joined": lambda: Claims.joined(NAIVE, WEEK, ()),
}


@pytest.mark.parametrize("statement", list(STATED_AT_NOW))
def test_claims_refuse_a_naive_now_naming_it(statement: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        STATED_AT_NOW[statement]()
    assert (
        str(refused.value) == "Claims.now: naive datetime 2026-10-19T00:00:00 carries no UTC offset"
    )


def test_claims_json_schema_describes_its_wire_form() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for limit in (WEEK, timedelta.max):
        claims = orders(full_on(SUNDAY)).claims(MONDAY, limit=limit)
        jsonschema.validate(json.loads(claims.to_json()), Claims.json_schema())
