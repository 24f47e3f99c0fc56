"""Contract and shapes, "Shapes": the four properties of a Shape, and its rolling windows.

1. Complete shapes have deletions absence and checkpoint none; changed-only shapes a timestamp,
   generation or sequence checkpoint and deletions none or tombstone.
2. No window shape uses generations or sequences. That leaves ten shapes.
3. cost, nonnegative, default one.
4. window_size, optional and positive; DATE widths are whole UTC days including both ends,
   datetime widths an elapsed UTC duration including both ends, at microsecond resolution.
5. lookback, nonnegative, only on timestamp shapes (of keyed contracts: see test_contract).
Shape constructors take keywords; Shape.window_ending_at computes rolling windows.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from dogana_core import Checkpoint, Coverage, Deletions, InvalidContract, Shape
from dogana_core.values import DATETIME_MIN

TEN_SHAPES = {
    (Coverage.TABLE, Deletions.ABSENCE, Checkpoint.NONE),
    (Coverage.WINDOW, Deletions.ABSENCE, Checkpoint.NONE),
    (Coverage.TABLE, Deletions.NONE, Checkpoint.TIMESTAMP),
    (Coverage.TABLE, Deletions.TOMBSTONE, Checkpoint.TIMESTAMP),
    (Coverage.TABLE, Deletions.NONE, Checkpoint.GENERATION),
    (Coverage.TABLE, Deletions.TOMBSTONE, Checkpoint.GENERATION),
    (Coverage.TABLE, Deletions.NONE, Checkpoint.SEQUENCE),
    (Coverage.TABLE, Deletions.TOMBSTONE, Checkpoint.SEQUENCE),
    (Coverage.WINDOW, Deletions.NONE, Checkpoint.TIMESTAMP),
    (Coverage.WINDOW, Deletions.TOMBSTONE, Checkpoint.TIMESTAMP),
}


def builds(**fields: object) -> bool:
    try:
        Shape(**fields)  # type: ignore[arg-type]
    except InvalidContract:
        return False
    return True


# 1 and 2: the ten shapes -------------------------------------------------------------------------


def test_there_are_ten_shapes_and_only_those() -> None:
    built = {
        combination
        for combination in itertools.product(Coverage, Deletions, Checkpoint)
        if builds(coverage=combination[0], deletions=combination[1], checkpoint=combination[2])
    }
    assert built == TEN_SHAPES


def test_complete_shapes_prove_deletions_by_absence() -> None:
    for deletions in (Deletions.NONE, Deletions.TOMBSTONE):
        with pytest.raises(InvalidContract, match="absence"):
            Shape(deletions=deletions, checkpoint=Checkpoint.NONE)


def test_changed_only_shapes_have_deletions_none_or_tombstone() -> None:
    for checkpoint in (Checkpoint.TIMESTAMP, Checkpoint.GENERATION, Checkpoint.SEQUENCE):
        with pytest.raises(InvalidContract, match="none or tombstone"):
            Shape(deletions=Deletions.ABSENCE, checkpoint=checkpoint)


def test_no_window_shape_uses_generations_or_sequences() -> None:
    for checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE):
        for deletions in (Deletions.NONE, Deletions.TOMBSTONE):
            with pytest.raises(InvalidContract, match="whole table"):
                Shape(coverage=Coverage.WINDOW, deletions=deletions, checkpoint=checkpoint)


def test_a_window_shape_may_read_changes_by_timestamp() -> None:
    shape = Shape.changes(window=True, tombstones=True)
    assert (shape.coverage, shape.deletions, shape.checkpoint) == (
        Coverage.WINDOW,
        Deletions.TOMBSTONE,
        Checkpoint.TIMESTAMP,
    )


def test_the_default_shape_is_a_complete_read_of_the_table() -> None:
    assert Shape() == Shape.complete()
    assert (Shape().coverage, Shape().deletions, Shape().checkpoint) == (
        Coverage.TABLE,
        Deletions.ABSENCE,
        Checkpoint.NONE,
    )


def test_the_builders_make_each_of_the_ten_shapes() -> None:
    built = {Shape.complete(), Shape.complete(window=True)}
    for checkpoint, tombstones in itertools.product(
        (Checkpoint.TIMESTAMP, Checkpoint.GENERATION, Checkpoint.SEQUENCE), (False, True)
    ):
        built.add(Shape.changes(checkpoint=checkpoint, tombstones=tombstones))
    built |= {Shape.changes(window=True), Shape.changes(window=True, tombstones=True)}
    assert {(s.coverage, s.deletions, s.checkpoint) for s in built} == TEN_SHAPES


def test_enum_fields_accept_their_string_values_and_nothing_else() -> None:
    assert Shape(coverage="window", checkpoint="none") == Shape.complete(window=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidContract, match="coverage"):
        Shape(coverage="partition")  # type: ignore[arg-type]
    with pytest.raises(InvalidContract, match="checkpoint"):
        Shape(checkpoint="cdc")  # type: ignore[arg-type]


def test_shape_constructors_take_keywords() -> None:
    with pytest.raises(TypeError):
        Shape("window")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Shape.complete(True)  # type: ignore[misc]
    with pytest.raises(TypeError):
        Shape.changes("sequence")  # type: ignore[misc]


# 3: cost -----------------------------------------------------------------------------------------


def test_cost_defaults_to_one() -> None:
    assert Shape().cost == 1


def test_cost_is_nonnegative() -> None:
    assert Shape(cost=0).cost == 0
    assert Shape(cost=0.25).cost == 0.25
    with pytest.raises(InvalidContract, match="cost"):
        Shape(cost=-1)
    with pytest.raises(InvalidContract, match="cost"):
        Shape(cost=-0.5)


def test_cost_is_a_finite_number() -> None:
    for bad in (float("nan"), float("inf"), True, "1", None):
        with pytest.raises(InvalidContract, match="cost"):
            Shape(cost=bad)  # type: ignore[arg-type]


def test_an_integer_cost_is_exact_binary64() -> None:
    with pytest.raises(InvalidContract, match="not exact in binary64"):
        Shape(cost=2**53 + 1)
    with pytest.raises(InvalidContract, match="not exact in binary64"):
        Shape(cost=10**400)
    assert Shape(cost=2**60).identity_json() == '{"cost":1152921504606847000,"kind":"Shape"}'


def test_a_cost_with_a_zero_fraction_is_the_integer_it_spells() -> None:
    shape = Shape(cost=2.0)
    assert shape.cost == 2 and type(shape.cost) is int
    assert shape == Shape(cost=2)
    assert shape.identity == Shape(cost=2).identity
    assert Shape(cost=1.0).identity_dict() == {"kind": "Shape"}


# 4: window_size ----------------------------------------------------------------------------------


def test_window_size_is_optional() -> None:
    assert Shape.complete(window=True).window_size is None


def test_window_size_is_positive() -> None:
    for bad in (timedelta(0), timedelta(microseconds=-1), timedelta(days=-30)):
        with pytest.raises(InvalidContract, match="window_size"):
            Shape.complete(window=True, window_size=bad)
    assert Shape.complete(window=True, window_size=timedelta(microseconds=1)).window_size


def test_window_size_is_a_duration() -> None:
    with pytest.raises(InvalidContract, match="window_size"):
        Shape.complete(window=True, window_size=30)  # type: ignore[arg-type]


def test_only_window_shapes_have_a_window_size() -> None:
    with pytest.raises(InvalidContract) as refused:
        Shape.complete(window_size=timedelta(days=1))
    assert str(refused.value) == "Shape.window_size: only window shapes have a window size"
    with pytest.raises(InvalidContract, match="window"):
        Shape.changes(window_size=timedelta(days=1))


def test_a_duration_that_could_not_be_written_exactly_is_refused() -> None:
    # Past 2**53 microseconds, a fractional number of seconds cannot hold every microsecond.
    unwritable = timedelta(days=200_000, microseconds=1)
    with pytest.raises(InvalidContract) as refused:
        Shape.complete(window=True, window_size=unwritable)
    assert str(refused.value) == (
        "Shape.window_size: duration 200000 days, 0:00:00.000001 cannot be written without rounding"
    )
    with pytest.raises(InvalidContract) as refused:
        Shape.changes(lookback=unwritable)
    assert str(refused.value) == (
        "Shape.lookback: duration 200000 days, 0:00:00.000001 cannot be written without rounding"
    )
    writable = timedelta(days=200_000)
    assert (
        Shape.from_json(Shape.complete(window=True, window_size=writable).to_json()).window_size
        == writable
    )


# Shape.window_ending_at --------------------------------------------------------------------------


def test_thirty_date_days_ending_october_19_start_september_20() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(days=30))
    assert shape.window_ending_at(date(2026, 10, 19)) == (date(2026, 9, 20), date(2026, 10, 19))


def test_a_one_day_date_window_is_that_day() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(days=1))
    assert shape.window_ending_at(date(2026, 10, 19)) == (date(2026, 10, 19), date(2026, 10, 19))


def test_date_widths_are_whole_days() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(days=1, hours=12))
    with pytest.raises(InvalidContract) as refused:
        shape.window_ending_at(date(2026, 10, 19))
    assert str(refused.value) == "Shape.window_size: a date window is a whole number of days"
    short = Shape.complete(window=True, window_size=timedelta(hours=23))
    with pytest.raises(InvalidContract, match="whole number of days"):
        short.window_ending_at(date(2026, 10, 19))


def test_a_rolling_window_needs_a_window_size_and_an_aware_until() -> None:
    with pytest.raises(InvalidContract) as refused:
        Shape.complete(window=True).window_ending_at(date(2026, 10, 19))
    assert str(refused.value) == "Shape.window_ending_at: the shape declares no window_size"
    shape = Shape.complete(window=True, window_size=timedelta(hours=1))
    with pytest.raises(InvalidContract) as refused:
        shape.window_ending_at(datetime(2026, 10, 19, 12, 0))
    assert str(refused.value) == (
        "Shape.window_ending_at: naive datetime 2026-10-19T12:00:00 carries no UTC offset"
    )


def test_datetime_widths_are_inclusive_at_microsecond_resolution() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(hours=1))
    until = datetime(2026, 10, 19, 12, 0, tzinfo=UTC)
    low, high = shape.window_ending_at(until)
    assert (low, high) == (datetime(2026, 10, 19, 11, 0, 0, 1, tzinfo=UTC), until)
    # Both ends included: the microseconds from low to high, inclusive, are exactly one hour.
    assert high - low + timedelta(microseconds=1) == timedelta(hours=1)


def test_a_one_microsecond_datetime_window_is_one_instant() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(microseconds=1))
    until = datetime(2026, 10, 19, 12, 0, tzinfo=UTC)
    assert shape.window_ending_at(until) == (until, until)


def test_datetime_windows_are_elapsed_utc_durations() -> None:
    # Across the autumn DST change in Rome, 24 elapsed hours are not one wall-clock day.
    from zoneinfo import ZoneInfo

    shape = Shape.complete(window=True, window_size=timedelta(hours=24))
    until = datetime(2026, 10, 25, 12, 0, tzinfo=ZoneInfo("Europe/Rome"))  # 11:00 UTC
    low, high = shape.window_ending_at(until)
    assert high == datetime(2026, 10, 25, 11, 0, tzinfo=UTC) and high.tzinfo is UTC
    assert low == datetime(2026, 10, 24, 11, 0, 0, 1, tzinfo=UTC)


def test_a_date_window_ends_on_until_itself() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(days=7))
    assert shape.window_ending_at(date(2026, 3, 1)) == (date(2026, 2, 23), date(2026, 3, 1))


def test_a_rolling_window_needs_a_window_size() -> None:
    with pytest.raises(InvalidContract, match="window_size"):
        Shape.complete(window=True).window_ending_at(date(2026, 10, 19))


def test_a_rolling_window_reaching_the_domain_start_stops_there() -> None:
    days = Shape.complete(window=True, window_size=timedelta(days=30))
    assert days.window_ending_at(date(1, 1, 10)) == (date.min, date(1, 1, 10))
    instants = Shape.complete(window=True, window_size=timedelta(hours=2))
    until = datetime(1, 1, 1, 1, 0, tzinfo=UTC)
    assert instants.window_ending_at(until) == (DATETIME_MIN, until)
    # Exactly reaching the start is not clamped: it is the start.
    exact = Shape.complete(window=True, window_size=timedelta(hours=1, microseconds=1))
    assert exact.window_ending_at(until) == (DATETIME_MIN, until)


def test_until_is_normalized_to_utc() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(minutes=30))
    until = datetime(2026, 10, 19, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert shape.window_ending_at(until)[1] == datetime(2026, 10, 19, 12, 0, tzinfo=UTC)


# 5: lookback -------------------------------------------------------------------------------------


def test_lookback_defaults_to_zero() -> None:
    assert Shape.changes().lookback == timedelta(0)


def test_lookback_is_nonnegative() -> None:
    with pytest.raises(InvalidContract, match="lookback"):
        Shape.changes(lookback=timedelta(seconds=-1))
    assert Shape.changes(lookback=timedelta(minutes=5)).lookback == timedelta(minutes=5)


def test_lookback_is_a_duration() -> None:
    with pytest.raises(InvalidContract) as refused:
        Shape.changes(lookback="PT5M")  # type: ignore[arg-type]
    assert str(refused.value) == "Shape.lookback: 'PT5M' must be a nonnegative duration"


def test_lookback_is_allowed_only_on_timestamp_shapes() -> None:
    for checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE):
        with pytest.raises(InvalidContract, match="timestamp"):
            Shape.changes(checkpoint=checkpoint, lookback=timedelta(minutes=5))
    with pytest.raises(InvalidContract) as refused:
        Shape(lookback=timedelta(minutes=5))
    assert str(refused.value) == "Shape.lookback: only timestamp shapes may look back"
    assert Shape.changes(window=True, lookback=timedelta(minutes=5)).lookback


def test_a_complete_read_proves_deletions_by_absence_and_says_so() -> None:
    for deletions in (Deletions.NONE, Deletions.TOMBSTONE):
        with pytest.raises(InvalidContract) as refused:
            Shape(checkpoint=Checkpoint.NONE, deletions=deletions)
        assert str(refused.value) == (
            "Shape: a complete read (checkpoint none) proves deletions by absence"
        )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"checkpoint": Checkpoint.TIMESTAMP, "deletions": Deletions.ABSENCE},
            "Shape: a changed-only read (timestamp checkpoint) has deletions none or tombstone",
        ),
        (
            {
                "coverage": Coverage.WINDOW,
                "checkpoint": Checkpoint.GENERATION,
                "deletions": Deletions.NONE,
            },
            "Shape: generations are positions in the whole table; no window shape uses them",
        ),
        (
            {"cost": 2**53 + 1},
            "Shape.cost: a 54-bit integer is not exact in binary64, so it could have no identity; "
            "send it as a string",
        ),
    ],
)
def test_a_shape_breaking_a_rule_is_refused_with_the_exact_rule(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidContract) as refused:
        Shape(**fields)  # type: ignore[arg-type]
    assert str(refused.value) == message
