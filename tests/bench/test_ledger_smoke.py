"""bench/ledger.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, and checks that every part ran and that
the history it builds quickly is one the receiver verifies: never a time, which a test cannot
hold.
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres]


def bench_tables(postgres_url: str) -> set[str]:
    """The tables named like a bench store's (bl<uid>_...) in the database."""
    import psycopg2

    connection = psycopg2.connect(postgres_url)
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'bl%\\_%'")
        return {name for (name,) in cursor.fetchall()}
    finally:
        connection.close()


def test_ledger_bench_runs_every_part_and_its_history_verifies(postgres_url: str) -> None:
    before = bench_tables(postgres_url)
    output = run_bench("ledger.py", "--deliveries", "200", "--verify", "--postgres", postgres_url)
    assert bench_tables(postgres_url) <= before, "the bench drops every table its store made"
    assert "apply at 200 deliveries" in output, output
    assert "claims over the whole table, first asked" in output, output
    for database in ("SQLite", "PostgreSQL"):
        assert f"{database}: 200 publications stored" in output, output
    assert output.count("whole-table claims of the ledger a state read gives") == 2, output
    for where in ("in one process", "each step in a new process"):
        assert output.count(f"more, {where} (the least of 5 each)") == 2, output
    assert output.count("the 201th delivery costs") == 4, output
    assert output.count("verified: the stored ledger is the fold of its 210 receipts") == 2
