"""bench/pipeline.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, on the three databases, without dlt and
dag.test() (--quick: they need a virtual environment and a migrated Airflow), and checks only that
every variant ran and moved the source's rows: never a time, which a test cannot hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres, pytest.mark.mariadb, pytest.mark.airflow]


def test_pipeline_bench_runs_every_variant_and_verifies_the_rows(
    postgres_url: str, mariadb_url: str
) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pipeline.py"), "--rows", "2000", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    tables = done.stdout.split("\n\n")
    for database in ("postgresql", "sqlite", "mysql"):
        table = next(t for t in tables if t.startswith(f"{database}, 2,000 rows"))
        for variant in ("floor", "dogana", "GenericTransfer"):
            row = next(line for line in table.splitlines() if line.startswith(f"{variant} "))
            assert row.endswith("same as source"), table
        assert "dogana execute() by step: plan" in table, table
        assert "dogana changes delivery of" in table, table
    assert "DIFFERENT" not in done.stdout and "FAILED" not in done.stdout, output
    assert "targets:" in done.stdout, output
