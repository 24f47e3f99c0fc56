"""The compiled row decoder (binlog_rows.RowDecoder) gives the library's own values for the same
events of a real binlog, type family by type family; a table with a type it does not decode is
decoded by the library, and still the same. Values are compared by repr: a Decimal's scale, a
float's sign of zero and a datetime's microseconds count, not only equality."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest
from cdc_pipeline import MariaTable

from dogana_provider.connectors import MariadbBinlogConnector
from dogana_provider.connectors.binlog_rows import RowImages, library_images
from dogana_provider.connectors.mariadb_binlog import BinlogPosition, binlog_reader

pytestmark = pytest.mark.mariadb

Decode = Callable[[Any], list[tuple[Any, ...]]]


def head(source: MariaTable) -> tuple[str, BinlogPosition]:
    """The binlog's current file and end position."""
    file, offset, *_ = source.execute("SHOW MASTER STATUS").fetchone()
    return str(file), BinlogPosition.of_file(file, int(offset))


def events_decoded(
    source: MariaTable, since: BinlogPosition, decode: Decode
) -> list[tuple[str, list[tuple[str, ...]]]]:
    """The table's rows events after since, each (its kind, its images' values by repr), the
    table maps completed from the catalog as the connector's read completes them."""
    from pymysqlreplication.row_event import (
        DeleteRowsEvent,
        TableMapEvent,
        UpdateRowsEvent,
        WriteRowsEvent,
    )

    file, end = head(source)
    connector = MariadbBinlogConnector({"conn_id": source.conn_id, "table": source.table})
    found = []
    with connector:
        connector.connect()
        session = connector.session()
        try:
            catalog = connector.catalog(session)
            (stream,) = connector.discover()
        finally:
            session.close()
        reading: Any = connector.log_reading(stream, since, limit=None, end=end)
        reader = binlog_reader(
            connector.settings(),
            None,
            log_file=since.file(file),
            log_pos=since.offset,
            only_events=[TableMapEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
            only_tables=[source.table],
        )
        try:
            for event in reader:
                if BinlogPosition.of_file(reader.log_file, event.packet.log_pos).as_int() > (
                    end.as_int()
                ):
                    break
                if isinstance(event, TableMapEvent):
                    reading._same_columns(event, catalog)
                    continue
                images = decode(event)
                found.append((type(event).__name__, [tuple(map(repr, i)) for i in images]))
        finally:
            reader.close()
    return found


def assert_compiled_equals_library(
    source: MariaTable, columns: str, rows: list[tuple[Any, ...]], *, compiled: bool = True
) -> None:
    """Rows written, each updated, one deleted, and the events decoded both ways: the same
    images, and the decoder compiled (or not) for the table as expected."""
    source.execute(f"DROP TABLE IF EXISTS `{source.table}`")
    source.execute(f"CREATE TABLE `{source.table}` (id BIGINT PRIMARY KEY, {columns})")
    _, since = head(source)
    marks = ", ".join(["%s"] * len(rows[0]))
    for row in rows:
        source.execute(f"INSERT INTO `{source.table}` VALUES ({marks})", row)
    source.execute(f"UPDATE `{source.table}` SET id = id + 1000")  # one event, every row
    later = list(reversed(rows))  # each row's values on another row: every column changes
    names = [r[0] for r in source.execute(f"SHOW COLUMNS FROM `{source.table}`").fetchall()]
    assignments = ", ".join(f"`{n}` = %s" for n in names[1:])
    for row, other in zip(rows, later, strict=True):
        source.execute(
            f"UPDATE `{source.table}` SET {assignments} WHERE id = %s", (*other[1:], row[0] + 1000)
        )
    source.execute(f"DELETE FROM `{source.table}` WHERE id = %s", (rows[0][0] + 1000,))
    source.execute(f"DELETE FROM `{source.table}`")

    images = RowImages()
    decoders = []

    def compiled_decode(event: Any) -> list[tuple[Any, ...]]:
        decoders.append(images.decoder(event))
        return images.of(event)

    by_library = events_decoded(source, since, library_images)
    by_decoder = events_decoded(source, since, compiled_decode)
    kinds = {kind for kind, _ in by_library}
    assert kinds == {"WriteRowsEvent", "UpdateRowsEvent", "DeleteRowsEvent"}
    assert by_decoder == by_library
    assert decoders and all((d is not None) == compiled for d in decoders)


def test_integers_signed_and_unsigned_decode_as_the_library_does(
    binlog_source: MariaTable,
) -> None:
    columns = (
        "a TINYINT, b TINYINT UNSIGNED, c SMALLINT, d SMALLINT UNSIGNED, e MEDIUMINT, "
        "f MEDIUMINT UNSIGNED, g INT, h INT UNSIGNED, i BIGINT, j BIGINT UNSIGNED, k BOOLEAN"
    )
    extremes = [
        (1, -128, 0, -32768, 0, -(2**23), 0, -(2**31), 0, -(2**63), 0, 0),
        (
            2,
            127,
            255,
            32767,
            65535,
            2**23 - 1,
            2**24 - 1,
            2**31 - 1,
            2**32 - 1,
            2**63 - 1,
            2**64 - 1,
            1,
        ),
        (3, None, None, None, None, None, None, None, None, None, None, None),
        (4, -1, 1, -1, 1, -1, 1, -1, 1, -(2**53) - 1, 2**63, None),
    ]
    draw = random.Random(4)
    drawn = [
        (id_, *(draw.choice([None, draw.randint(-100, 100) % 100]) for _ in range(11)))
        for id_ in range(5, 25)
    ]
    assert_compiled_equals_library(binlog_source, columns, extremes + drawn)


def test_decimals_decode_exactly_as_the_library_does(binlog_source: MariaTable) -> None:
    columns = (
        "a DECIMAL(20,6), b DECIMAL(10,0), c DECIMAL(5,5), d DECIMAL(65,30), e DECIMAL(12,2), "
        "f DECIMAL(9,9), g DECIMAL(18,9) UNSIGNED"
    )
    rows = [
        (
            1,
            Decimal("-99999999999999.999999"),
            Decimal("9999999999"),
            Decimal("0.99999"),
            Decimal("-" + "9" * 35 + "." + "9" * 30),
            Decimal("-0.01"),
            Decimal("-0.5"),
            Decimal("123456789.123456789"),
        ),
        (
            2,
            Decimal("0"),
            Decimal("-1"),
            Decimal("-0.00001"),
            Decimal("0.000000000001"),
            Decimal("1.10"),
            Decimal("0.000000001"),
            Decimal("0"),
        ),
        (3, None, None, None, None, None, None, None),
    ]
    draw = random.Random(6)
    for id_ in range(4, 24):
        rows.append(
            (
                id_,
                Decimal(draw.randint(-(10**20) + 1, 10**20 - 1)).scaleb(-6),
                Decimal(draw.randint(-(10**10) + 1, 10**10 - 1)),
                Decimal(draw.randint(-(10**5) + 1, 10**5 - 1)).scaleb(-5),
                Decimal(draw.randint(-(10**40), 10**40)).scaleb(-30),
                Decimal(draw.randint(-(10**12) + 1, 10**12 - 1)).scaleb(-2),
                Decimal(draw.randint(-(10**9) + 1, 10**9 - 1)).scaleb(-9),
                Decimal(draw.randint(0, 10**18 - 1)).scaleb(-9),
            )
        )
    assert_compiled_equals_library(binlog_source, columns, rows)


def test_floats_and_doubles_decode_as_the_library_does(binlog_source: MariaTable) -> None:
    rows = [
        (1, -0.0, -0.0),
        (2, 3.4e38, 1.7976931348623157e308),
        (3, 1.17549e-38, 5e-324),
        (4, None, None),
        (5, 0.1, 0.1),
    ]
    draw = random.Random(8)
    rows += [(i, draw.uniform(-1e6, 1e6), draw.uniform(-1e300, 1e300)) for i in range(6, 26)]
    assert_compiled_equals_library(binlog_source, "a FLOAT, b DOUBLE", rows)


def test_strings_texts_blobs_and_json_decode_as_the_library_does(
    binlog_source: MariaTable,
) -> None:
    columns = (
        "a CHAR(10), b VARCHAR(20), c VARCHAR(300), d TINYTEXT, e TEXT, f MEDIUMTEXT, "
        "g LONGTEXT, h BLOB, i JSON, j CHAR(255) CHARACTER SET ascii, k VARBINARY(40)"
    )
    text = "ünï 😀 \\ '\""
    rows = [
        (1, "", "", "", "", "", "", "", b"", "{}", "", b""),
        (2, None, None, None, None, None, None, None, None, None, None, None),
        (
            3,
            "ab  ",
            text,
            text * 20,
            text,
            text * 300,
            text * 2000,
            text * 5000,
            text.encode(),
            '{"a": [1, 2.5, "ü"], "b": null}',
            "x" * 255,
            text.encode(),
        ),
    ]
    draw = random.Random(10)
    for id_ in range(4, 20):
        word = "".join(draw.choice("aé€😀 z") for _ in range(draw.randint(0, 8)))
        rows.append(
            (id_, word, word, word * 30, word, word, word, word, word.encode(), "[]", "x", b"")
        )
    assert_compiled_equals_library(binlog_source, columns, rows)


def test_dates_datetimes_and_timestamps_decode_as_the_library_does(
    binlog_source: MariaTable,
) -> None:
    precisions = range(7)
    columns = ", ".join(
        ["d DATE"]
        + [f"t{p} DATETIME({p})" for p in precisions]
        + [f"s{p} TIMESTAMP({p}) NULL" for p in precisions]
    )

    def row(id_: int, day: date | None, moment: datetime | None) -> tuple[Any, ...]:
        def at(p: int) -> datetime | None:
            if moment is None:
                return None
            return moment.replace(microsecond=moment.microsecond // 10 ** (6 - p) * 10 ** (6 - p))

        stamps = [at(p) if moment and 1971 <= moment.year <= 2037 else None for p in precisions]
        return (id_, day, *(at(p) for p in precisions), *stamps)

    rows = [
        row(1, date(1000, 1, 1), datetime(1000, 1, 1, 0, 0, 0)),
        row(2, date(9999, 12, 31), datetime(9999, 12, 31, 23, 59, 59, 999999)),
        row(3, None, None),
        row(4, date(2026, 3, 29), datetime(2026, 3, 29, 0, 59, 59, 999_999)),
        row(5, date(2000, 2, 29), datetime(2000, 2, 29, 12, 0, 0, 100_000)),
        row(6, date(1970, 1, 1), datetime(2038, 1, 19, 3, 14, 7, 1)),
    ]
    draw = random.Random(12)
    for id_ in range(7, 27):
        moment = datetime(1971, 1, 1) + (datetime(2037, 1, 1) - datetime(1971, 1, 1)) * (
            draw.random()
        )
        rows.append(row(id_, moment.date(), moment))
    assert_compiled_equals_library(binlog_source, columns, rows)


def test_enums_decode_to_their_members_as_the_library_does(binlog_source: MariaTable) -> None:
    many = ", ".join(f"'m{i}'" for i in range(300))  # past 255 members: two bytes an index
    columns = f"a ENUM('a', 'it''s', 'ü'), b ENUM({many})"
    rows = [(1, "a", "m0"), (2, "it's", "m299"), (3, "ü", "m255"), (4, None, None)]
    rows += [(i, ("a", "it's", "ü")[i % 3], f"m{i * 7 % 300}") for i in range(5, 25)]
    assert_compiled_equals_library(binlog_source, columns, rows)


def test_null_bitmaps_across_many_columns_decode_as_the_library_does(
    binlog_source: MariaTable,
) -> None:
    width = 19  # three bytes of NULL bitmap
    kinds = ["INT", "VARCHAR(10)", "DECIMAL(8,3)", "DATETIME(3)"]
    columns = ", ".join(f"c{i} {kinds[i % len(kinds)]}" for i in range(width))
    values = [7, "x", Decimal("1.500"), datetime(2020, 1, 2, 3, 4, 5, 6000)]
    draw = random.Random(14)
    rows = [
        (id_, *(None if draw.random() < 0.4 else values[i % len(values)] for i in range(width)))
        for id_ in range(1, 41)
    ]
    assert_compiled_equals_library(binlog_source, columns, rows)


def test_a_table_with_a_type_it_does_not_decode_is_decoded_by_the_library(
    binlog_source: MariaTable,
) -> None:
    columns = "a INT, t TIME(3), s SET('x', 'y', 'z'), y YEAR, v VARCHAR(5)"
    rows = [
        (1, 1, "-838:59:59.000", "x,z", 2024, "é"),
        (2, None, None, None, None, None),
        (3, -3, "12:34:56.789", "y", 1999, ""),
    ]
    assert_compiled_equals_library(binlog_source, columns, rows, compiled=False)


def test_an_event_without_whole_rows_is_decoded_by_the_library(binlog_source: MariaTable) -> None:
    # A session may log partial images whatever the server's setting: those events, and only
    # those, are the library's to decode (the table's decoder is compiled all the same).
    binlog_source.execute("SET SESSION binlog_row_image = 'MINIMAL'")
    columns = "a INT, v VARCHAR(5), n DECIMAL(6,2)"
    rows = [(1, 1, "é", Decimal("1.50")), (2, None, None, None), (3, -3, "", Decimal("-2.25"))]
    assert_compiled_equals_library(binlog_source, columns, rows)
