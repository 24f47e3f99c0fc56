"""bench/ledger.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, and checks that every part ran and that
the history it builds quickly is one the receiver verifies: never a time, which a test cannot
hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres]


def test_ledger_bench_runs_every_part_and_its_history_verifies(postgres_url: str) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    command = ["bench/ledger.py", "--deliveries", "200", "--verify", "--postgres", postgres_url]
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "apply at 200 deliveries" in done.stdout, output
    assert "claims over the whole table, first asked" in done.stdout, output
    for database in ("SQLite", "PostgreSQL"):
        assert f"{database}: 200 publications stored" in done.stdout, output
    assert done.stdout.count("the 201th delivery costs") == 2, output
    assert done.stdout.count("verified: the stored ledger is the fold of its 205 receipts") == 2
