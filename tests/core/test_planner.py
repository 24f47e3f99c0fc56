"""Claims and planning 4 and 5: Requirement, plan_delivery, ExtractionRequest, next_extraction.

Every plan here is turned into a delivery by an honest extractor (planning_fixtures.fulfil) and
applied to the ledger, so each test states what the plan achieves, not only what it says.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from planning_fixtures import (
    DAY,
    EVENTS,
    HOUR,
    MICROSECOND,
    NO_LIMIT,
    ORDERS,
    at,
    day,
    deliver,
    feed,
    log,
    orders,
)

from dogana_core import Contract, InvalidContract, PlanningError, SerializationError, Shape
from dogana_core.ledger import Ledger
from dogana_core.planner import ExtractionRequest, Requirement, next_extraction, plan_delivery
from dogana_core.values import DATETIME_MAX, DATETIME_MIN


def full_at(contract: Contract, t: datetime, position: object = None) -> Ledger:
    """A ledger after one complete whole-table read at t."""
    return Ledger.new(contract).apply(
        contract.manifest("full", t, generation=position, rows=10)  # type: ignore[arg-type]
    )


def claims(ledger: Ledger, window: tuple[date, date] | None = None) -> tuple[object, object]:
    c = ledger.claims(at(1000), limit=NO_LIMIT, window=window)
    return c.complete_as_of, c.deletions_as_of


# Requirement -------------------------------------------------------------------------------------


def test_requirement_round_trips_through_json() -> None:
    for requirement in (
        Requirement("orders", at(2)),
        Requirement("orders", at(2), deletions_as_of=at(1)),
        Requirement("orders", at(2), window=(day(1), day(30))),
        Requirement("events", at(2), window=(at(0), at(1))),
        Requirement("parts", at(2), window=("a", "m")),
        Requirement("parts", at(2), window=(1, 9)),
    ):
        again = Requirement.from_json(requirement.to_json())
        assert again == requirement
        assert again.identity == requirement.identity


def test_requirement_refuses_a_datetime_without_offset() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        Requirement("orders", datetime(2026, 10, 18))
    with pytest.raises(SerializationError):
        Requirement.from_json(Requirement("orders", at(2)).to_json().replace("+00:00", ""))


def test_a_requirement_with_deletions_after_complete_is_planned_as_complete_at_deletions() -> None:
    """Deletions as of Monday implies complete as of Monday: a stronger requirement, planned
    like any other (negation produces it), here a tombstone feed reading until Monday or later."""
    sunday, monday = at(0), at(24)
    contract = orders(full=Shape.complete(cost=10), feed=Shape.changes(tombstones=True, cost=1))
    ledger = full_at(contract, at(-24))
    requirement = Requirement("orders", sunday, deletions_as_of=monday)
    assert (requirement.complete_as_of, requirement.floor) == (sunday, monday)
    assert Requirement.from_json(requirement.to_json()) == requirement
    request = plan_delivery(ledger, requirement)
    assert request is not None and request.shape == "feed" and request.until >= monday
    assert claims(deliver(ledger, request)) == (request.until, request.until)
    assert plan_delivery(deliver(ledger, request), requirement) is None


def test_requirement_refuses_a_window_whose_low_is_after_its_high() -> None:
    with pytest.raises(InvalidContract, match="after high"):
        Requirement("orders", at(1), window=(day(9), day(1)))
    with pytest.raises(InvalidContract):
        Requirement("orders", at(1), window=(day(1), at(1)))


def test_requirement_exact_names_both_dates() -> None:
    assert Requirement.exact("orders", at(3)) == Requirement("orders", at(3), deletions_as_of=at(3))


def test_requirement_datetimes_are_normalised_to_utc() -> None:
    from zoneinfo import ZoneInfo

    rome = datetime(2026, 10, 18, 4, tzinfo=ZoneInfo("Europe/Rome"))
    assert Requirement("orders", rome).complete_as_of == at(2)
    assert Requirement("orders", rome).complete_as_of.tzinfo is UTC


# ExtractionRequest -------------------------------------------------------------------------------


def test_extraction_request_round_trips_through_json() -> None:
    for request in (
        ExtractionRequest("orders", "full", at(2), issue_position=True),
        ExtractionRequest("orders", "days", at(2), window=(day(1), day(30))),
        ExtractionRequest("orders", "changes", at(2), since=at(1)),
        ExtractionRequest("customers", "feed", at(2), since="g-41", issue_position=True),
        ExtractionRequest("lines", "log", at(2), since=41, issue_position=True),
    ):
        again = ExtractionRequest.from_json(request.to_json())
        assert again == request
        assert again.identity == request.identity


def test_extraction_request_refuses_a_since_of_no_checkpoint_type() -> None:
    with pytest.raises(InvalidContract, match="since"):
        ExtractionRequest("orders", "changes", at(2), since=day(1))
    with pytest.raises(InvalidContract, match="since"):
        ExtractionRequest("orders", "changes", at(2), since=True)


def test_request_manifest_refuses_a_read_before_the_boundary() -> None:
    """Read in a snapshot taken at or after until; an earlier one cannot fulfil the request."""
    request = ExtractionRequest("orders", "full", at(2))
    with pytest.raises(InvalidContract, match="before the request's boundary"):
        request.manifest(ORDERS, at(2) - MICROSECOND)
    assert request.manifest(ORDERS, at(3)).produced_at == at(3)


def test_request_manifest_needs_the_position_when_the_request_issues_one() -> None:
    request = ExtractionRequest("customers", "feed", at(2), since="g1", issue_position=True)
    with pytest.raises(InvalidContract, match="position"):
        request.manifest(feed(), at(2))
    assert request.manifest(feed(), at(2), generation="g2").generation == "g2"


def test_request_manifest_refuses_another_tables_contract() -> None:
    with pytest.raises(InvalidContract, match="contract's table"):
        ExtractionRequest("orders", "full", at(2)).manifest(EVENTS, at(2))


def test_request_manifest_declares_what_the_request_names() -> None:
    request = ExtractionRequest("orders", "days", at(2), window=(day(1), day(30)))
    manifest = request.manifest(ORDERS, at(2), rows=4)
    assert (manifest.table, manifest.shape, manifest.window, manifest.rows) == (
        "orders",
        "days",
        (day(1), day(30)),
        4,
    )


# plan_delivery: when nothing is needed -----------------------------------------------------------


def test_nothing_is_planned_when_claims_suffice() -> None:
    ledger = full_at(ORDERS, at(5))
    assert plan_delivery(ledger, Requirement("orders", at(5))) is None
    assert plan_delivery(ledger, Requirement("orders", at(4), deletions_as_of=at(3))) is None
    assert plan_delivery(ledger, Requirement("orders", at(5), window=(day(1), day(9)))) is None


def test_claims_suffice_over_the_requirement_window_only() -> None:
    ledger = Ledger.new(ORDERS).apply(ORDERS.manifest("days", at(5), window=(day(1), day(9))))
    assert plan_delivery(ledger, Requirement("orders", at(5), window=(day(2), day(8)))) is None
    assert plan_delivery(ledger, Requirement("orders", at(5), window=(day(2), day(10)))) is not None


def test_claims_suffice_only_with_the_deletions_date_a_requirement_names() -> None:
    """A full on Sunday, changes on Monday: complete as of Monday, deletions as of Sunday."""
    contract = orders(full=Shape.complete(cost=10), changes=Shape.changes(cost=1))
    ledger = full_at(contract, at(0)).apply(contract.manifest("changes", at(24), since=at(0)))
    assert claims(ledger) == (at(24), at(0))
    assert plan_delivery(ledger, Requirement("orders", at(24))) is None
    request = plan_delivery(ledger, Requirement("orders", at(24), deletions_as_of=at(24)))
    assert request is not None and request.shape == "full"


# plan_delivery: choosing the shape ---------------------------------------------------------------


def test_the_cheapest_admitted_shape_is_planned() -> None:
    ledger = full_at(ORDERS, at(0))
    request = plan_delivery(ledger, Requirement("orders", at(24)))
    assert request is not None and request.shape == "changes"
    cheap_full = orders(full=Shape.complete(cost=0), changes=Shape.changes(tombstones=True))
    request = plan_delivery(full_at(cheap_full, at(0)), Requirement("orders", at(24)))
    assert request is not None and request.shape == "full"


def test_ties_in_cost_are_broken_by_name() -> None:
    contract = orders(zeta=Shape.complete(cost=2), alpha=Shape.complete(cost=2))
    request = plan_delivery(Ledger.new(contract), Requirement("orders", at(1)))
    assert request is not None and request.shape == "alpha"


def test_each_candidate_is_rehearsed_against_the_ledger() -> None:
    """The cheap generation feed fits the requirement on paper, but the ledger holds no
    generation (the full issued none), so applying it would be refused: the full is planned."""
    contract = feed()
    ledger = full_at(contract, at(0))  # issues no position
    request = plan_delivery(ledger, Requirement("customers", at(24)))
    assert request is not None and request.shape == "full"
    chained = full_at(contract, at(0), position="g1")
    request = plan_delivery(chained, Requirement("customers", at(24)))
    assert request is not None and (request.shape, request.since) == ("feed", "g1")


def test_a_feed_is_excluded_over_an_unknown_region() -> None:
    ledger = Ledger.new(ORDERS).apply(ORDERS.manifest("days", at(0), window=(day(1), day(9))))
    request = plan_delivery(ledger, Requirement("orders", at(24)))
    assert request is not None and request.shape == "full"
    # Over the known window alone, the feed is admitted again: it is cheaper.
    request = plan_delivery(ledger, Requirement("orders", at(24), window=(day(1), day(9))))
    assert request is not None and request.shape == "days"


def test_a_window_feed_needs_only_the_regions_of_its_window_known() -> None:
    """Transitions 3 asks for the regions a read covers: a window feed over a known window is
    admitted although the rest of the table, below and above it, is unknown."""
    contract = orders(
        changes=Shape.changes(cost=1),
        recent=Shape.changes(window=True, cost=2),
        days=Shape.complete(window=True, cost=3),
    )
    ledger = Ledger.new(contract).apply(contract.manifest("days", at(0), window=(day(2), day(9))))
    request = plan_delivery(ledger, Requirement("orders", at(24), window=(day(2), day(9))))
    assert request is not None
    assert (request.shape, request.window, request.since) == ("recent", (day(2), day(9)), at(0))
    assert claims(deliver(ledger, request), (day(2), day(9))) == (at(24), at(0))


def test_no_shape_for_a_window_with_deletions_names_each_candidate_and_the_window() -> None:
    """The whole-table feed covers unknown regions; the window feed covers only known ones but
    has no tombstones, so it cannot raise the deletions date the requirement names."""
    with_days = orders(
        changes=Shape.changes(cost=1),
        recent=Shape.changes(window=True, cost=2),
        days=Shape.complete(window=True, cost=3),
    )
    feeds_only = orders(changes=Shape.changes(cost=1), recent=Shape.changes(window=True, cost=2))
    ledger = (
        Ledger.new(with_days)
        .apply(with_days.manifest("days", at(0), window=(day(1), day(9))))
        .with_contract(feeds_only)
    )
    requirement = Requirement("orders", at(24), deletions_as_of=at(24), window=(day(1), day(9)))
    with pytest.raises(PlanningError) as refused:
        plan_delivery(ledger, requirement)
    assert str(refused.value) == (
        "no shape of table 'orders' establishes complete as of 2026-10-19T00:00:00+00:00 with "
        "deletions as of 2026-10-19T00:00:00+00:00 over window [datetime.date(2026, 10, 1), "
        "datetime.date(2026, 10, 9)]: changes: a changed-only read needs every region it covers "
        "known; one is unknown; recent: its deletions are none, so it cannot raise a deletions "
        "date"
    )


def test_a_feed_is_excluded_where_the_required_deletions_date_is_out_of_its_reach() -> None:
    """A generation feed starts from the held position and repairs deletions only where both
    dates are equal: once patched by a feed without tombstones, only a full repairs them."""
    contract = Contract(
        "customers",
        ("id",),
        {
            "full": Shape.complete(cost=10),
            "quick": Shape.changes(checkpoint="generation", cost=1),
            "feed": Shape.changes(checkpoint="generation", tombstones=True, cost=2),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    ledger = full_at(contract, at(0), position="g1").apply(
        contract.manifest("quick", at(12), since="g1", generation="g2")
    )
    assert claims(ledger) == (at(12), at(0))
    request = plan_delivery(ledger, Requirement("customers", at(24)))
    assert request is not None and request.shape == "quick"
    request = plan_delivery(ledger, Requirement("customers", at(24), deletions_as_of=at(12)))
    assert request is not None and request.shape == "full"
    # Where both dates are still equal, the tombstone feed reaches the deletions date.
    fresh = full_at(contract, at(0), position="g1")
    request = plan_delivery(fresh, Requirement("customers", at(24), deletions_as_of=at(24)))
    assert request is not None and request.shape == "feed"
    assert claims(deliver(fresh, request)) == (at(24), at(24))


def test_no_feed_reaching_a_patched_deletions_date_names_why_each_cannot() -> None:
    """Without a full to fall back on, the refusal names each feed's reason: quick has no
    tombstones, and the generation feed repairs deletions only where both dates are equal."""
    shapes = {
        "quick": Shape.changes(checkpoint="generation", cost=1),
        "feed": Shape.changes(checkpoint="generation", tombstones=True, cost=2),
    }
    types = {"id": "int", "deleted": "bool"}
    with_full = Contract(
        "customers",
        ("id",),
        {"full": Shape.complete(cost=10), **shapes},
        deleted_column="deleted",
        types=types,
    )
    feeds_only = Contract("customers", ("id",), shapes, deleted_column="deleted", types=types)
    ledger = (
        full_at(with_full, at(0), position="g1")
        .apply(with_full.manifest("quick", at(12), since="g1", generation="g2"))
        .with_contract(feeds_only)
    )
    with pytest.raises(PlanningError) as refused:
        plan_delivery(ledger, Requirement("customers", at(24), deletions_as_of=at(12)))
    assert str(refused.value) == (
        "no shape of table 'customers' establishes complete as of 2026-10-19T00:00:00+00:00 with "
        "deletions as of 2026-10-18T12:00:00+00:00 over the whole table: quick: its deletions "
        "are none, so it cannot raise a deletions date; feed: a generation feed starts from the "
        "held position and repairs deletions only where both dates are equal"
    )


def test_a_sequence_feed_is_excluded_where_deletions_are_patched() -> None:
    contract = Contract(
        "lines",
        ("id",),
        {
            "full": Shape.complete(cost=10),
            "quick": Shape.changes(checkpoint="sequence", cost=1),
            "log": Shape.changes(checkpoint="sequence", tombstones=True, cost=2),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    ledger = full_at(contract, at(0), position=10).apply(
        contract.manifest("quick", at(12), since=10, generation=20, rows=3)
    )
    request = plan_delivery(ledger, Requirement("lines", at(24), deletions_as_of=at(24)))
    assert request is not None and request.shape == "full"


def test_changes_without_tombstones_never_raise_a_deletions_date() -> None:
    contract = orders(full=Shape.complete(cost=10), changes=Shape.changes(cost=1))
    ledger = full_at(contract, at(0))
    request = plan_delivery(ledger, Requirement("orders", at(24), deletions_as_of=at(24)))
    assert request is not None and request.shape == "full"


def test_changes_without_tombstones_are_planned_where_the_deletions_date_already_suffices() -> None:
    """Deletions as of 0 are required and held (the region is (12, 0)): the cheap feed without
    tombstones leaves them there and raises the complete date, which is all that is missing."""
    contract = orders(full=Shape.complete(cost=10), changes=Shape.changes(cost=1))
    ledger = full_at(contract, at(0)).apply(contract.manifest("changes", at(12), since=at(0)))
    request = plan_delivery(ledger, Requirement("orders", at(24), deletions_as_of=at(0)))
    assert request is not None and (request.shape, request.since) == ("changes", at(12))
    assert claims(deliver(ledger, request)) == (at(24), at(0))


def test_timestamp_tombstones_start_no_later_than_the_deletions_date_they_must_repair() -> None:
    """Tombstones since s repair deletions where s <= d; the planner starts early enough."""
    contract = orders(
        full=Shape.complete(cost=10),
        changes=Shape.changes(cost=1),
        tombstones=Shape.changes(tombstones=True, cost=2),
    )
    ledger = full_at(contract, at(0)).apply(contract.manifest("changes", at(12), since=at(0)))
    assert claims(ledger) == (at(12), at(0))
    request = plan_delivery(ledger, Requirement("orders", at(24), deletions_as_of=at(24)))
    assert request is not None
    assert (request.shape, request.since) == ("tombstones", at(0))
    assert claims(deliver(ledger, request)) == (at(24), at(24))
    # Without a deletions requirement the cheapest read starts at the complete date.
    request = plan_delivery(ledger, Requirement("orders", at(24)))
    assert request is not None and (request.shape, request.since) == ("changes", at(12))


def test_timestamp_tombstones_start_at_the_complete_date_where_no_deletions_date_falls_short() -> (
    None
):
    """Deletions as of 0 are required and held: no deletions date needs repair, so the tombstone
    read starts at the complete date (12), not at the deletions date it already meets."""
    contract = orders(
        full=Shape.complete(cost=10),
        changes=Shape.changes(cost=5),
        tombstones=Shape.changes(tombstones=True, cost=1),
    )
    ledger = full_at(contract, at(0)).apply(contract.manifest("changes", at(12), since=at(0)))
    assert claims(ledger) == (at(12), at(0))
    request = plan_delivery(ledger, Requirement("orders", at(24), deletions_as_of=at(0)))
    assert request is not None and (request.shape, request.since) == ("tombstones", at(12))
    assert claims(deliver(ledger, request)) == (at(24), at(0))


def test_a_window_shape_meets_a_requirement_on_a_bounded_window() -> None:
    request = plan_delivery(
        Ledger.new(ORDERS), Requirement("orders", at(5), window=(day(3), day(4)))
    )
    assert request is not None
    assert (request.shape, request.window) == ("days", (day(3), day(4)))


def test_a_requirement_on_the_whole_table_needs_a_whole_table_shape() -> None:
    contract = orders(days=Shape.complete(window=True, cost=1))
    with pytest.raises(PlanningError, match="needs a whole-table shape"):
        plan_delivery(Ledger.new(contract), Requirement("orders", at(5)))
    request = plan_delivery(Ledger.new(ORDERS), Requirement("orders", at(5)))
    assert request is not None and request.shape == "full" and request.window is None


def test_a_whole_table_shape_meets_a_window_requirement_when_it_is_cheaper() -> None:
    contract = orders(full=Shape.complete(cost=1), days=Shape.complete(window=True, cost=5))
    request = plan_delivery(
        Ledger.new(contract), Requirement("orders", at(5), window=(day(1), day(2)))
    )
    assert request is not None and (request.shape, request.window) == ("full", None)


def test_no_suitable_shape_raises_planning_error_naming_each_candidate() -> None:
    contract = orders(changes=Shape.changes(cost=1), recent=Shape.changes(window=True, cost=1))
    with pytest.raises(PlanningError) as caught:
        plan_delivery(Ledger.new(contract), Requirement("orders", at(5)))
    message = str(caught.value)
    assert "changes:" in message and "unknown" in message
    assert "recent:" in message and "whole-table shape" in message


# plan_delivery: the boundary ---------------------------------------------------------------------


def test_the_boundary_is_the_required_date_when_it_is_later_than_the_evidence() -> None:
    request = plan_delivery(full_at(ORDERS, at(0)), Requirement("orders", at(24)))
    assert request is not None and request.until == at(24)


def test_the_boundary_is_later_than_every_covered_complete_as_of() -> None:
    """A window proven at 10 and a requirement as of 5 over the table: the read covers the
    window, so it must read after 10."""
    ledger = full_at(ORDERS, at(0)).apply(ORDERS.manifest("days", at(10), window=(day(1), day(2))))
    request = plan_delivery(ledger, Requirement("orders", at(5), deletions_as_of=at(5)))
    assert request is not None and request.shape == "changes"
    assert request.until == at(10) + MICROSECOND
    after = deliver(ledger, request)
    assert claims(after) == (request.until, request.until)


def test_a_window_boundary_looks_only_at_the_evidence_it_covers() -> None:
    contract = orders(full=Shape.complete(cost=10), days=Shape.complete(window=True, cost=3))
    ledger = full_at(contract, at(0)).apply(
        contract.manifest("days", at(10), window=(day(1), day(2)))
    )
    request = plan_delivery(ledger, Requirement("orders", at(5), window=(day(5), day(6))))
    assert request is not None and (request.shape, request.until) == ("days", at(5))
    request = plan_delivery(ledger, Requirement("orders", at(5), window=(day(2), day(6))))
    assert request is not None and (request.shape, request.until) == ("days", at(10) + MICROSECOND)


def test_the_boundary_follows_a_requirement_when_the_evidence_equals_it() -> None:
    """t > complete_as_of is strict: evidence exactly at the required date moves the boundary
    one microsecond later, the earliest admissible one."""
    contract = orders(full=Shape.complete(cost=1))
    ledger = full_at(contract, at(5)).apply(contract.manifest("full", at(6)))
    request = plan_delivery(ledger, Requirement("orders", at(7)))
    assert request is not None and request.until == at(7)
    ledger = Ledger.new(ORDERS).apply(ORDERS.manifest("days", at(7), window=(day(1), day(1))))
    request = plan_delivery(ledger, Requirement("orders", at(7)))
    assert request is not None and request.until == at(7) + MICROSECOND


def test_no_read_follows_evidence_complete_as_of_the_last_representable_instant() -> None:
    """Transitions 2 needs t > complete_as_of, and no instant follows the last one."""
    contract = orders(full=Shape.complete(cost=10), changes=Shape.changes(cost=1))
    ledger = full_at(contract, at(0)).apply(contract.manifest("changes", DATETIME_MAX, since=at(0)))
    with pytest.raises(PlanningError) as refused:
        plan_delivery(ledger, Requirement("orders", at(1), deletions_as_of=at(1)))
    last = (
        "Transitions 2 (every affected known region has t > complete_as_of): a region is complete "
        "as of the last representable instant; no later read exists"
    )
    assert str(refused.value) == (
        "no shape of table 'orders' establishes complete as of 2026-10-18T01:00:00+00:00 with "
        f"deletions as of 2026-10-18T01:00:00+00:00 over the whole table: changes: {last}; "
        f"full: {last}"
    )


def test_a_requirement_for_another_table_is_refused() -> None:
    with pytest.raises(InvalidContract, match="ledger's table"):
        plan_delivery(Ledger.new(ORDERS), Requirement("events", at(1)))


def test_a_window_requirement_on_a_table_without_a_window_column_is_refused() -> None:
    with pytest.raises(InvalidContract) as refused:
        plan_delivery(Ledger.new(EVENTS), Requirement("events", at(1), window=(at(0), at(1))))
    assert str(refused.value) == (
        "Requirement.window: table 'events' has no window column; ask for the whole table"
    )
    with pytest.raises(InvalidContract) as refused:
        plan_delivery(Ledger.new(ORDERS), Requirement("orders", at(1), window=(1, 2)))
    assert str(refused.value) == "Requirement.window[0] (order_date): expected date, got int 1"


def test_plan_delivery_refuses_what_is_not_a_requirement_naming_its_type() -> None:
    with pytest.raises(InvalidContract) as refused:
        plan_delivery(Ledger.new(ORDERS), "orders")  # type: ignore[arg-type]
    assert str(refused.value) == "plan_delivery: expected a Requirement, got str"


def test_a_complete_whole_table_read_issues_the_position_feeds_start_from() -> None:
    request = plan_delivery(Ledger.new(log()), Requirement("lines", at(1)))
    assert request is not None and request.shape == "full" and request.issue_position
    request = plan_delivery(Ledger.new(ORDERS), Requirement("orders", at(1)))
    assert request is not None and request.shape == "full" and not request.issue_position


# next_extraction ---------------------------------------------------------------------------------


def test_a_rolling_date_window_is_window_size_days_ending_on_until() -> None:
    """Thirty days ending October 19 start September 20."""
    request = next_extraction(Ledger.new(ORDERS), "days", datetime(2026, 10, 19, 2, tzinfo=UTC))
    assert request.window == (date(2026, 9, 20), date(2026, 10, 19))


def test_a_rolling_datetime_window_is_the_elapsed_duration_ending_at_until() -> None:
    contract = Contract(
        "readings",
        ("id",),
        {"hour": Shape.complete(window=True, window_size=HOUR)},
        window_column="taken_at",
        types={"id": "int", "taken_at": "datetime"},
    )
    request = next_extraction(Ledger.new(contract), "hour", at(5))
    assert request.window == (at(4) + MICROSECOND, at(5))


def test_a_rolling_window_is_extended_back_to_meet_the_last_complete_evidence() -> None:
    """The nightly job ran last on October 10: the next window reaches back to October 11."""
    ledger = Ledger.new(ORDERS).apply(
        ORDERS.manifest("days", at(0), window=(date(2026, 9, 11), day(10)))
    )
    request = next_extraction(ledger, "days", datetime(2026, 11, 20, 2, tzinfo=UTC))
    assert request.window == (day(11), date(2026, 11, 20))
    after = deliver(ledger, request)
    assert after.claims(
        at(1000), limit=NO_LIMIT, window=(date(2026, 9, 11), date(2026, 11, 20))
    ).complete_as_of == at(0)


def test_a_rolling_window_is_extended_back_over_the_unknown_region_holding_its_start() -> None:
    """Evidence ends on October 10 and a later window (November 1 to 5) lies inside the rolling
    window: the window starting October 22 inside the unknown gap reaches back to October 11."""
    ledger = (
        Ledger.new(ORDERS)
        .apply(ORDERS.manifest("days", at(0), window=(day(1), day(10))))
        .apply(ORDERS.manifest("days", at(1), window=(date(2026, 11, 1), date(2026, 11, 5))))
    )
    request = next_extraction(ledger, "days", datetime(2026, 11, 20, 2, tzinfo=UTC))
    assert request.window == (day(11), date(2026, 11, 20))


def test_a_rolling_window_starting_on_a_known_region_is_extended_over_the_gap_below_it() -> None:
    """The window starts exactly where known evidence (October 22 on) starts; the unknown gap
    just below it (October 11 to 21) still reaches back to the evidence ending October 10."""
    ledger = (
        Ledger.new(ORDERS)
        .apply(ORDERS.manifest("days", at(0), window=(day(1), day(10))))
        .apply(ORDERS.manifest("days", at(1), window=(day(22), date(2026, 11, 30))))
    )
    request = next_extraction(ledger, "days", datetime(2026, 11, 20, 2, tzinfo=UTC))
    assert request.window == (day(11), date(2026, 11, 20))


def test_a_rolling_window_is_not_extended_where_nothing_below_was_proven() -> None:
    request = next_extraction(Ledger.new(ORDERS), "days", datetime(2026, 10, 19, tzinfo=UTC))
    assert request.window == (date(2026, 9, 20), day(19))


def test_a_rolling_window_is_not_extended_when_the_evidence_already_meets_it() -> None:
    ledger = Ledger.new(ORDERS).apply(
        ORDERS.manifest("days", at(0), window=(date(2026, 9, 1), day(15)))
    )
    request = next_extraction(ledger, "days", datetime(2026, 10, 19, 2, tzinfo=UTC))
    assert request.window == (date(2026, 9, 20), day(19))


def test_a_window_shape_without_window_size_needs_a_window() -> None:
    contract = orders(part=Shape.complete(window=True))
    with pytest.raises(PlanningError) as refused:
        next_extraction(Ledger.new(contract), "part", at(1))
    assert str(refused.value) == (
        "shape 'part' declares no window_size, so it has no rolling window; name the window"
    )
    request = next_extraction(Ledger.new(contract), "part", at(1), window=(day(1), day(1)))
    assert request.window == (day(1), day(1))


def test_a_whole_table_shape_reads_no_window() -> None:
    with pytest.raises(InvalidContract, match="whole table"):
        next_extraction(Ledger.new(ORDERS), "full", at(1), window=(day(1), day(2)))


def test_timestamp_since_is_the_earliest_covered_complete_as_of_minus_lookback() -> None:
    ledger = full_at(ORDERS, at(0)).apply(ORDERS.manifest("days", at(10), window=(day(1), day(2))))
    request = next_extraction(ledger, "changes", at(24))
    assert request.since == at(0) - HOUR


def test_a_window_timestamp_read_starts_from_the_evidence_in_its_window() -> None:
    contract = orders(
        full=Shape.complete(),
        recent=Shape.changes(window=True, lookback=HOUR),
        days=Shape.complete(window=True),
    )
    ledger = full_at(contract, at(0)).apply(
        contract.manifest("days", at(10), window=(day(1), day(2)))
    )
    request = next_extraction(ledger, "recent", at(24), window=(day(1), day(2)))
    assert request.since == at(10) - HOUR
    assert next_extraction(ledger, "recent", at(24), window=(day(1), day(3))).since == at(0) - HOUR


def test_a_lookback_reaching_before_the_first_instant_starts_there() -> None:
    contract = orders(
        full=Shape.complete(), changes=Shape.changes(lookback=timedelta(days=365 * 3000))
    )
    request = next_extraction(full_at(contract, at(0)), "changes", at(1))
    assert request.since == DATETIME_MIN


def test_an_append_starts_at_the_shared_complete_as_of() -> None:
    ledger = Ledger.new(EVENTS).apply(EVENTS.manifest("full", at(0)))
    request = next_extraction(ledger, "append", at(6))
    assert request.since == at(0)
    assert next_extraction(deliver(ledger, request), "append", at(12)).since == at(6)


def test_the_first_append_on_an_untouched_ledger_starts_at_start_at() -> None:
    request = next_extraction(Ledger.new(EVENTS), "append", at(6))
    assert request.since == EVENTS.start_at
    assert claims(deliver(Ledger.new(EVENTS), request)) == (at(6), at(6))


def test_an_append_needs_every_covered_region_to_share_one_complete_as_of() -> None:
    contract = Contract(
        "events",
        (),
        {"append": Shape.changes(), "day": Shape.complete(window=True), "full": Shape.complete()},
        window_column="logged_on",
        cursor_column="logged_at",
        types={"logged_on": "date", "logged_at": "datetime"},
    )
    ledger = Ledger.new(contract).apply(contract.manifest("full", at(0)))
    ledger = ledger.apply(contract.manifest("day", at(5), window=(day(1), day(1))))
    with pytest.raises(PlanningError) as refused:
        next_extraction(ledger, "append", at(6))
    assert str(refused.value) == (
        "Transitions 3 (every later append has since equal to complete_as_of in every region it "
        "covers): the regions are complete as of different instants, so no single since fits "
        "them all; deliver a complete whole-table read first"
    )
    # After a first read of one window alone, the rest of the table is still unknown.
    windowed = Ledger.new(contract).apply(contract.manifest("day", at(5), window=(day(1), day(1))))
    with pytest.raises(PlanningError) as refused:
        next_extraction(windowed, "append", at(6))
    assert str(refused.value) == (
        "Transitions 3 (every region a changed-only delivery covers is known): an append after "
        "the first needs every region known; deliver a complete whole-table read"
    )


def test_a_generation_request_starts_from_the_held_generation() -> None:
    ledger = full_at(feed(), at(0), position="g7")
    request = next_extraction(ledger, "feed", at(6))
    assert (request.since, request.issue_position) == ("g7", True)


def test_a_generation_request_without_a_held_generation_is_refused() -> None:
    with pytest.raises(PlanningError) as refused:
        next_extraction(full_at(feed(), at(0)), "feed", at(6))
    assert str(refused.value) == (
        "Transitions 5 (generation changes have since equal to the held generation): the ledger "
        "holds no position; a complete whole-table delivery issuing a generation comes first"
    )


def test_a_generation_request_after_a_sequence_log_needs_a_complete_read_issuing_one() -> None:
    """Contract evolution from a log to a generation feed keeps the integer position, which no
    generation chains from (Transitions 5)."""
    ledger = full_at(log("customers"), at(0), position=41).with_contract(feed())
    with pytest.raises(PlanningError) as refused:
        next_extraction(ledger, "feed", at(6))
    assert str(refused.value) == (
        "Transitions 5 (generation changes have since equal to the held generation): the ledger "
        "holds the integer 41; a complete whole-table delivery issuing a generation comes first"
    )


def test_a_sequence_request_starts_from_the_held_position() -> None:
    ledger = full_at(log(), at(0), position=41)
    request = next_extraction(ledger, "log", at(6))
    assert (request.since, request.issue_position) == (41, True)
    after = deliver(ledger, request, position=50)
    assert after.generation == 50


def test_a_sequence_request_without_an_integer_position_is_refused() -> None:
    with pytest.raises(PlanningError) as refused:
        next_extraction(full_at(log(), at(0)), "log", at(6))
    assert str(refused.value) == (
        "Transitions 6 (a missing or opaque position needs a complete delivery issuing one): the "
        "ledger holds no position"
    )
    # Contract evolution from a generation feed leaves an opaque string position (Transitions 6).
    opaque = full_at(feed("lines"), at(0), position="g1").with_contract(log())
    with pytest.raises(PlanningError) as refused:
        next_extraction(opaque, "log", at(6))
    assert str(refused.value) == (
        "Transitions 6 (a missing or opaque position needs a complete delivery issuing one): the "
        "ledger holds the string position 'g1'"
    )


def test_next_extraction_refuses_a_boundary_not_after_the_evidence() -> None:
    """Transitions 2: a read at the instant the evidence already has proves nothing newer."""
    ledger = full_at(ORDERS, at(5))
    with pytest.raises(PlanningError, match="Transitions 2"):
        next_extraction(ledger, "changes", at(5))
    assert next_extraction(ledger, "changes", at(5) + MICROSECOND).until == at(5) + MICROSECOND


def test_next_extraction_refuses_changes_over_unknown_regions() -> None:
    with pytest.raises(PlanningError) as refused:
        next_extraction(Ledger.new(ORDERS), "changes", at(5))
    assert str(refused.value) == (
        "Transitions 3 (every region a changed-only delivery covers is known): a region it would "
        "cover is unknown; deliver a complete read of it first"
    )


def test_next_extraction_refuses_a_naive_until_or_a_reversed_window_naming_the_argument() -> None:
    with pytest.raises(InvalidContract) as refused:
        next_extraction(Ledger.new(ORDERS), "days", NAIVE)
    assert str(refused.value) == f"next_extraction until: {NAIVE_TEXT}"
    with pytest.raises(InvalidContract) as refused:
        next_extraction(Ledger.new(ORDERS), "days", at(1), window=(day(9), day(1)))
    assert str(refused.value) == (
        "next_extraction window: low datetime.date(2026, 10, 9) is after high "
        "datetime.date(2026, 10, 1)"
    )


def test_next_extraction_names_a_shape_of_the_contract() -> None:
    with pytest.raises(InvalidContract, match="no shape"):
        next_extraction(Ledger.new(ORDERS), "nightly", at(5))


def test_next_extraction_is_what_a_nightly_job_delivers_night_after_night() -> None:
    ledger = Ledger.new(ORDERS)
    for night in range(1, 8):
        until = datetime(2026, 10, 18, 2, tzinfo=UTC) + (night - 1) * DAY
        ledger = deliver(ledger, next_extraction(ledger, "days", until), late=timedelta(minutes=3))
    window = (date(2026, 9, 19), date(2026, 10, 24))
    assert ledger.claims(at(1000), limit=NO_LIMIT, window=window).complete_as_of is not None


# Requirement and ExtractionRequest name the field they refuse ------------------------------------

NAIVE = datetime(2026, 10, 18)
NAIVE_TEXT = "naive datetime 2026-10-18T00:00:00 carries no UTC offset"
BACKWARDS = "low datetime.date(2026, 10, 2) is after high datetime.date(2026, 10, 1)"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Requirement("", at(1)), "Requirement.table: names the table"),
        (lambda: Requirement(5, at(1)), "Requirement.table: expected a string, got int"),
        (lambda: Requirement("orders", NAIVE), f"Requirement.complete_as_of: {NAIVE_TEXT}"),
        (
            lambda: Requirement("orders", at(1), deletions_as_of=NAIVE),
            f"Requirement.deletions_as_of: {NAIVE_TEXT}",
        ),
        (
            lambda: Requirement("orders", at(1), window=(day(2), day(1))),
            f"Requirement.window: {BACKWARDS}",
        ),
        (
            lambda: Requirement("orders", at(1), window=(day(1),)),
            "Requirement.window: a window is a pair [low, high]",
        ),
        (
            lambda: Requirement("orders", at(1), window=(1.5, 2.5)),
            "Requirement.window: float is not an ordered type",
        ),
        (
            lambda: Requirement("orders", at(1), window=(NAIVE, at(1))),
            f"Requirement.window[0]: {NAIVE_TEXT}",
        ),
        (
            lambda: Requirement("orders", at(1), window=(at(1), NAIVE)),
            f"Requirement.window[1]: {NAIVE_TEXT}",
        ),
        (lambda: ExtractionRequest("", "full", at(1)), "ExtractionRequest.table: names the table"),
        (
            lambda: ExtractionRequest(5, "full", at(1)),
            "ExtractionRequest.table: expected a string, got int",
        ),
        (
            lambda: ExtractionRequest("orders", "", at(1)),
            "ExtractionRequest.shape: names a shape of the contract",
        ),
        (
            lambda: ExtractionRequest("orders", 5, at(1)),
            "ExtractionRequest.shape: expected a string, got int",
        ),
        (
            lambda: ExtractionRequest("orders", "full", NAIVE),
            f"ExtractionRequest.until: {NAIVE_TEXT}",
        ),
        (
            lambda: ExtractionRequest("orders", "days", at(1), window=(day(2), day(1))),
            f"ExtractionRequest.window: {BACKWARDS}",
        ),
        (
            lambda: ExtractionRequest("orders", "changes", at(1), since=NAIVE),
            f"ExtractionRequest.since: {NAIVE_TEXT}",
        ),
        (
            lambda: ExtractionRequest("orders", "changes", at(1), since=1.5),
            "ExtractionRequest.since: an aware datetime, a generation string or a sequence "
            "integer, got 1.5",
        ),
        (
            lambda: ExtractionRequest("orders", "full", at(1), issue_position=1),
            "ExtractionRequest.issue_position: true or false",
        ),
        (
            lambda: ExtractionRequest("orders", "full", at(1)).manifest(ORDERS, NAIVE),
            f"produced_at: {NAIVE_TEXT}",
        ),
    ],
)
def test_a_requirement_or_request_is_refused_naming_the_field(build: Any, message: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        build()
    assert str(refused.value) == message


def test_a_requirement_and_a_request_hold_their_instants_in_utc() -> None:
    rome = timezone(timedelta(hours=2))
    local = at(1).astimezone(rome)
    window = (local, local + HOUR)
    required = Requirement("orders", local, deletions_as_of=local, window=window)
    requested = ExtractionRequest("orders", "changes", local, window=window, since=local)
    for instant in (
        required.complete_as_of,
        required.deletions_as_of,
        *required.window,  # type: ignore[misc]
        requested.until,
        *requested.window,  # type: ignore[misc]
        requested.since,
    ):
        assert instant.tzinfo is UTC  # type: ignore[union-attr]
    assert required.complete_as_of == at(1) and requested.since == at(1)


def test_the_manifest_of_a_request_carries_what_the_read_counted() -> None:
    request = ExtractionRequest("orders", "changes", at(1), since=at(0))
    manifest = request.manifest(ORDERS, at(2), rows=3, tombstones=1, content_hash="ab" * 32)
    assert (manifest.rows, manifest.tombstones, manifest.content_hash) == (3, 1, "ab" * 32)
    assert (manifest.shape, manifest.since, manifest.produced_at) == ("changes", at(0), at(2))
