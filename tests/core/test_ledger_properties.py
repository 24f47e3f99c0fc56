"""Algebraic guarantees, as properties over generated histories.

Every history is checked against EvidenceModel, an independent reading of Transitions 1 to 6
and of the dates each shape proves: the ledger admits exactly what the model admits, and holds
the same dates everywhere. Then the guarantees of "Algebraic guarantees": the same history gives
the same ledger; disjoint windows commute on evidence, never on the chain; no date is later than
the latest produced_at that proved it; from_receipts equals folding apply; regions always
partition the domain with no equal neighbours.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_fixtures import HOUR, MONDAY, SUNDAY, EvidenceModel

from dogana_core import Contract, InvalidContract, Manifest, RejectedDelivery, Shape
from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.errors import SerializationError
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.group import Group
from dogana_core.jcs import canonicalize
from dogana_core.ledger import Ledger
from dogana_core.region import CHUNK, Chunk, Region, RegionMap
from dogana_core.stored import Index, checked, forget, named, stored_form
from dogana_core.values import LogicalType, successor

CONTRACT = Contract(
    "stock",
    ("sku",),
    {
        "full": Shape.complete(),
        "day": Shape.complete(window=True),
        "recent": Shape.changes(window=True),
        "recent_tombstones": Shape.changes(window=True, tombstones=True),
        "changes": Shape.changes(),
        "tombstones": Shape.changes(tombstones=True),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
        "feed_plain": Shape.changes(checkpoint="generation"),
    },
    window_column="received_on",
    deleted_column="gone",
    types={"sku": "str", "received_on": "date", "gone": "bool"},
)
FIRST = date(2026, 10, 1)
DAYS = 12
LAST = FIRST + timedelta(days=DAYS - 1)
SHAPES = [name for name, _ in CONTRACT.shapes]
LABELS = ["g0", "g1", "g2", "g3"]


@dataclass(frozen=True)
class Step:
    """One drawn delivery, relative to the history so far."""

    shape: str
    hours: int  # produced_at, in hours after the latest accepted boundary (may be negative)
    low: int
    width: int
    since_back: int  # since, in hours before produced_at
    held: bool  # a generation read names the held generation, else a drawn label
    label: int


steps = st.builds(
    Step,
    shape=st.sampled_from(SHAPES),
    hours=st.integers(-3, 6),
    low=st.integers(0, DAYS - 1),
    width=st.integers(0, 3),
    since_back=st.integers(0, 12),
    held=st.booleans(),
    label=st.integers(0, len(LABELS) - 1),
)
histories = st.lists(steps, max_size=25)


def manifest_for(step: Step, clock: datetime, held: Any, serial: int) -> Manifest | None:
    """The manifest a step describes, or None when no such manifest can be built."""
    shape = CONTRACT.shape(step.shape)
    t = clock + step.hours * HOUR
    fields: dict[str, Any] = {"rows": 1}
    if shape.is_window:
        low = FIRST + timedelta(days=step.low)
        fields["window"] = (low, min(low + timedelta(days=step.width), LAST))
    if shape.checkpoint == "timestamp":
        fields["since"] = t - step.since_back * HOUR
    elif shape.checkpoint == "generation":
        fields["since"] = held if step.held and isinstance(held, str) else LABELS[step.label]
        fields["generation"] = f"n{serial}"
    elif not shape.is_window and step.held:
        fields["generation"] = f"n{serial}"
    try:
        return CONTRACT.manifest(step.shape, t, **fields)
    except InvalidContract:
        return None


def run(history: list[Step]) -> tuple[Ledger, EvidenceModel, list[Manifest]]:
    """Play a history on the ledger and on the model, checking they agree at every step."""
    ledger = Ledger.new(CONTRACT)
    model = EvidenceModel(CONTRACT, FIRST, LAST)
    clock = SUNDAY
    accepted: list[Manifest] = []
    for serial, step in enumerate(history):
        manifest = manifest_for(step, clock, ledger.generation, serial)
        if manifest is None:
            continue
        admitted = model.admits(manifest)
        try:
            after = ledger.apply(manifest)
        except RejectedDelivery:
            assert not admitted, f"ledger refused what the spec admits: {manifest}"
            continue
        assert admitted, f"ledger admitted what the spec refuses: {manifest}"
        model.apply(manifest)
        ledger = after
        accepted.append(manifest)
        clock = max(clock, manifest.produced_at)
        assert_agrees(ledger, model)
    return ledger, model, accepted


def assert_agrees(ledger: Ledger, model: EvidenceModel) -> None:
    for bucket, probe in model.probes().items():
        (region,) = ledger.regions_over(probe, successor(probe))
        expected = model.buckets[bucket] or (None, None)
        assert region.evidence == expected, f"at {bucket}: {region.evidence} != {expected}"
    assert ledger.generation == model.position
    assert ledger.head == model.head


def assert_partition(ledger: Ledger) -> None:
    RegionMap.of(tuple(ledger.regions), CONTRACT.window_type)
    assert Ledger.from_json(ledger.to_json()) == ledger


# The properties ----------------------------------------------------------------------------------


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_the_ledger_admits_and_proves_exactly_what_the_spec_does(history: list[Step]) -> None:
    run(history)


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_regions_always_partition_the_domain_with_no_equal_neighbours(history: list[Step]) -> None:
    ledger = Ledger.new(CONTRACT)
    clock = SUNDAY
    for serial, step in enumerate(history):
        manifest = manifest_for(step, clock, ledger.generation, serial)
        if manifest is None:
            continue
        try:
            ledger = ledger.apply(manifest)
        except RejectedDelivery:
            continue
        clock = max(clock, manifest.produced_at)
        assert_partition(ledger)


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_the_same_initial_ledger_and_accepted_history_give_the_same_ledger(
    history: list[Step],
) -> None:
    ledger, _, accepted = run(history)
    for start in (Ledger.new(CONTRACT), Ledger.from_json(Ledger.new(CONTRACT).to_json())):
        again = start
        for manifest in accepted:
            again = again.apply(manifest)
        assert again == ledger
        assert again.identity == ledger.identity


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_no_date_is_later_than_the_latest_produced_at_that_proved_it(history: list[Step]) -> None:
    ledger, model, accepted = run(history)
    for bucket, probe in model.probes().items():
        covering = [m.produced_at for m in accepted if bucket in model.covered(m)]
        (region,) = ledger.regions_over(probe, successor(probe))
        c, d = region.evidence
        if not covering:
            assert (c, d) == (None, None)
            continue
        assert c is not None and d is not None
        assert d <= c <= max(covering)
        assert c in covering and d in covering


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories, steps, steps)
def test_disjoint_windows_commute_on_evidence_never_on_the_chain(
    history: list[Step], first: Step, second: Step
) -> None:
    ledger, _, _ = run(history)
    clock = max([SUNDAY, *(r.complete_as_of for r in ledger.regions if r.complete_as_of)])
    windowed = ["day", "recent", "recent_tombstones"]
    a = manifest_for(Step(windowed[first.label % 3], *_rest(first)), clock, None, 1000)
    b = manifest_for(Step(windowed[second.label % 3], *_rest(second)), clock, None, 1001)
    if a is None or b is None or a.window is None or b.window is None:
        return
    if not (a.window[1] < b.window[0] or b.window[1] < a.window[0]):
        return
    try:
        ab = ledger.apply(a).apply(b)
        ba = ledger.apply(b).apply(a)
    except RejectedDelivery:
        return
    assert ab.regions == ba.regions
    assert ab.generation == ba.generation
    assert ab.publication_id != ba.publication_id


def _rest(step: Step) -> tuple[int, int, int, int, bool, int]:
    return (abs(step.hours) + 1, step.low, step.width, step.since_back, step.held, step.label)


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories, st.lists(st.booleans(), max_size=25))
def test_from_receipts_over_a_history_equals_folding_apply(
    history: list[Step], failures: list[bool]
) -> None:
    ledger = Ledger.new(CONTRACT)
    receipts: list[Receipt] = []
    clock = SUNDAY
    for serial, step in enumerate(history):
        manifest = manifest_for(step, clock, ledger.generation, serial)
        if manifest is None:
            continue
        failed = serial < len(failures) and failures[serial]
        outcomes = (Check("rows", not failed),)
        receipt = Gate.evaluate(ledger, manifest, outcomes, now=manifest.produced_at + HOUR)
        receipts.append(receipt)
        if receipt.accepted:
            ledger = ledger.apply(manifest)
            clock = max(clock, manifest.produced_at)
    rebuilt = Ledger.from_receipts(CONTRACT, receipts)
    assert rebuilt == ledger
    assert rebuilt.identity == ledger.identity


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_the_ledgers_identity_is_the_generic_identity_of_its_wire_form(history: list[Step]) -> None:
    ledger, _, _ = run(history)
    assert ledger.identity == hashlib.sha256(canonicalize(ledger.identity_dict())).hexdigest()


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_long_histories_across_many_chunks_agree_with_the_spec(seed: int) -> None:
    """Hundreds of regions, so splices cross chunk boundaries, borrow and split chunks."""
    rng = random.Random(seed)
    days = 400
    ledger = Ledger.new(CONTRACT)
    model = EvidenceModel(CONTRACT, FIRST, FIRST + timedelta(days=days - 1))
    clock = SUNDAY
    for serial in range(1500):
        shape = rng.choice(["day"] * 6 + ["recent", "recent_tombstones", "full", "changes"])
        t = clock + rng.randint(-1, 3) * HOUR
        fields: dict[str, Any] = {}
        if CONTRACT.shape(shape).is_window:
            low = FIRST + timedelta(days=rng.randrange(days))
            fields["window"] = (low, low + timedelta(days=rng.choice([0, 0, 1, 5, 40])))
        if CONTRACT.shape(shape).checkpoint == "timestamp":
            fields["since"] = t - rng.randint(0, 30) * HOUR
        if shape == "full" and rng.random() < 0.7:
            continue  # keep most histories fragmented
        manifest = CONTRACT.manifest(shape, t, **fields)
        in_domain = manifest.window is None or manifest.window[1] <= model.last
        admitted = model.admits(manifest) if in_domain else None
        try:
            after = ledger.apply(manifest)
        except RejectedDelivery:
            assert admitted is not True
            continue
        if admitted is None:
            continue  # a window beyond the model's days; not comparable, not applied
        assert admitted
        ledger = after
        model.apply(manifest)
        clock = max(clock, t)
        if serial % 250 == 0:
            assert_agrees(ledger, model)
    assert_agrees(ledger, model)
    assert_partition(ledger)
    assert ledger.identity == hashlib.sha256(canonicalize(ledger.identity_dict())).hexdigest()


# The fast paths give what the slow ones give -----------------------------------------------------

LIMITS = [timedelta(0), HOUR, 5 * HOUR, 24 * HOUR, 72 * HOUR, NO_LIMIT]


def slow_claims(
    ledger: Ledger, now: datetime, limit: timedelta, window: tuple[date, date] | None
) -> Claims:
    """Claims.at over the regions cut to the window: every region stated and checked anew."""
    low, high = (None, None) if window is None else (window[0], successor(window[1]))
    pairs = [(ledger.contract.table, region) for region in ledger.regions_over(low, high)]
    return Claims.at(now, limit, pairs)


def assert_claims_as_slow(
    ledger: Ledger, nows: list[datetime], windows: list[Any], limits: list[timedelta] = LIMITS
) -> None:
    for now in nows:
        for limit in limits:
            for window in windows:
                fast = ledger.claims(now, limit=limit, window=window)
                assert fast == slow_claims(ledger, now, limit, window)
                if len(fast.regions) < 100:  # a valid Claims too (checked region by region)
                    assert Claims.from_json(fast.to_json()) == fast


def reloaded(ledger: Ledger) -> Ledger:
    """The ledger stored and read back as a receiver does, each chunk as stored bytes."""
    index, chunks = stored_form(ledger)
    return Index.read(index).ledger(ledger.contract, chunks)


def random_windows(rng: random.Random, days: int) -> list[tuple[date, date] | None]:
    lows = [FIRST + timedelta(days=rng.randrange(days)) for _ in range(3)]
    return [None, *((low, low + timedelta(days=rng.choice([0, 3, 60]))) for low in lows)]


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories, st.integers(-200, 200), st.integers(0, DAYS - 1), st.integers(0, DAYS))
def test_claims_over_chunks_equal_claims_stated_region_by_region(
    history: list[Step], hours: int, low: int, width: int
) -> None:
    ledger, _, _ = run(history)
    window = (FIRST + timedelta(days=low), FIRST + timedelta(days=low + width))
    nows = [SUNDAY + hours * HOUR, SUNDAY + (hours + 100) * HOUR]
    assert_claims_as_slow(ledger, nows, [None, window])
    # Each chunk keeps the claims it stated; a later call at another now must not reuse them
    # where the state depends on now.
    assert_claims_as_slow(ledger, list(reversed(nows)), [None, window])


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_claims_over_hundreds_of_chunks_equal_claims_stated_region_by_region(seed: int) -> None:
    rng = random.Random(seed)
    ledger = Ledger.new(CONTRACT)
    clock = SUNDAY
    for serial in range(800):  # a day at a time, some skipped: thousands of regions
        day = FIRST + timedelta(days=serial * rng.choice([1, 2]))
        clock += rng.randint(1, 30) * HOUR
        shape = rng.choice(["day", "day", "day", "recent"])
        if shape == "recent" and not ledger.regions_over(day, successor(day))[0].known:
            shape = "day"
        since = {"since": clock - rng.randint(0, 40) * HOUR} if shape == "recent" else {}
        manifest = CONTRACT.manifest(shape, clock, window=(day, day), **since)
        try:
            ledger = ledger.apply(manifest)
        except RejectedDelivery:
            continue
    earliest = min(r.complete_as_of for r in ledger.regions if r.complete_as_of is not None)
    nows = [clock, earliest + 2 * HOUR, clock + 1000 * HOUR]
    windows = random_windows(rng, 1200)
    limits = [5 * HOUR, 72 * HOUR, NO_LIMIT]
    assert_claims_as_slow(ledger, nows, windows, limits)
    assert_claims_as_slow(reloaded(ledger), nows, windows[:2], limits)


def test_a_window_ending_inside_a_chunks_edge_region_cuts_that_region() -> None:
    """A chunk is claimed whole only when the window holds it whole: a window that starts or
    ends inside its first or last region cuts that region, as claims stated region by region."""
    ledger = Ledger.new(CONTRACT)
    for number in range(200):  # regions three days wide, each proved at its own hour
        low = FIRST + timedelta(days=3 * number)
        window = (low, low + timedelta(days=2))
        ledger = ledger.apply(CONTRACT.manifest("day", SUNDAY + number * HOUR, window=window))
    chunks = ledger.regions.chunks  # type: ignore[attr-defined]
    assert len(chunks) > 2
    inside = timedelta(days=1)
    windows = [
        (this.regions[0].low + inside, after.regions[-1].low + inside)
        for this, after in pairwise(chunks[1:])
    ]
    assert_claims_as_slow(ledger, [SUNDAY + 100 * HOUR], windows, [NO_LIMIT])


@settings(deadline=None)  # timing is the benchmark's business, not a test's
@given(histories)
def test_a_stored_ledger_loads_as_the_same_ledger_with_the_same_identity(
    history: list[Step],
) -> None:
    ledger, _, _ = run(history)
    index, chunks = stored_form(ledger)
    loaded = Index.read(index).ledger(CONTRACT, chunks)
    # The identity first: hashed from the stored bytes, before any region is decoded.
    assert loaded.identity == ledger.identity
    assert loaded == ledger
    assert reloaded(loaded) == ledger
    regions = canonicalize(ledger.identity_dict()["regions"])
    stored = b",".join(chunks[name] for name in Index.read(index).digests)
    assert stored == regions[1:-1]


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_loaded_ledger_applies_as_the_ledger_it_was_stored_from(seed: int) -> None:
    rng = random.Random(seed)
    ledger = Ledger.new(CONTRACT)
    clock = SUNDAY
    manifests = []
    for serial in range(600):
        clock += HOUR
        day = FIRST + timedelta(days=rng.randrange(500) if serial % 3 else serial)
        manifests.append(CONTRACT.manifest("day", clock, window=(day, day)))
    loaded = reloaded(ledger)
    for number, manifest in enumerate(manifests):
        ledger = ledger.apply(manifest)
        loaded = loaded.apply(manifest)
        if number % 50 == 0:  # a fresh load now and then: untouched chunks stay undecoded
            loaded = reloaded(loaded)
            assert loaded.identity == ledger.identity
    assert loaded.identity == ledger.identity
    assert loaded == ledger


def test_a_stored_chunk_that_does_not_match_its_index_is_refused_naming_it() -> None:
    ledger = Ledger.new(CONTRACT)
    for number in range(100):
        day = FIRST + timedelta(days=2 * number)
        ledger = ledger.apply(CONTRACT.manifest("day", SUNDAY + number * HOUR, window=(day, day)))
    text, chunks = stored_form(ledger)
    index = json.loads(text)
    index["chunks"][1][0] += 1  # one region more than its bytes hold
    loaded = Index.read(json.dumps(index)).ledger(CONTRACT, chunks)
    count, head, _ = Index.read(json.dumps(index)).chunks[1]
    with pytest.raises(SerializationError) as refused:
        tuple(loaded.regions)
    assert str(refused.value) == (
        f"Ledger.regions: a stored chunk holds {count - 1} regions from {head!r}, its index says "
        f"{count} from {head!r}"
    )
    gone = index["chunks"][2][2]
    del chunks[gone]
    with pytest.raises(SerializationError) as refused:
        Index.read(text).ledger(CONTRACT, chunks)
    assert str(refused.value) == f"stored ledger: chunk {gone} is missing"


def daily(days: int) -> Ledger:
    ledger = Ledger.new(CONTRACT)
    for number in range(days):
        day = FIRST + timedelta(days=2 * number)
        ledger = ledger.apply(CONTRACT.manifest("day", SUNDAY + number * HOUR, window=(day, day)))
    return ledger


def test_a_kept_chunk_is_shared_by_the_ledger_read_with_it_as_it_is() -> None:
    """A reader keeps the chunks it read by digest (receiver/store.py): a ledger read again
    with them shares them, the regions they decoded and the claims they stated included."""
    ledger = daily(200)
    text, chunks = stored_form(ledger)
    first = Index.read(text).ledger(CONTRACT, chunks)
    first.claims(SUNDAY, limit=NO_LIMIT)  # decodes every chunk and states its claims
    again = Index.read(text).ledger(CONTRACT, named(first))
    assert list(named(again).values()) == list(named(first).values())
    assert all(a is b for a, b in zip(named(again).values(), named(first).values(), strict=True))
    assert again == ledger
    assert again.identity == ledger.identity
    assert again.claims(SUNDAY, limit=NO_LIMIT) == ledger.claims(SUNDAY, limit=NO_LIMIT)


def test_a_kept_chunk_that_does_not_match_its_index_is_refused_naming_it() -> None:
    ledger = daily(100)
    text, _ = stored_form(ledger)
    names = Index.read(text).digests
    kept = named(ledger)
    kept[names[1]], kept[names[0]] = kept[names[0]], kept[names[1]]  # each under the other's name
    second = kept[names[0]]
    with pytest.raises(SerializationError) as refused:
        Index.read(text).ledger(CONTRACT, kept)
    assert str(refused.value) == (
        f"Ledger.regions: chunk {names[0]} holds {second.count} regions from {second.head!r}, "
        f"its index says {named(ledger)[names[0]].count} from None"
    )


def daily_regions() -> tuple[list[Region], RegionMap]:
    """201 regions a day wide, each proved at its own hour, in chunks of 51 and 50."""
    days = [FIRST + timedelta(days=n) for n in range(200)]
    regions = [
        Region.span(None, days[0]),
        *(
            Region.span(low, high, SUNDAY + n * HOUR, SUNDAY)
            for n, (low, high) in enumerate(pairwise(days))
        ),
        Region.span(days[-1], None),
    ]
    regions_map = RegionMap.of(regions, LogicalType.DATE)
    assert [chunk.count for chunk in regions_map.chunks] == [51, 50, 50, 50]
    return regions, regions_map


def test_a_splice_merges_equal_neighbours_across_chunk_edges() -> None:
    """Regions always partition the domain with no equal neighbours: a region replaced by a
    piece with its neighbour's dates merges with it, in its chunk or the one before or after."""
    regions, regions_map = daily_regions()
    for index, region in enumerate(regions):
        for other in (index - 1, index + 1):
            if not 0 <= other < len(regions):
                continue
            piece = Region.span(region.low, region.high, *regions[other].evidence)
            expected: list[Region] = []
            for each in [*regions[:index], piece, *regions[index + 1 :]]:
                if expected and expected[-1].evidence == each.evidence:
                    each = Region.span(expected[-1].low, each.high, *each.evidence)
                    expected.pop()
                expected.append(each)
            assert regions_map.replace(region.low, region.high, [piece]) == expected


def test_a_splice_keeps_every_chunk_but_the_last_at_least_half_full() -> None:
    """A span replaced by one piece: a run left short borrows a neighbouring chunk."""
    regions, regions_map = daily_regions()
    for first, last in ((5, 30), (5, 90), (61, 86), (110, 195), (20, 180), (150, 199), (0, 200)):
        low, high = regions[first].low, regions[last].high
        piece = Region.span(low, high, MONDAY, MONDAY)
        spliced = regions_map.replace(low, high, [piece])
        assert spliced == [*regions[:first], piece, *regions[last + 1 :]]
        assert all(chunk.count >= CHUNK // 2 for chunk in spliced.chunks[:-1])


def test_a_region_map_equals_hashes_and_shows_as_the_tuple_of_its_regions() -> None:
    """RegionMap stands for the tuple of its regions: equal, equally hashed, and shown so."""
    regions = daily(100).regions
    assert isinstance(regions, RegionMap)
    assert regions == tuple(regions) and regions == list(regions)
    assert regions != tuple(reversed(regions)), "the same regions in another order"
    assert regions != tuple(regions)[:-1]
    assert hash(regions) == hash(tuple(regions)) == hash(regions)
    assert repr(regions) == f"RegionMap({tuple(regions)!r})"


def test_the_bytes_read_for_a_chunk_are_checked_against_its_digest() -> None:
    """A chunk is named by the SHA-256 of its bytes; bytes read under a name are checked."""
    _, chunks = stored_form(daily(100))
    (first, mine), (second, _) = list(chunks.items())[:2]
    assert checked(first, mine) is mine
    with pytest.raises(SerializationError) as caught:
        checked(second, mine)
    assert caught.value.path == "stored ledger"
    assert caught.value.message == f"the bytes read for chunk {second} are another's"


@pytest.mark.parametrize("days", [40, 200])  # two chunks, many chunks
def test_a_stored_ledger_of_another_window_type_is_refused_before_a_chunk_is_decoded(
    days: int,
) -> None:
    ledger = daily(days)
    text, chunks = stored_form(ledger)
    timed = CONTRACT.replace(
        types=tuple((n, "datetime" if n == "received_on" else t) for n, t in CONTRACT.types)
    )
    unreadable = dict.fromkeys(chunks, b"not a region")  # decoding any of them would raise
    with pytest.raises(InvalidContract, match="expected datetime"):
        Index.read(text).ledger(timed, unreadable)


@settings(max_examples=3, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_group_claims_equal_claims_stated_region_by_region(seed: int) -> None:
    rng = random.Random(seed)
    other = CONTRACT.replace(table="stock_elsewhere")
    ledgers = {CONTRACT.table: Ledger.new(CONTRACT), other.table: Ledger.new(other)}
    clock = SUNDAY
    for serial in range(300):
        clock += rng.randint(1, 30) * HOUR
        day = FIRST + timedelta(days=serial * rng.choice([1, 2]))
        table = rng.choice([CONTRACT, CONTRACT, other])
        ledgers[table.table] = ledgers[table.table].apply(
            table.manifest("day", clock, window=(day, day))
        )
    group = Group([CONTRACT, other])
    for now in (clock, clock + 300 * HOUR):
        for limit in (5 * HOUR, 400 * HOUR, NO_LIMIT):
            for windows in (None, {CONTRACT.table: (FIRST, FIRST + timedelta(days=40))}):
                fast = group.claims(ledgers, now, limit=limit, windows=windows)
                pairs = [
                    (claim.table, claim.region)
                    for table, ledger in ledgers.items()
                    for claim in slow_claims(ledger, now, limit, (windows or {}).get(table)).regions
                ]
                assert fast == Claims.at(now, limit, pairs)


def test_a_stored_date_where_an_instant_belongs_is_refused_though_an_end_held_it_first() -> None:
    """Decoding keeps each value it met; a date field must still refuse what an end accepts."""
    end = '{"high":{"$date":"2000-01-02"},"kind":"Region"}'
    dated = (
        '{"complete_as_of":{"$date":"2000-01-02"},"deletions_as_of":{"$date":"2000-01-02"},'
        '"kind":"Region","low":{"$date":"2000-01-02"},"low_open":false}'
    )
    chunk = Chunk.stored(f"{end},{dated}".encode(), 2, None)
    with pytest.raises(SerializationError, match=r"regions\[1\]\.complete_as_of"):
        chunk.regions  # noqa: B018


def test_a_value_met_twice_in_a_stored_chunk_is_decoded_once() -> None:
    """A region's high end is its neighbour's low end, and its two dates are often one instant:
    a stored chunk decodes each such value once and shares it."""
    ledger = daily(3)
    chunk = Chunk.stored(ledger.regions.chunks[0].canonical, len(ledger.regions), None)
    regions = chunk.regions
    assert regions == tuple(ledger.regions)
    for left, right in pairwise(regions):
        assert left.high is right.low
    known = regions[1]
    assert known.complete_as_of is known.deletions_as_of


def test_a_decoded_region_keeps_the_bytes_it_was_read_from_as_its_canonical_form() -> None:
    """So that a chunk an apply rebuilds joins its regions' bytes instead of encoding them."""
    canonical = daily(3).regions.chunks[0].canonical
    regions = Chunk.stored(canonical, 7, None).regions
    assert b",".join(vars(region)["canonical"] for region in regions) == canonical


def test_a_stored_region_may_write_every_field_defaults_included() -> None:
    region = daily(1).regions[1]
    written = json.dumps({k: v for k, v in region.to_dict().items() if k != "version"})
    assert Chunk.stored(written.encode(), 1, region.low).regions == (region,)


def test_a_stored_chunk_has_no_attribute_but_its_regions_and_lows() -> None:
    chunk = Chunk.stored(daily(3).regions.chunks[0].canonical, 7, None)
    with pytest.raises(AttributeError) as lacking:
        chunk.nothing  # type: ignore[attr-defined]  # noqa: B018
    assert lacking.value.args == ("nothing",)
    assert not chunk.decoded
    assert chunk.lows[1] == FIRST and chunk.decoded


def test_stored_bytes_that_are_not_regions_are_refused_naming_the_region() -> None:
    """A stored chunk is its regions' identity forms, comma separated: anything else is refused
    naming the region it stopped at."""
    region = '{"kind":"Region"}'
    other = '{"kind":"Manifest"}'
    for text, expected in (
        (f"{region},{other}", "Ledger.regions[1]: expected the identity form of a Region"),
        (f"{region} {region}", "Ledger.regions[0]: regions are separated by commas"),
        (
            "{",
            "Ledger.regions[0]: not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        (
            '{"kind":"Region","low_open":false}',
            "Ledger.regions[0]: Region.low_open: canonical regions are closed at a bounded low "
            "end and open at an unbounded one; got low=None with low_open=False",
        ),
        (
            '{"complete_as_of":5,"kind":"Region"}',
            'Ledger.regions[0].complete_as_of: expected a {"$datetime": ...} tag, got number 5',
        ),
        *(
            (
                f'{{"high":{tagged},"kind":"Region"}}',
                "Ledger.regions[0].high: expected an integer, a string, $date "
                f"or $datetime, got object {json.loads(tagged)}",
            )
            for tagged in ('{"$date":"2000-01-02","x":1}', "{}")
        ),
        (
            '{"high":{"$date":[1]},"kind":"Region"}',
            "Ledger.regions[0].high: expected a string, got array [1]",
        ),
    ):
        with pytest.raises(SerializationError) as refused:
            Chunk.stored(text.encode(), 2, None).regions  # noqa: B018
        assert str(refused.value) == expected


def test_a_stored_ledger_starts_with_the_chunk_holding_the_domains_low_end() -> None:
    """Regions partition the domain: a stored index whose first chunk starts at a value (here the
    first two chunks swapped) is refused before a chunk is decoded."""
    text, chunks = stored_form(daily(100))
    index = json.loads(text)
    index["chunks"][:2] = index["chunks"][1::-1]
    with pytest.raises(SerializationError) as refused:
        Index.read(json.dumps(index)).ledger(CONTRACT, chunks)
    assert str(refused.value) == (
        "Ledger.regions: the first of at least one chunk starts unbounded"
    )


def test_a_region_index_beyond_the_ledger_is_out_of_range() -> None:
    """Ledger.regions is a sequence: an index past either end raises IndexError, as a tuple's."""
    regions = daily(100).regions
    for index in (len(regions), -len(regions) - 1):
        with pytest.raises(IndexError) as refused:
            regions[index]
        assert str(refused.value) == "region index out of range"
    assert regions[-1] == tuple(regions)[-1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stored": 1}, "stored ledger.stored: 1 is not 2"),
        ({"chunks": {}}, "stored ledger.chunks: expected a list"),
        ({"generation": []}, "stored ledger.generation: expected an integer, got array []"),
        ({"publication_id": ""}, "stored ledger.publication_id: must not be empty"),
        (
            {"chunks": [[1, None]]},
            "stored ledger.chunks[0]: expected [regions, first low end, digest]",
        ),
        (
            {"chunks": [[0, None, "a" * 64]]},
            "stored ledger.chunks[0]: a chunk holds a region or more, named by its SHA-256",
        ),
        (
            {"chunks": [[1, None, "A" * 64]]},
            "stored ledger.chunks[0]: a chunk holds a region or more, named by its SHA-256",
        ),
        (
            {"extra": 1},
            "stored ledger: an index has the fields chunks, generation, publication_id, stored",
        ),
        (
            {"chunks": [["1", None, "a" * 64]]},
            "stored ledger.chunks[0]: expected an integer, got string '1'",
        ),
        (
            {"chunks": [[1, {"$date": "2026-10-01", "$datetime": "x"}, "a" * 64]]},
            "stored ledger.chunks[0]: expected an integer, a string, $date or $datetime, got "
            "object {'$date': '2026-10-01', '$datetime': 'x'}",
        ),
        (
            {"chunks": [[1, {}, "a" * 64]]},
            "stored ledger.chunks[0]: expected an integer, a string, $date or $datetime, got "
            "object {}",
        ),
        (
            {"chunks": [[1, {"$date": "2026-13-01"}, "a" * 64]]},
            "stored ledger.chunks[0]: $date '2026-13-01': month must be in 1..12",
        ),
        (
            {"chunks": [[1, {"$date": 20261001}, "a" * 64]]},
            "stored ledger.chunks[0]: expected a string, got number 20261001",
        ),
        (
            {"chunks": [[1, True, "a" * 64]]},
            "stored ledger.chunks[0]: expected an integer, got boolean True",
        ),
    ],
)
def test_a_stored_index_out_of_its_form_is_refused_naming_the_field(
    change: dict[str, Any], message: str
) -> None:
    text, _ = stored_form(daily(3))
    with pytest.raises(SerializationError) as refused:
        Index.read(json.dumps({**json.loads(text), **change}))
    assert str(refused.value) == message


TEXTUAL = Contract(
    "shelf",
    ("sku",),
    {"range": Shape.complete(window=True)},
    window_column="aisle",
    types={"sku": "str", "aisle": "str"},
)


def test_a_stored_index_is_one_line_of_canonical_ascii_json() -> None:
    """The index is read by other processes and versions: sorted keys, no spaces, every
    character past ASCII and every control character escaped, the head of a chunk in its wire
    form and the position as it is."""
    at = datetime(2026, 10, 1, tzinfo=UTC)
    known = Region.span(None, "caf\u00e9\n", at, at)
    rest = Region.span("caf\u00e9\n", None)
    publication = "ab" * 32
    ledger = Ledger(
        TEXTUAL,
        RegionMap.of_chunks([Chunk((known,)), Chunk((rest,))]),
        "lsn/\u00e9",
        publication,
    )
    first, second = (hashlib.sha256(r.canonical).hexdigest() for r in (known, rest))
    text, chunks = stored_form(ledger)
    assert text == (
        f'{{"chunks":[[1,null,"{first}"],[1,"caf\\u00e9\\n","{second}"]],'
        f'"generation":"lsn/\\u00e9","publication_id":"{publication}","stored":2}}'
    )
    assert chunks == {first: known.canonical, second: rest.canonical}
    index = Index.read(text)
    assert index.chunks == ((1, None, first), (1, "caf\u00e9\n", second))
    assert (index.generation, index.publication_id) == ("lsn/\u00e9", publication)
    assert Index.read(text).ledger(TEXTUAL, chunks) == ledger


def test_an_index_decodes_each_tagged_end_once_per_process_until_forgotten() -> None:
    """The index after each publication repeats the ends of every chunk it did not touch: a
    process decodes each once, and forget starts it again as a new process would."""
    text, _ = stored_form(daily(100))
    first = Index.read(text)
    ends = [head for _, head, _ in first.chunks[1:]]
    assert ends and all(isinstance(end, date) for end in ends)
    again = [head for _, head, _ in Index.read(text).chunks[1:]]
    assert all(a is b for a, b in zip(again, ends, strict=True))
    forget()
    fresh = [head for _, head, _ in Index.read(text).chunks[1:]]
    assert fresh == ends
    assert not any(a is b for a, b in zip(fresh, ends, strict=True))
