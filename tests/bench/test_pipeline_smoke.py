"""bench/pipeline.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, on the three databases, without dlt and
dag.test() (--quick: they need a virtual environment and a migrated Airflow), each kind of
changes delivery once (--change-rounds 1: the rounds are for the median, which this test does not
read), and checks only that every variant ran and moved the source's rows: never a time, which a
test cannot hold.
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres, pytest.mark.mariadb, pytest.mark.airflow]


def test_pipeline_bench_runs_every_variant_and_verifies_the_rows(
    postgres_url: str, mariadb_url: str
) -> None:
    printed = run_bench("pipeline.py", "--rows", "2000", "--quick", "--change-rounds", "1")
    tables = printed.split("\n\n")
    for database in ("postgresql", "sqlite", "mysql"):
        table = next(t for t in tables if t.startswith(f"{database}, 2,000 rows"))
        for variant in ("floor", "dogana", "GenericTransfer"):
            row = next(line for line in table.splitlines() if line.startswith(f"{variant} "))
            assert row.endswith("same as source"), table
        assert "dogana execute() by step: plan" in table, table
        assert "dogana changes delivery of" in table, table
        assert "floor's changes, " in table, table
        assert "a 10-row changes delivery: " in table and " statements on " in table, table
    assert "DIFFERENT" not in printed and "FAILED" not in printed, printed
    assert "targets:" in printed, printed
