"""bench/batch_execute.py as a user runs it: one DeliverOperator over a batch of the bench's
tables, PostgreSQL to PostgreSQL, every delivery succeeding in each run. It checks that the
bench runs and its deliveries succeed, never a time; the figures are the bench's own run
(docs/performance.md)."""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def test_a_batch_of_tables_delivers_in_one_operators_execute(postgres_url: str) -> None:
    printed = run_bench("batch_execute.py", "--tables", "2", "--rows", "5", "--runs", "2")
    lines = printed.splitlines()
    assert [line.split(":")[1].split(",")[0].strip() for line in lines[:2]] == ["success"] * 2
    assert lines[-1].startswith("2 tables of 5 rows, median of 2:")
