"""SQLite's text ranges (sources/sqlite.text_ranges): a changes read looks its rows up in the
cursor column's index, and still delivers exactly the rows dogana_utc() puts in (since,
produced_at], however their writers spelled the instant."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dogana_core import Contract, Shape
from dogana_core.planner import ExtractionRequest
from dogana_provider.dialects import SQLITE
from dogana_provider.sources import Read, Relation, SqliteSnapshots, extract
from dogana_provider.sources.selection import Reading
from dogana_provider.sources.sqlite import normalized_datetime, text_ranges


def test_fromisoformat_reads_the_date_forms_the_ranges_know_and_no_other() -> None:
    """The ranges' premise: every text Python reads starts with a year and one of the forms
    YYYY-MM-DD, YYYYMMDD, YYYY-Www[-D], YYYYWww[D]. A Python that reads another fails here."""
    for text in ("2025-03-04", "20250304", "2025-W10", "2025-W10-2", "2025W10", "2025W102"):
        datetime.fromisoformat(text)
    for text in ("2025-063", "2025063", "2025-03", "202503", "2025", "+2025-03-04", "02025-03-04"):
        with pytest.raises(ValueError):
            datetime.fromisoformat(text)
    with pytest.raises(ValueError):
        datetime.fromisoformat("2025-03-04T10:00:00+24:00")  # offsets stay under a day


instants = st.datetimes(min_value=datetime(3, 1, 1), max_value=datetime(9997, 12, 31)).map(
    lambda moment: moment.replace(tzinfo=UTC)
)
zones = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def spelling(draw: Any, moment: datetime) -> str:
    """One of the ways a writer may spell an instant that fromisoformat reads back."""
    zone = draw(st.none() | zones)
    local = moment if zone is None else moment.astimezone(zone)
    form = draw(st.sampled_from(["extended", "basic", "week", "week basic"]))
    if form == "extended":
        day = local.date().isoformat()
    elif form == "basic":
        day = f"{local.year:04d}{local.month:02d}{local.day:02d}"  # %Y is not padded
    else:
        year, week, weekday = local.isocalendar()
        day = (
            f"{year:04d}-W{week:02d}-{weekday}"
            if form == "week"
            else f"{year:04d}W{week:02d}{weekday}"
        )
    clock = local.strftime("%H:%M:%S") + draw(st.sampled_from(["", local.strftime(".%f")]))
    text = day + draw(st.sampled_from(["T", " "])) + clock
    if zone is not None:
        offset = local.strftime("%z")  # +HHMM
        text += draw(st.sampled_from([offset[:3] + ":" + offset[3:], offset]))
    return text


@given(data=st.data(), moment=instants, before=st.integers(0, 10**6), after=st.integers(0, 10**6))
def test_every_spelling_of_an_instant_inside_the_bounds_is_inside_a_range(
    data: Any, moment: datetime, before: int, after: int
) -> None:
    low, high = moment - timedelta(seconds=before), moment + timedelta(seconds=after)
    text = data.draw(spelling(moment))
    assert normalized_datetime(text) == normalized_datetime(moment.replace(microsecond=0)) or (
        normalized_datetime(text) == normalized_datetime(moment)
    )
    ranges = text_ranges(low, high)
    assert ranges is not None
    assert any(start < text < end for start, end in ranges), (text, ranges)


def test_ranges_are_never_numbers_a_numeric_column_would_compare_as_numbers() -> None:
    ranges = text_ranges(datetime(2025, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC))
    assert ranges is not None
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE n (v NUMERIC)")  # NUMERIC affinity, as a comparison applies
    for bound in (b for pair in ranges for b in pair):
        connection.execute("INSERT INTO n VALUES (?)", (bound,))
    kinds = connection.execute("SELECT DISTINCT typeof(v) FROM n").fetchall()
    assert kinds == [("text",)]


def test_bounds_years_apart_keep_the_scan() -> None:
    assert text_ranges(datetime(2001, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)) is None


# A changes read -----------------------------------------------------------------------------------

CONTRACT = Contract(
    "events",
    ("id",),
    {"changes": Shape.changes(checkpoint="timestamp")},
    cursor_column="updated_at",
    types={"id": "int", "updated_at": "datetime"},
)
SINCE = datetime(2026, 3, 1, 12, tzinfo=UTC)


def source_with(tmp_path: Path, stamps: list[Any]) -> Path:
    path = tmp_path / "events.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, updated_at TIMESTAMP)")
    connection.execute("CREATE INDEX events_updated_at ON events (updated_at)")
    connection.executemany("INSERT INTO events VALUES (?, ?)", enumerate(stamps))
    connection.commit()
    connection.close()
    return path


def test_a_changes_read_delivers_exactly_the_rows_dogana_utc_puts_in_since_produced_at(
    tmp_path: Path,
) -> None:
    inside = SINCE + timedelta(minutes=1)
    stamps = [
        "2026-03-01 12:00:00",  # since itself: out
        "2026-03-01T12:00:00.000001Z",  # in
        "2026-03-02T11:59:30+23:59",  # in, its text a day after its UTC date
        "2026-02-28T14:00:00-23:00",  # in, its text a day before
        "20260301T130000+0100",  # basic form: since itself, out
        "20260301T130001+0100",  # in
        "2026-W09-7T13:00:00",  # Sunday 2026-03-01 13:00 UTC: in
        "2026W097T11:00:00",  # before since: out
        "2026-03-01 11:59:59.999999",  # out
        "2025-03-01 12:00:01",  # a year before: out
        (inside + timedelta(days=400)).isoformat(),  # after produced_at: out
    ]
    path = source_with(tmp_path, stamps)
    request = ExtractionRequest("events", "changes", inside, since=SINCE)
    source = SqliteSnapshots(lambda: sqlite3.connect(path))
    read = Read(CONTRACT, request, Relation(table="events"), tmp_path / "c.parquet")
    [done] = extract(source, [read])
    delivered = sorted(pq.read_table(done.path).column("id").to_pylist())
    produced = done.manifest.produced_at
    expected = [
        n
        for n, text in enumerate(stamps)
        if SQLITE.bind("datetime", SINCE)
        < normalized_datetime(text)  # type: ignore[operator]
        <= SQLITE.bind("datetime", produced)
    ]
    assert delivered == expected == [1, 2, 3, 5, 6]


def test_a_changes_read_looks_its_rows_up_in_the_cursor_index(tmp_path: Path) -> None:
    path = source_with(tmp_path, ["2026-03-01 12:30:00"])
    request = ExtractionRequest("events", "changes", SINCE + timedelta(hours=1), since=SINCE)
    reading = Reading(CONTRACT, request, Relation(table="events"), SQLITE, lambda n: f":{n}")
    produced = SINCE + timedelta(hours=2)
    connection = sqlite3.connect(path)
    connection.create_function("dogana_utc", 1, normalized_datetime, deterministic=True)
    plan = connection.execute(
        f"EXPLAIN QUERY PLAN {reading.rows(produced)}", reading.params(produced, None)
    ).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "INDEX events_updated_at (updated_at>? AND updated_at<?)" in details
    assert "SCAN events" not in details
