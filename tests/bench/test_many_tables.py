"""A big source through the contract-file path, run by bench/many_tables.py as a user runs it.

A hundred tables of one PostgreSQL source, one ODCS contract file each, loaded into a PostgreSQL
receiver in ONE DAG run (dag.test()): a delivery mapped over contracts_in_folder, each instance
publishing its own table and emitting its own table's Asset event; then the folder parsed as one
DAG per file; and ten tables before them, for the ratio line. The bench fails when a table is
not delivered, not with its own event, or not parsed; this test checks that it succeeds, never
a time. Measured on the 2-core machine: 100 tables in 65 s of dag.test() when it was quiet,
246 s when eight other test suites shared it; the whole test about 100 s in CI, alone.
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def test_a_hundred_tables_load_in_one_dag_run_through_contract_files(postgres_url: str) -> None:
    printed = run_bench("many_tables.py", "--tables", "10", "100", timeout=1200)
    lines = printed.splitlines()
    assert [line.split()[0] for line in lines if line[:6].strip().isdigit()] == ["10", "100"]
    assert "FAILED" not in printed
    assert lines[-2] == "ratio 100 tables / 10 tables (flat is 1.00):"
