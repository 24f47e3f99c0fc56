"""bench/changes.py at small sizes, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, on SQLite at two sizes (the servers' runs
differ only in each database's statements, which bench/pipeline.py's smoke test keeps running),
and checks only that both appliers ran every round and left the source's live rows, deletes
included, and that the 10-row delivery was counted: never a time, which a test cannot hold.
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.airflow]


def test_changes_bench_applies_the_same_updates_and_deletes_both_ways_at_two_sizes() -> None:
    printed = run_bench("changes.py", "--rows", "2000", "4000", "--databases", "sqlite")
    for rows in ("2,000", "4,000"):
        line = next(
            line for line in printed.splitlines() if line.startswith(f"sqlite, {rows} rows (")
        )
        assert "floor same as the source dogana same as the source" in line, printed
    assert printed.count("x the floor") == 2, printed
    assert printed.count("a 10-row changes delivery: ") == 4, printed
    assert " statements on " in printed and " connections" in printed, printed
    assert "sqlite changes from 2,000 to 4,000 rows: dogana " in printed, printed
    assert "FAILED" not in printed and "DIFFERENT" not in printed, printed
