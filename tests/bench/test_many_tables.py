"""A big source through the contract-file path, run by bench/many_tables.py as a user runs it.

The bench's tables of one PostgreSQL source, one ODCS contract file each, loaded into a
PostgreSQL receiver in ONE DAG run (dag.test()): a delivery mapped over contracts_in_folder,
each instance publishing its own table and emitting its own table's Asset event; then the folder
parsed as one DAG per file; at two counts, for the ratio line. The bench fails when a table is
not delivered, not with its own event, or not parsed; this test checks that it succeeds, never a
time. It runs the bench at 2 and 12 tables: twelve map indexes reach two digits, where an order
by text would put 10 before 2; the figures at 100 tables are the bench's own run
(docs/performance.md).
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def test_every_table_of_a_folder_loads_in_one_dag_run_through_contract_files(
    postgres_url: str,
) -> None:
    printed = run_bench("many_tables.py", "--tables", "2", "12", timeout=1200)
    lines = printed.splitlines()
    assert [line.split()[0] for line in lines if line[:6].strip().isdigit()] == ["2", "12"]
    assert "FAILED" not in printed
    assert lines[-2] == "ratio 12 tables / 2 tables (flat is 1.00):"
