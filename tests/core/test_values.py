"""Contract and shapes, "Domains"; Trust model 4.

Key and window values are strings, integers, dates or UTC datetimes. Aware datetimes are
normalized to UTC before equality or arithmetic, DST folds included. Strings use code-point
order, without Unicode normalization or collation; the successor of s is s + "\\x00" and the
minimum "". Date and datetime domains end at the smallest and largest values Python represents.
A datetime, in a read or a manifest, carries its UTC offset or is refused.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dogana_core import Contract, InvalidContract, LogicalType, Manifest, SerializationError, Shape
from dogana_core.values import (
    DATETIME_MAX,
    DATETIME_MIN,
    check_scalar,
    exact_integer,
    is_domain_minimum,
    successor,
    type_of,
    utc,
)

ROME = ZoneInfo("Europe/Rome")
# 2026-10-25 02:30 happens twice in Rome: first in CEST (+02:00), then in CET (+01:00).
FIRST_0230 = datetime(2026, 10, 25, 2, 30, tzinfo=ROME, fold=0)
SECOND_0230 = datetime(2026, 10, 25, 2, 30, tzinfo=ROME, fold=1)


def str_contract() -> Contract:
    return Contract(
        "items",
        ("code",),
        {"part": Shape.complete(window=True)},
        window_column="code",
        types={"code": "str"},
    )


# The four ordered domains ------------------------------------------------------------------------


def test_keys_and_windows_take_the_four_ordered_types() -> None:
    assert type_of(7) is LogicalType.INT
    assert type_of("a") is LogicalType.STR
    assert type_of(date(2026, 10, 18)) is LogicalType.DATE
    assert type_of(datetime(2026, 10, 18, tzinfo=UTC)) is LogicalType.DATETIME
    with pytest.raises(InvalidContract):
        Contract("t", ("k",), {"full": Shape()}, types={"k": "float"})
    with pytest.raises(InvalidContract):
        Contract("t", ("k",), {"full": Shape()}, types={"k": "bool"})


def test_a_value_of_none_of_the_six_types_or_a_bad_string_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidContract) as refused:
        check_scalar(b"x", LogicalType.STR, "key")
    assert str(refused.value) == "key: bytes is not one of the six logical types"
    with pytest.raises(InvalidContract) as refused:
        check_scalar("a\ud800", LogicalType.STR, "key")
    assert str(refused.value) == "key: string holds a lone surrogate"


def test_a_bool_is_not_an_integer_and_a_datetime_is_not_a_date() -> None:
    assert type_of(True) is LogicalType.BOOL
    assert type_of(datetime(2026, 1, 1, tzinfo=UTC)) is LogicalType.DATETIME
    with pytest.raises(InvalidContract):
        check_scalar(True, LogicalType.INT, "key")
    with pytest.raises(InvalidContract):
        check_scalar(datetime(2026, 1, 1, tzinfo=UTC), LogicalType.DATE, "window")
    with pytest.raises(InvalidContract):
        check_scalar(date(2026, 1, 1), LogicalType.DATETIME, "window")


def test_values_outside_the_six_logical_types_are_refused() -> None:
    with pytest.raises(InvalidContract):
        type_of(b"bytes")
    with pytest.raises(InvalidContract):
        check_scalar(None, LogicalType.INT, "key")


# Strings: code-point order, no normalisation ------------------------------------------------------


def test_strings_order_by_code_point_not_by_utf16_units() -> None:
    # U+FFFF is below U+10000 by code point; in UTF-16 the surrogate pair D800 DC00 sorts first.
    manifest = Manifest(
        "items", "part", datetime(2026, 1, 1, tzinfo=UTC), window=("\uffff", "\U00010000")
    )
    manifest.check(str_contract())
    backwards = manifest.replace(window=("\U00010000", "\uffff"))
    with pytest.raises(InvalidContract, match="after"):
        backwards.check(str_contract())


def test_strings_are_not_unicode_normalized() -> None:
    composed, decomposed = "\u00e9", "e\u0301"
    assert unicodedata.normalize("NFC", decomposed) == composed
    first = Manifest("items", "part", datetime(2026, 1, 1, tzinfo=UTC), window=(composed, composed))
    second = first.replace(window=(decomposed, decomposed))
    assert first.window != second.window
    assert first.identity != second.identity
    # "e" + combining accent sorts before "é" by code point, so this window runs backwards.
    with pytest.raises(InvalidContract):
        first.replace(window=(composed, decomposed)).check(str_contract())
    first.replace(window=(decomposed, composed)).check(str_contract())


def test_strings_are_not_collated() -> None:
    # Collation would put "a" before "B"; code points put every capital first.
    Manifest("items", "part", datetime(2026, 1, 1, tzinfo=UTC), window=("B", "a")).check(
        str_contract()
    )
    with pytest.raises(InvalidContract):
        Manifest("items", "part", datetime(2026, 1, 1, tzinfo=UTC), window=("a", "B")).check(
            str_contract()
        )


def test_the_successor_of_a_string_is_s_plus_nul() -> None:
    assert successor("abc") == "abc\x00"
    assert successor("") == "\x00"


@given(st.text(), st.text())
def test_nothing_lies_between_a_string_and_its_successor(s: str, other: str) -> None:
    following = successor(s)
    assert isinstance(following, str)
    assert s < following
    assert not (s < other < following)


def test_the_minimum_string_is_empty() -> None:
    assert is_domain_minimum("")
    assert not is_domain_minimum("\x00")


def test_integers_have_no_ends() -> None:
    assert successor(2**80) == 2**80 + 1
    assert successor(-1) == 0
    assert not is_domain_minimum(-(2**80))


def test_integers_are_exact_binary64_values() -> None:
    for exact in (0, 2**53 - 1, 2**53, -(2**53), 2**60, -(2**60), 2**1023):
        assert exact_integer(exact, "n") == exact
    for inexact in (2**53 + 1, -(2**53 + 1), 2**60 + 1, 2**1024, 10**5000):
        with pytest.raises(InvalidContract, match="not exact in binary64"):
            exact_integer(inexact, "n")


def test_bool_is_not_an_ordered_domain() -> None:
    with pytest.raises(InvalidContract) as refused:
        successor(True)
    assert str(refused.value) == "bool is not an ordered domain"


# Dates and datetimes: successor and the ends of the domains --------------------------------------


def test_the_successor_of_a_date_is_the_next_day() -> None:
    assert successor(date(2026, 12, 31)) == date(2027, 1, 1)
    assert successor(date(2028, 2, 28)) == date(2028, 2, 29)


def test_the_successor_of_a_datetime_is_the_next_microsecond() -> None:
    assert successor(datetime(2026, 1, 1, 23, 59, 59, 999999, tzinfo=UTC)) == datetime(
        2026, 1, 2, tzinfo=UTC
    )


def test_the_date_domain_ends_at_pythons_smallest_and_largest_dates() -> None:
    assert successor(date.max) is None
    assert is_domain_minimum(date.min)
    assert not is_domain_minimum(date.min + timedelta(days=1))


def test_the_datetime_domain_ends_at_pythons_smallest_and_largest_datetimes_in_utc() -> None:
    assert datetime(1, 1, 1, tzinfo=UTC) == DATETIME_MIN
    assert datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) == DATETIME_MAX
    assert successor(DATETIME_MAX) is None
    assert successor(DATETIME_MAX - timedelta(microseconds=1)) == DATETIME_MAX
    assert is_domain_minimum(DATETIME_MIN)
    assert not is_domain_minimum(DATETIME_MIN + timedelta(microseconds=1))


def test_an_instant_beyond_the_domain_in_utc_is_refused() -> None:
    # 0001-01-01 00:30 at +01:00 is 0000-12-31 23:30 UTC, which Python cannot represent.
    before_the_start = datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    with pytest.raises(InvalidContract, match="UTC range"):
        utc(before_the_start)


# UTC normalisation -------------------------------------------------------------------------------


def test_a_naive_datetime_or_a_non_datetime_is_refused_naming_the_field() -> None:
    """Trust model 4: an instant carries its offset; the message names the field, "datetime"
    when the caller names none."""
    with pytest.raises(InvalidContract) as refused:
        utc(datetime(2026, 10, 18))
    assert (
        str(refused.value) == "datetime: naive datetime 2026-10-18T00:00:00 carries no UTC offset"
    )
    with pytest.raises(InvalidContract) as refused:
        utc("2026", "at")  # type: ignore[arg-type]
    assert str(refused.value) == "at: expected a datetime, got str"


def test_aware_datetimes_are_normalized_to_utc() -> None:
    local = datetime(2026, 10, 18, 2, 0, tzinfo=timezone(timedelta(hours=2)))
    normalized = utc(local)
    assert normalized.tzinfo is UTC
    assert normalized == datetime(2026, 10, 18, 0, 0, tzinfo=UTC)
    assert (normalized.hour, normalized.utcoffset()) == (0, timedelta(0))


def test_a_dst_fold_gives_two_instants() -> None:
    # Python compares datetimes sharing a tzinfo by wall clock, so it calls these two equal...
    assert FIRST_0230 == SECOND_0230
    # ...but they are an hour apart, and UTC normalisation keeps them apart.
    assert utc(FIRST_0230) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert utc(SECOND_0230) == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)


def test_a_dst_fold_gives_two_manifests() -> None:
    first = Manifest("items", "full", FIRST_0230)
    second = Manifest("items", "full", SECOND_0230)
    assert first.produced_at == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert second.produced_at == datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    assert first != second
    assert first.identity != second.identity
    assert first.to_json() != second.to_json()


def test_equal_instants_in_different_offsets_are_one_value() -> None:
    in_rome = datetime(2026, 7, 1, 14, 0, tzinfo=ROME)
    in_utc = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    at_minus_five = datetime(2026, 7, 1, 7, 0, tzinfo=timezone(timedelta(hours=-5)))
    manifests = [Manifest("items", "full", moment) for moment in (in_rome, in_utc, at_minus_five)]
    assert len({m.to_json() for m in manifests}) == 1
    assert len({m.identity for m in manifests}) == 1


# Naive datetimes are refused everywhere they can appear -------------------------------------------

NAIVE = datetime(2026, 10, 18, 12, 0)


def test_a_naive_datetime_is_refused_by_utc() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        utc(NAIVE)


def test_a_naive_datetime_is_refused_as_a_scalar() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        check_scalar(NAIVE, LogicalType.DATETIME, "window")


def test_a_naive_produced_at_is_refused() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        Manifest("items", "full", NAIVE)


def test_a_naive_window_bound_is_refused() -> None:
    aware = datetime(2026, 10, 18, tzinfo=UTC)
    with pytest.raises(InvalidContract, match="naive"):
        Manifest("items", "part", aware, window=(NAIVE, aware))
    with pytest.raises(InvalidContract, match="naive"):
        Manifest("items", "part", aware, window=(aware, NAIVE))


def test_a_naive_since_is_refused() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        Manifest("items", "changes", datetime(2026, 10, 18, tzinfo=UTC), since=NAIVE)


def test_a_naive_start_at_is_refused() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        Contract("events", (), {"append": Shape.changes()}, start_at=NAIVE)


def test_a_naive_until_is_refused_by_window_ending_at() -> None:
    shape = Shape.complete(window=True, window_size=timedelta(hours=1))
    with pytest.raises(InvalidContract, match="naive"):
        shape.window_ending_at(NAIVE)


def test_a_tzinfo_without_an_offset_counts_as_naive() -> None:
    class NoOffset(tzinfo):
        def utcoffset(self, dt: datetime | None) -> None:
            return None

    with pytest.raises(InvalidContract, match="naive"):
        utc(datetime(2026, 1, 1, tzinfo=NoOffset()))


def test_a_naive_datetime_on_the_wire_is_refused() -> None:
    wire = Manifest("items", "full", datetime(2026, 10, 18, tzinfo=UTC)).to_dict()
    wire["produced_at"] = {"$datetime": "2026-10-18T00:00:00"}
    with pytest.raises(SerializationError, match="naive"):
        Manifest.from_dict(wire)
