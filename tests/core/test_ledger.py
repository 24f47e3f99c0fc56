"""Ledger and Region ("Ledger" and "Domains"): one test per rule.

A ledger carries its contract, regions partitioning the window column's domain, the table's
position and publication_id, and no history. It starts as one unbounded unknown region, stores
only the points where evidence changes, merges equal neighbours and keeps untouched values
unknown. A Region's dates are both absent or d <= c, and a region has one canonical form.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from ledger_fixtures import FEED, HOUR, LOG, MONDAY, NAMED, ORDERS, STAMPED, SUNDAY, day, make

from dogana_core import Contract, InvalidContract, SerializationError, Shape
from dogana_core.jcs import canonicalize
from dogana_core.ledger import Ledger, Region
from dogana_core.region import CHUNK, RegionMap
from dogana_core.values import DATETIME_MAX, DATETIME_MIN, LogicalType


def evidence(ledger: Ledger) -> list[tuple[object, object, object, object]]:
    return [(r.low, r.high, r.complete_as_of, r.deletions_as_of) for r in ledger.regions]


# Region ------------------------------------------------------------------------------------------


def test_region_dates_are_both_absent_or_both_present() -> None:
    with pytest.raises(InvalidContract) as refused:
        Region(complete_as_of=SUNDAY)
    assert str(refused.value) == (
        "Region.deletions_as_of: the two dates are both absent (unknown) or both present"
    )
    with pytest.raises(InvalidContract, match="both absent"):
        Region(deletions_as_of=SUNDAY)
    assert not Region().known


def test_region_deletions_as_of_is_never_after_complete_as_of() -> None:
    with pytest.raises(InvalidContract) as refused:
        Region(complete_as_of=SUNDAY, deletions_as_of=MONDAY)
    assert str(refused.value) == (
        "Region.deletions_as_of: 2026-10-19T00:00:00+00:00 is after complete_as_of "
        "2026-10-18T00:00:00+00:00; d <= c always"
    )
    assert Region(complete_as_of=MONDAY, deletions_as_of=SUNDAY).known


def test_region_dates_are_normalised_to_utc_and_naive_ones_refused() -> None:
    rome = timezone(timedelta(hours=2))
    region = Region(complete_as_of=SUNDAY.astimezone(rome), deletions_as_of=SUNDAY)
    assert region.complete_as_of is not None and region.complete_as_of.tzinfo is UTC
    in_rome = Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY.astimezone(rome))
    assert in_rome.deletions_as_of is not None and in_rome.deletions_as_of.tzinfo is UTC
    with pytest.raises(InvalidContract) as naive_end:
        Region(datetime(2026, 1, 1), None, False)
    assert str(naive_end.value) == (
        "Region.low: naive datetime 2026-01-01T00:00:00 carries no UTC offset"
    )
    with pytest.raises(InvalidContract) as refused:
        Region(complete_as_of=datetime(2026, 1, 1), deletions_as_of=SUNDAY)
    assert str(refused.value) == (
        "Region.complete_as_of: naive datetime 2026-01-01T00:00:00 carries no UTC offset"
    )
    with pytest.raises(InvalidContract) as refused:
        Region(complete_as_of=SUNDAY, deletions_as_of=datetime(2026, 1, 1))
    assert str(refused.value) == (
        "Region.deletions_as_of: naive datetime 2026-01-01T00:00:00 carries no UTC offset"
    )


def test_region_has_one_canonical_form() -> None:
    with pytest.raises(InvalidContract) as refused:
        Region(day(1), day(2), low_open=True)
    assert str(refused.value) == (
        "Region.low_open: canonical regions are closed at a bounded low end and open at an "
        "unbounded one; got low=datetime.date(2026, 10, 1) with low_open=True"
    )
    with pytest.raises(InvalidContract, match="low_open"):
        Region(None, day(2), low_open=False)
    with pytest.raises(InvalidContract) as refused:
        Region(day(1), day(2), False, high_open=False)
    assert str(refused.value) == (
        "Region.high_open: canonical regions are open at the high end; write the closed end b "
        "as the open end successor(b)"
    )
    with pytest.raises(InvalidContract, match="high_open"):
        Region(day(1), None, False, high_open=False)
    assert Region(day(1), day(2), False, True).to_dict()["low_open"] is False


def test_region_low_at_a_domain_minimum_is_written_unbounded() -> None:
    for minimum in (date.min, "", DATETIME_MIN):
        with pytest.raises(InvalidContract, match="domain's minimum"):
            Region(minimum, None, False)
    assert Region.span(date.min, day(2)) == Region(None, day(2))
    assert Region.span("", "b") == Region(None, "b")


def test_region_is_never_empty() -> None:
    with pytest.raises(InvalidContract, match="never empty"):
        Region(day(2), day(2), False)
    with pytest.raises(InvalidContract, match="never empty"):
        Region(day(3), day(2), False)
    with pytest.raises(InvalidContract, match="would be empty"):
        Region(None, "")


def test_a_region_map_holds_regions_only_and_reads_as_their_tuple() -> None:
    ledger = Ledger.new(ORDERS)
    for n in range(1, 200, 2):  # days proved every other day: chunks of regions
        ledger = ledger.apply(make(ORDERS, "day", SUNDAY + n * HOUR, window=(day(n), day(n))))
    regions = ledger.regions
    assert isinstance(regions, RegionMap) and len(regions.chunks) > 2
    assert regions[1:] == tuple(regions)[1:]
    assert [regions[i] for i in range(len(regions))] == list(regions)
    with pytest.raises(InvalidContract) as refused:
        RegionMap.of([regions[0], "region"], LogicalType.DATE)  # type: ignore[list-item]
    assert str(refused.value) == "regions[1]: expected a Region, got str"


def test_region_ends_share_one_ordered_domain() -> None:
    for ends, expected in (
        (
            (1, day(2)),
            "Region.high: date datetime.date(2026, 10, 2) is not of the other end's type int",
        ),
        ((True, None), "Region.low: bool is not an ordered domain"),
        ((1.5, None), "Region.low: float is not an ordered domain"),
        ((b"x", None), "Region.low: bytes is not one of the six logical types"),
    ):
        with pytest.raises(InvalidContract) as refused:
            Region(*ends, False)
        assert str(refused.value) == expected


def test_closed_window_is_half_open_up_to_its_successor() -> None:
    assert Region.closed(day(1), day(7)) == Region(day(1), day(8), False, True)
    assert Region.closed(3, 3) == Region(3, 4, False)
    assert Region.closed("a", "b") == Region("a", "b\x00", False)
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    assert Region.closed(moment, moment).high == moment + timedelta(microseconds=1)


def test_closed_window_reaching_a_domain_end_is_unbounded_above() -> None:
    assert Region.closed(day(1), date.max) == Region(day(1), None, False)
    assert Region.closed(DATETIME_MIN, DATETIME_MAX) == Region()


def test_region_and_ledger_round_trip_through_json() -> None:
    ledger = Ledger.new(FEED).apply(make(FEED, "full", SUNDAY, generation="g1"))
    ledger = ledger.apply(make(FEED, "day", MONDAY, window=(day(3), day(9))))
    for region in ledger.regions:
        assert Region.from_json(region.to_json()) == region
    again = Ledger.from_json(ledger.to_json())
    assert again == ledger
    assert again.identity == ledger.identity
    assert Ledger.from_json(Ledger.new(ORDERS).to_json()) == Ledger.new(ORDERS)


def test_region_json_refuses_a_non_canonical_form() -> None:
    document = Region.closed(day(1), day(2)).to_dict()
    document["high_open"] = False
    with pytest.raises(InvalidContract, match="high_open"):
        Region.from_dict(document)
    document = Region().to_dict()
    document["low"] = {"$date": "0001-01-01"}
    document["low_open"] = False
    with pytest.raises(InvalidContract, match="minimum"):
        Region.from_dict(document)
    with pytest.raises(SerializationError, match="naive"):
        Region.from_dict(
            {**Region().to_dict(), "complete_as_of": {"$datetime": "2026-10-18T00:00:00"}}
        )


# Ledger ------------------------------------------------------------------------------------------


def test_a_ledger_starts_as_one_unbounded_unknown_region() -> None:
    ledger = Ledger.new(ORDERS)
    assert tuple(ledger.regions) == (Region(),)
    assert ledger.generation is None and ledger.publication_id is None


def test_a_ledger_carries_no_history() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "full", SUNDAY))
    for n in range(1, 20):
        ledger = ledger.apply(make(ORDERS, "full", SUNDAY + n * HOUR))
    assert set(ledger.to_dict()) == {
        "version",
        "kind",
        "contract",
        "regions",
        "generation",
        "publication_id",
    }
    assert len(ledger.regions) == 1


def test_regions_partition_the_whole_domain() -> None:
    a, b = (
        Region(None, day(5)),
        Region(day(5), None, False, complete_as_of=SUNDAY, deletions_as_of=SUNDAY),
    )
    pid = "0" * 64
    assert len(Ledger(ORDERS, (a, b), publication_id=pid).regions) == 2
    with pytest.raises(InvalidContract, match="first region starts unbounded"):
        Ledger(ORDERS, (b,), publication_id=pid)
    with pytest.raises(InvalidContract, match="last region ends unbounded"):
        Ledger(ORDERS, (a,), publication_id=pid)
    gap = Region(day(6), None, False, complete_as_of=SUNDAY, deletions_as_of=SUNDAY)
    with pytest.raises(InvalidContract) as refused:
        Ledger(ORDERS, (a, gap), publication_id=pid)
    assert str(refused.value) == (
        "Ledger.regions[1]: starts at datetime.date(2026, 10, 6), not where region 0 ends "
        "(datetime.date(2026, 10, 5)); regions are sorted and neither overlap nor leave gaps"
    )
    overlapping = Region(day(4), None, False, complete_as_of=SUNDAY, deletions_as_of=SUNDAY)
    with pytest.raises(InvalidContract, match="neither overlap nor leave gaps"):
        Ledger(ORDERS, (a, overlapping), publication_id=pid)
    with pytest.raises(InvalidContract, match="at least one region"):
        Ledger(ORDERS, (), publication_id=pid)


def test_neighbouring_regions_with_equal_dates_merge() -> None:
    pid = "0" * 64
    twin = Region(day(5), None, False)
    with pytest.raises(InvalidContract) as refused:
        Ledger(ORDERS, (Region(None, day(5)), twin), publication_id=pid)
    assert str(refused.value) == (
        "Ledger.regions[1]: has the same dates as its neighbour; equal neighbours merge"
    )
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(1), day(3))))
    ledger = ledger.apply(make(ORDERS, "day", MONDAY, window=(day(4), day(6))))
    ledger = ledger.apply(make(ORDERS, "day", MONDAY + HOUR, window=(day(4), day(6))))
    merged = ledger.apply(make(ORDERS, "day", MONDAY + HOUR, window=(day(1), day(3))))
    assert evidence(merged) == [
        (None, day(1), None, None),
        (day(1), day(7), MONDAY + HOUR, MONDAY + HOUR),
        (day(7), None, None, None),
    ]


def test_the_ledger_stores_only_the_points_where_evidence_changes() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "full", SUNDAY))
    inside = ledger.apply(make(ORDERS, "day", MONDAY, window=(day(5), day(5))))
    assert [r.low for r in inside.regions] == [None, day(5), day(6)]
    covering = inside.apply(make(ORDERS, "full", MONDAY + HOUR))
    assert [r.low for r in covering.regions] == [None]


def test_values_no_delivery_touched_stay_unknown() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(10), day(12))))
    assert evidence(ledger) == [
        (None, day(10), None, None),
        (day(10), day(13), SUNDAY, SUNDAY),
        (day(13), None, None, None),
    ]


def test_delivering_partitions_never_proves_values_no_partition_covers() -> None:
    ledger = Ledger.new(NAMED)
    for plant in ("bari", "milano", "torino"):
        ledger = ledger.apply(make(NAMED, "part", SUNDAY, window=(plant, plant)))
    known = [(r.low, r.high) for r in ledger.regions if r.known]
    assert known == [("bari", "bari\x00"), ("milano", "milano\x00"), ("torino", "torino\x00")]
    assert not ledger.regions[0].known and not ledger.regions[-1].known


def test_a_window_with_equal_ends_is_one_partition() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(4), day(4))))
    assert [r for r in ledger.regions if r.known] == [Region.closed(day(4), day(4), SUNDAY, SUNDAY)]


def test_a_window_at_a_domain_end_creates_no_empty_region_beyond_it() -> None:
    to_the_end = make(ORDERS, "day", SUNDAY, window=(day(1), date.max))
    assert evidence(Ledger.new(ORDERS).apply(to_the_end)) == [
        (None, day(1), None, None),
        (day(1), None, SUNDAY, SUNDAY),
    ]
    from_the_start = make(ORDERS, "day", SUNDAY, window=(date.min, day(1)))
    assert evidence(Ledger.new(ORDERS).apply(from_the_start)) == [
        (None, day(2), SUNDAY, SUNDAY),
        (day(2), None, None, None),
    ]
    everything = make(STAMPED, "slot", SUNDAY, window=(DATETIME_MIN, DATETIME_MAX))
    assert evidence(Ledger.new(STAMPED).apply(everything)) == [(None, None, SUNDAY, SUNDAY)]


def test_a_ledger_holds_the_tables_generation_string_or_integer() -> None:
    assert Ledger.new(FEED).apply(make(FEED, "full", SUNDAY, generation="g7")).generation == "g7"
    assert Ledger.new(LOG).apply(make(LOG, "full", SUNDAY, generation=41)).generation == 41
    with pytest.raises(InvalidContract, match="generation"):
        Ledger(LOG, (Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY),), "", "0" * 64)
    with pytest.raises(InvalidContract, match="generation"):
        Ledger(LOG, (Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY),), True, "0" * 64)


def test_a_ledger_without_a_publication_has_accepted_nothing() -> None:
    known = Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY)
    with pytest.raises(InvalidContract, match="accepted nothing"):
        Ledger(ORDERS, (known,))
    with pytest.raises(InvalidContract, match="accepted nothing"):
        Ledger(FEED, (Region(),), generation="g1")
    with pytest.raises(InvalidContract, match="chain head"):
        Ledger(ORDERS, (known,), publication_id="head")


def test_region_endpoints_are_of_the_window_columns_type() -> None:
    pid = "0" * 64
    ints = (Region(None, 5), Region(5, None, False, complete_as_of=SUNDAY, deletions_as_of=SUNDAY))
    with pytest.raises(InvalidContract, match="is not date"):
        Ledger(ORDERS, ints, publication_id=pid)
    with pytest.raises(InvalidContract) as refused:
        Ledger(LOG, ints, publication_id=pid)
    assert str(refused.value) == (
        "Ledger.regions[0]: endpoint 5 is not no bounds (the contract has no window column)"
    )
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(1), day(1))))
    two = RegionMap.of(
        [Region.span(None, day(1)), Region.span(day(1), None, SUNDAY, SUNDAY)], LogicalType.DATE
    )
    for regions in (ledger.regions, two):
        with pytest.raises(InvalidContract) as refused:
            Ledger(
                ORDERS.replace(types=(*ORDERS.types[:2], ("order_date", "int"), ORDERS.types[3])),
                regions,
                publication_id=pid,
            )
        assert str(refused.value) == (
            "Ledger.regions endpoint: expected int, got date datetime.date(2026, 10, 1)"
        )


def test_a_table_without_a_window_column_has_one_region() -> None:
    ledger = Ledger.new(LOG).apply(make(LOG, "full", SUNDAY, generation=1))
    assert tuple(ledger.regions) == (Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY),)
    with pytest.raises(InvalidContract, match="no window column"):
        ledger.claims(SUNDAY, limit=timedelta(0), window=(1, 2))


def test_ledger_identity_is_sha256_of_its_canonical_form() -> None:
    ledger = Ledger.new(LOG).apply(make(LOG, "full", SUNDAY, generation=12))
    generic = hashlib.sha256(canonicalize(ledger.identity_dict())).hexdigest()
    assert ledger.identity == generic
    assert json.loads(ledger.identity_json())["generation"] == 12


def test_many_regions_span_several_chunks_and_stay_a_partition() -> None:
    ledger = Ledger.new(ORDERS)
    count = 5 * CHUNK
    for n in range(count):
        # Every other day, each at its own instant, so no two known neighbours merge.
        low = date(2020, 1, 1) + timedelta(days=2 * n)
        ledger = ledger.apply(make(ORDERS, "day", SUNDAY + n * HOUR, window=(low, low)))
    assert len(ledger.regions) == 2 * count + 1
    assert Ledger(ORDERS, tuple(ledger.regions), publication_id=ledger.publication_id) == ledger
    assert ledger.identity == hashlib.sha256(canonicalize(ledger.identity_dict())).hexdigest()
    # Covering everything collapses the ledger to one region again.
    assert len(ledger.apply(make(ORDERS, "full", SUNDAY + timedelta(days=60))).regions) == 1


def test_a_history_growing_at_its_end_fills_every_chunk_but_the_last() -> None:
    """A table delivered a day at a time grows its ledger at the end: its chunks are filled
    whole there, so a long history has as few chunks to read, store and hash as it can."""
    ledger = Ledger.new(ORDERS)
    for n in range(3 * CHUNK):
        low = date(2020, 1, 1) + timedelta(days=2 * n)
        ledger = ledger.apply(make(ORDERS, "day", SUNDAY + n * HOUR, window=(low, low)))
    counts = [chunk.count for chunk in ledger.regions.chunks]  # type: ignore[attr-defined]
    assert counts[:-1] == [CHUNK] * (len(counts) - 1), counts
    assert sum(counts) == 6 * CHUNK + 1


def test_regions_over_cuts_regions_to_the_bounds() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "full", SUNDAY))
    ledger = ledger.apply(make(ORDERS, "day", MONDAY, window=(day(5), day(6))))
    assert ledger.regions_over(day(4), day(6)) == (
        Region(day(4), day(5), False, True, SUNDAY, SUNDAY),
        Region(day(5), day(6), False, True, MONDAY, MONDAY),
    )


def test_ledger_json_schema_describes_its_wire_form() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    ledger = Ledger.new(FEED).apply(make(FEED, "full", SUNDAY, generation="g1"))
    jsonschema.validate(json.loads(ledger.to_json()), Ledger.json_schema())
    jsonschema.validate(json.loads(Region().to_json()), Region.json_schema())


def test_shapes_unused_here_do_not_matter() -> None:
    contract = Contract("t", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    assert Ledger.new(contract).apply(make(contract, "full", SUNDAY)).regions[0].known


def test_regions_over_refuses_empty_bounds() -> None:
    with pytest.raises(InvalidContract, match="is empty"):
        Ledger.new(ORDERS).regions_over(day(2), day(2))


def test_region_endpoint_integers_must_be_exact_in_binary64() -> None:
    # Versioned JSON 5: an integer that binary64 cannot hold has no identity, so a region read
    # from the wire with one is refused when built rather than failing later when hashed.
    wire = Region(0, 10, low_open=False).to_dict()
    wire["high"] = 2**53 + 1
    with pytest.raises(InvalidContract) as refused:
        Region.from_dict(wire)
    assert str(refused.value) == (
        "Region.high: a 54-bit integer is not exact in binary64, so it could have no identity; "
        "send it as a string"
    )
    assert Region.from_dict({**wire, "high": 2**60}).identity


KNOWN = Region(complete_as_of=SUNDAY, deletions_as_of=SUNDAY)
HEAD = "0" * 64
MALFORMED = {
    "contract": (
        lambda: Ledger("orders", (Region(),)),  # type: ignore[arg-type]
        "Ledger.contract: expected a Contract, got str",
    ),
    "regions, a string": (
        lambda: Ledger(ORDERS, "regions"),  # type: ignore[arg-type]
        "Ledger.regions: expected a sequence of Region",
    ),
    "regions, a number": (
        lambda: Ledger(ORDERS, 5),  # type: ignore[arg-type]
        "Ledger.regions: expected a sequence of Region",
    ),
    "regions of a windowless table": (
        lambda: Ledger(
            LOG,
            Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(1), day(1)))).regions,
            publication_id=HEAD,
        ),
        "Ledger.regions: table log has no window column, so its ledger has one region",
    ),
    "generation, empty": (
        lambda: Ledger(LOG, (KNOWN,), "", HEAD),
        "Ledger.generation: '' is not an integer or a nonempty string",
    ),
    "generation, a bool": (
        lambda: Ledger(LOG, (KNOWN,), True, HEAD),
        "Ledger.generation: True is not an integer or a nonempty string",
    ),
    "generation, a float": (
        lambda: Ledger(LOG, (KNOWN,), 1.5, HEAD),  # type: ignore[arg-type]
        "Ledger.generation: 1.5 is not an integer or a nonempty string",
    ),
    "no publication, known": (
        lambda: Ledger(ORDERS, (KNOWN,)),
        "Ledger.publication_id: a ledger without a publication has accepted nothing, so it holds "
        "one unknown region and no position",
    ),
    "no publication, two regions": (
        lambda: Ledger(
            ORDERS,
            (
                Region(None, day(2)),
                Region(day(2), None, False, complete_as_of=SUNDAY, deletions_as_of=SUNDAY),
            ),
        ),
        "Ledger.publication_id: a ledger without a publication has accepted nothing, so it holds "
        "one unknown region and no position",
    ),
    "no publication, a position": (
        lambda: Ledger(FEED, (Region(),), generation="g1"),
        "Ledger.publication_id: a ledger without a publication has accepted nothing, so it holds "
        "one unknown region and no position",
    ),
    "publication_id, not hex": (
        lambda: Ledger(ORDERS, (KNOWN,), publication_id="head"),
        "Ledger.publication_id: 'head' is not a chain head (lowercase hex SHA-256)",
    ),
    "publication_id, upper case": (
        lambda: Ledger(ORDERS, (KNOWN,), publication_id="A" * 64),
        f"Ledger.publication_id: {'A' * 64!r} is not a chain head (lowercase hex SHA-256)",
    ),
    "claims, no window column": (
        lambda: Ledger.new(LOG).claims(SUNDAY, limit=timedelta(0), window=(1, 2)),
        "Ledger.claims: table log has no window column",
    ),
    "claims, low after high": (
        lambda: Ledger.new(ORDERS).claims(SUNDAY, limit=timedelta(0), window=(day(3), day(2))),
        "Ledger.claims: window low datetime.date(2026, 10, 3) is after high "
        "datetime.date(2026, 10, 2)",
    ),
    "claims, a bound of another type": (
        lambda: Ledger.new(ORDERS).claims(SUNDAY, limit=timedelta(0), window=(day(1), 5)),
        "Ledger.claims window[1]: expected date, got int 5",
    ),
    "regions_over, empty": (
        lambda: Ledger.new(ORDERS).regions_over(day(2), day(2)),
        "Ledger.regions_over: [datetime.date(2026, 10, 2), datetime.date(2026, 10, 2)) is empty",
    ),
    "regions_over, reversed": (
        lambda: Ledger.new(ORDERS).regions_over(day(3), day(2)),
        "Ledger.regions_over: [datetime.date(2026, 10, 3), datetime.date(2026, 10, 2)) is empty",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_ledger_or_question_is_refused_naming_the_field(case: str) -> None:
    build, message = MALFORMED[case]
    with pytest.raises(InvalidContract) as refused:
        build()
    assert str(refused.value) == message


def test_claims_of_a_closed_window_cover_it_to_its_last_value() -> None:
    """Ledger.claims cuts the regions to the closed window, high included."""
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "day", SUNDAY, window=(day(2), day(3))))
    claims = ledger.claims(MONDAY, limit=timedelta.max, window=(day(2), day(3)))
    assert [(c.low, c.high) for c in claims.regions] == [(day(2), day(4))]
    assert claims.complete_as_of == SUNDAY
