"""bench/pipeline.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process and its own AIRFLOW_HOME, and checks only
that both variants ran and moved the source's rows: never a time, which a test cannot hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def test_pipeline_bench_runs_both_variants_and_verifies_the_rows(postgres_url: str) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pipeline.py"), "--rows", "2000"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]

    def row(name: str) -> str:
        """The table's row for name: the name, padded to the first column's width."""
        return next(line for line in done.stdout.splitlines() if line.startswith(f"{name:<17} "))

    for variant in ("dogana", "GenericTransfer"):
        assert " success " in row(variant), output
        assert "same as source" in row(variant), output
    assert "count 2,000" in row("source"), output
    assert "GenericTransfer / dogana: time" in done.stdout, output
    assert "DIFFERENT" not in done.stdout, output
