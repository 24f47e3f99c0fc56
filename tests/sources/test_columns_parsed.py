"""Values a driver returns as another Python type (SQLite's text datetimes and dates, 0/1
integers, REAL and INTEGER decimals) become the same Arrow column whether Arrow parses the batch
in C or the converters go value by value (columns.py), and a value neither can read is refused
naming its column, as before."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from functools import partial
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dogana_provider.dialects import SQLITE
from dogana_provider.sources.columns import (
    CONVERTERS,
    Columns,
    UnsupportedColumn,
    _decimal,
    _scaled_decimals,
    _spliced_decimals,
    arrow_type,
)


def value_by_value(kind: str, values: list[Any]) -> pa.Array:
    """Today's path: each value through its converter, then Arrow."""
    convert = CONVERTERS.get(kind, _decimal)
    return pa.array([None if v is None else convert(v) for v in values], type=arrow_type(kind))


def parsed(kind: str, values: list[Any]) -> pa.Array:
    """The batch as Columns converts it (Arrow's parse where it applies)."""
    columns = Columns(SQLITE, [("v", None)], [], {"v": kind}, {})
    return columns.batch([(v,) for v in values]).column(0)


offsets = st.sampled_from(["", "+00:00", "Z", "+02:00", "-05:30"])
instants = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))


def spelled(moment: datetime, offset: str, separator: str, digits: str) -> str:
    text = moment.isoformat(sep=separator, timespec=digits)
    return text + offset


texts = st.builds(
    spelled,
    instants,
    offsets,
    st.sampled_from([" ", "T"]),
    st.sampled_from(["seconds", "milliseconds", "microseconds"]),
)


def assert_datetimes_parse_as_converted(values: list[Any], given_: list[Any]) -> None:
    """given_ (values, or their bytes) parse as the converters read values, or both refuse."""
    try:
        expected = value_by_value("datetime", values)
    except (ValueError, OverflowError, pa.ArrowInvalid):
        with pytest.raises(UnsupportedColumn):
            parsed("datetime", given_)
        return
    assert parsed("datetime", given_).equals(expected)


@given(st.lists(texts | st.none(), max_size=20))
def test_text_datetimes_parse_as_the_converter_reads_them(values: list[Any]) -> None:
    assert_datetimes_parse_as_converted(values, values)


@given(st.lists(st.dates().map(date.isoformat) | st.none(), max_size=20))
def test_text_dates_parse_as_the_converter_reads_them(values: list[Any]) -> None:
    assert parsed("date", values).equals(value_by_value("date", values))


@given(st.lists(st.sampled_from([0, 1, None]), max_size=20))
def test_zero_one_integers_are_bools(values: list[Any]) -> None:
    assert parsed("bool", values).equals(value_by_value("bool", values))


@given(
    st.lists(
        st.decimals(min_value=-(10**9), max_value=10**9, places=2).map(float)
        | st.integers(-(10**9), 10**9)
        | st.none(),
        max_size=20,
    )
)
def test_real_and_integer_decimals_keep_their_digits(values: list[Any]) -> None:
    assert parsed("decimal(12,2)", values).equals(value_by_value("decimal(12,2)", values))


@given(
    st.sampled_from([(12, 2), (15, 4), (6, 0)]),
    st.lists(st.floats(min_value=-(10**11), max_value=10**11) | st.none(), max_size=20),
    st.lists(st.integers(-(10**11), 10**11), min_size=1, max_size=20),
)
def test_real_decimals_scaled_without_printing_are_the_printed_ones(
    kind: tuple[int, int], floats: list[float | None], units: list[int]
) -> None:
    """REALs are converted to a decimal column without printing each float where that is
    proven to give the decimals their printed digits spell (columns._scaled_decimals): any
    floats convert to the printed ones or are left to printing, and floats that are decimals
    of the column's scale (units / 10**scale) are converted so."""
    precision, scale = kind
    arrow = pa.decimal128(precision, scale)
    for values in (floats, [unit / 10**scale for unit in units if abs(unit) < 10**precision]):
        array = pa.array(values, pa.float64())
        scaled = _scaled_decimals(array, arrow)
        if scaled is None:
            assert values is floats or not values
            continue
        assert scaled.equals(array.cast(pa.string()).cast(arrow))


@given(
    st.sampled_from([(12, 2), (15, 4), (6, 0)]),
    st.lists(st.integers(-(10**11), 10**11) | st.none(), min_size=1, max_size=20),
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=20),
)
def test_real_decimals_after_arithmetic_convert_as_value_by_value(
    kind: tuple[int, int], units: list[int | None], added: list[int]
) -> None:
    """REALs some of which print more decimals than the column has (4095.28 + 1 is
    4096.280000000001, as an UPDATE leaves them) convert as the value-by-value path converts
    each (columns._decimal at the column's scale), the others without printing
    (columns._spliced_decimals), or are left to that path where it refuses one."""
    precision, scale = kind
    arrow = pa.decimal128(precision, scale)
    values = [
        None if unit is None else unit / 10**scale + added[i % len(added)]
        for i, unit in enumerate(units)
    ]
    convert = partial(_decimal, scale=scale)
    try:
        expected = pa.array([None if v is None else convert(v) for v in values], type=arrow)
    except (pa.ArrowInvalid, OverflowError):
        expected = None
    spliced = _spliced_decimals(pa.array(values, pa.float64()), arrow)
    if expected is None:
        assert spliced is None
    else:
        assert spliced is None or spliced.equals(expected)


def test_a_batch_of_reals_with_arithmetics_digits_is_not_converted_value_by_value() -> None:
    values = [4095.28 + 1, 1.25, None, 5.0]
    arrow = pa.decimal128(12, 2)
    spliced = _spliced_decimals(pa.array(values, pa.float64()), arrow)
    assert spliced is not None
    assert spliced.to_pylist() == [Decimal("4096.28"), Decimal("1.25"), None, Decimal("5.00")]
    assert parsed("decimal(12,2)", values).equals(spliced)


def test_a_value_neither_path_reads_is_refused_naming_the_column() -> None:
    with pytest.raises(UnsupportedColumn, match="column v: 'yesterday' is not a datetime"):
        parsed("datetime", ["2025-01-01 00:00:00", "yesterday"])
    with pytest.raises(UnsupportedColumn, match="column v: 2 is not a bool"):
        parsed("bool", [0, 1, 2])
    with pytest.raises(UnsupportedColumn, match="column v"):
        parsed("decimal(12,2)", [0.125])  # a third decimal place the column cannot hold


def test_mixed_offsets_read_as_utc_instants() -> None:
    values = ["2025-01-01 02:00:00+02:00", "2025-01-01 00:00:00"]
    expected = [datetime(2025, 1, 1, tzinfo=UTC)] * 2
    assert parsed("datetime", values).to_pylist() == expected


@given(st.lists(texts | st.none(), max_size=20))
def test_undecoded_datetime_text_parses_as_its_text(values: list[Any]) -> None:
    """MySQLdb hands DATETIME values over as bytes (mysql.py asks it to)."""
    assert_datetimes_parse_as_converted(values, [None if v is None else v.encode() for v in values])


def test_undecoded_dates_and_decimals_parse_as_their_text() -> None:
    assert parsed("date", [b"2025-01-31", None]).to_pylist() == [date(2025, 1, 31), None]
    assert parsed("decimal(12,2)", [b"1.25", b"-0.50"]).equals(
        value_by_value("decimal(12,2)", ["1.25", "-0.50"])
    )


@pytest.mark.parametrize("text", ["", "12,50", "twelve"])
def test_a_text_that_is_no_number_in_a_decimal_column_is_refused_naming_it(text: str) -> None:
    columns = Columns(SQLITE, [("amount", None)], [], {"amount": "decimal(12,2)"}, {})
    with pytest.raises(UnsupportedColumn, match=f"column amount: '{text}' is not a decimal"):
        columns.batch([("1.25",), (text,)])
