"""Claims stated from each chunk's summary, and the summary a receiver stores beside a chunk.

A ledger's claims take the table's state, its two dates and exact_as_of from the summaries of
its chunks, and list their RegionClaims only when regions is read; a stored ledger whose chunks
carry their stored summaries states them without decoding a region. Each case compares with
Claims.at, which states and checks every region anew.
"""

from __future__ import annotations

import copy
import pickle
import random
from datetime import date, datetime, timedelta

import pytest
from ledger_fixtures import HOUR, SUNDAY

from dogana_core import Contract, RejectedDelivery, Shape
from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.errors import SerializationError
from dogana_core.group import Group
from dogana_core.ledger import Ledger
from dogana_core.region import Chunk, Region, Summary
from dogana_core.stored import Index, named, read_summary, stored_form, summary_form
from dogana_core.values import successor


def daily(table: str) -> Contract:
    return Contract(
        table,
        ("sku",),
        {
            "full": Shape.complete(),
            "day": Shape.complete(window=True),
            "recent": Shape.changes(window=True),
            "recent_tombstones": Shape.changes(window=True, tombstones=True),
        },
        window_column="received_on",
        deleted_column="gone",
        types={"sku": "str", "received_on": "date", "gone": "bool"},
    )


DAILY = daily("stock")
FIRST = date(2026, 10, 1)
LIMITS = [timedelta(0), 5 * HOUR, 72 * HOUR, 2000 * HOUR, NO_LIMIT]


def history(seed: int, deliveries: int = 300) -> tuple[Ledger, datetime]:
    """A ledger of hundreds of regions over several chunks: daily windows, some days skipped
    (unknown), some repaired by changes with or without tombstones (patched), now and then a
    complete whole-table read (exact everywhere); and the latest produced_at."""
    rng = random.Random(seed)
    contract = DAILY
    ledger = Ledger.new(contract)
    clock = SUNDAY
    for serial in range(deliveries):
        day = FIRST + timedelta(days=serial * rng.choice([1, 2]))
        clock += rng.randint(1, 30) * HOUR
        shape = rng.choice(["day", "day", "day", "recent", "recent_tombstones"])
        if serial == deliveries // 3:
            shape = "full"
        if shape.startswith("recent") and not ledger.regions_over(day, successor(day))[0].known:
            shape = "day"
        fields: dict[str, object] = {}
        if shape.startswith("recent"):
            fields["since"] = clock - rng.randint(0, 40) * HOUR
        if shape != "full":
            fields["window"] = (day, day)
        try:
            ledger = ledger.apply(contract.manifest(shape, clock, **fields))
        except RejectedDelivery:
            continue
    return ledger, clock


def with_stored_summaries(ledger: Ledger) -> Ledger:
    """The ledger as a receiver reads it: each chunk's bytes, and its stored summary."""
    index, chunks = stored_form(ledger)
    summaries = {name: read_summary(summary_form(chunk)) for name, chunk in named(ledger).items()}
    assert None not in summaries.values()
    return Index.read(index).ledger(ledger.contract, chunks, summaries)  # type: ignore[arg-type]


def slow(
    ledger: Ledger, now: datetime, limit: timedelta, window: tuple[date, date] | None
) -> Claims:
    """Claims.at over the regions cut to the window: every region stated and checked anew."""
    low, high = (None, None) if window is None else (window[0], successor(window[1]))
    pairs = [(ledger.contract.table, region) for region in ledger.regions_over(low, high)]
    return Claims.at(now, limit, pairs)


def stated(claims: Claims) -> tuple[object, ...]:
    return (
        claims.state,
        claims.complete_as_of,
        claims.deletions_as_of,
        claims.exact_as_of,
        claims.count,
    )


def decoded(ledger: Ledger) -> list[bool]:
    return [chunk.decoded for chunk in named(ledger).values()]


@pytest.mark.parametrize("hours", [-500, 0, 30, 500])
@pytest.mark.parametrize("seed", range(4))
def test_claims_stated_from_stored_summaries_are_claims_stated_region_by_region(
    seed: int, hours: int
) -> None:
    ledger, clock = history(seed)
    assert len(named(ledger)) > 2
    now = clock + hours * HOUR
    day = FIRST + timedelta(days=seed % 200)
    window = (day, day + timedelta(days=[0, 3, 90][seed % 3]))
    for limit in LIMITS:
        stored = with_stored_summaries(ledger)
        claims = stored.claims(now, limit=limit)
        expected = slow(ledger, now, limit, None)
        assert stated(claims) == stated(expected)
        assert not any(decoded(stored))  # the whole table's, from the summaries alone
        assert claims.regions == expected.regions and claims == expected
        windowed = stored.claims(now, limit=limit, window=window)
        expected = slow(ledger, now, limit, window)
        assert stated(windowed) == stated(expected) and windowed == expected


def test_claims_are_exact_from_the_summaries_only_when_every_region_is_exact_at_one_instant() -> (
    None
):
    at = SUNDAY + 5 * HOUR
    days = Ledger.new(DAILY)
    for n in range(0, 400, 2):  # days every other day, the days between unknown
        day = FIRST + timedelta(days=n)
        days = days.apply(DAILY.manifest("day", at + n * HOUR, window=(day, day)))
    assert len(named(days)) > 2
    stored = with_stored_summaries(days)
    assert stored.claims(at, limit=NO_LIMIT).exact_as_of is None
    one_day = (FIRST + timedelta(days=100), FIRST + timedelta(days=100))
    assert stored.claims(at, limit=NO_LIMIT, window=one_day).exact_as_of == at + 100 * HOUR
    # Every region exact at one instant: neighbours merge, one region.
    whole = with_stored_summaries(days.apply(DAILY.manifest("full", at + 500 * HOUR)))
    assert whole.claims(at, limit=NO_LIMIT).exact_as_of == at + 500 * HOUR
    assert not any(decoded(whole))


def test_claims_of_several_tables_are_exact_when_every_tables_are_at_one_instant() -> None:
    at = SUNDAY + 5 * HOUR
    one, other = DAILY, daily("other")
    ledgers = [Ledger.new(c).apply(c.manifest("full", at)) for c in (one, other)]
    group = Group((one, other))
    claims = group.claims(ledgers, at, limit=NO_LIMIT)
    assert stated(claims) == (*stated(slow(ledgers[0], at, NO_LIMIT, None))[:4], 2)
    assert claims.exact_as_of == at
    apart = [ledgers[0], ledgers[1].apply(other.manifest("full", at + HOUR))]
    assert group.claims(apart, at + HOUR, limit=NO_LIMIT).exact_as_of is None


def test_claims_listed_later_copy_and_pickle_with_their_regions() -> None:
    ledger, clock = history(7)
    claims = with_stored_summaries(ledger).claims(clock, limit=72 * HOUR)
    expected = slow(ledger, clock, 72 * HOUR, None)
    assert pickle.loads(pickle.dumps(claims)) == expected
    assert copy.deepcopy(with_stored_summaries(ledger).claims(clock, limit=NO_LIMIT)) == slow(
        ledger, clock, NO_LIMIT, None
    )
    assert Claims.from_json(claims.to_json()) == expected


def test_a_stored_summary_reads_back_as_its_chunks_summary() -> None:
    ledger, _ = history(11)
    chunks = list(named(ledger).values())
    unknown = Chunk((Region(),))
    for chunk in [*chunks, unknown]:
        assert read_summary(summary_form(chunk)) == Summary.of(chunk.regions)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "{}",
        "[0,false,false,null,null,null]",  # another form's version
        "[1,false,false,null,null]",
        '[1,"no",false,null,null,null]',
        '[1,false,false,"2026-10-01T00:00:00",null,null]',  # naive
        '[1,false,false,"2026-10-01T00:00:00+02:00","2026-10-01T00:00:00+00:00",'
        '"2026-10-01T00:00:00+00:00"]',
        '[1,false,false,"2026-10-01T00:00:00+00:00",null,null]',
        '[1,false,false,"yesterday",null,null]',
        "[1,false,false,5,null,null]",  # a date that is not text
        '[1,false,false,"2026-10-01T00:00:00+00:00",null,"2026-10-01T00:00:00+00:00"]',
        "[1,false,false,null,null,null]",  # no region, neither unknown nor known
        "[1,true,true,null,null,null]",  # patched, with no known region
        "[true,true,false,null,null,null]",
    ],
)
def test_a_stored_summary_in_another_form_reads_as_none_to_be_computed_again(text: str) -> None:
    assert read_summary(text) is None


def test_a_stored_summary_that_is_not_its_chunks_is_refused_when_its_regions_are_decoded() -> None:
    ledger, _ = history(5)
    first, second, *_ = named(ledger).values()
    wrong = Chunk.stored(first.canonical, first.count, first.head, second.summary)
    with pytest.raises(SerializationError) as refused:
        wrong.regions  # noqa: B018
    assert str(refused.value) == (
        f"Ledger.regions: a stored chunk's summary {second.summary} is not its regions' "
        f"{first.summary}"
    )
    right = Chunk.stored(first.canonical, first.count, first.head, first.summary)
    assert right.regions == first.regions
