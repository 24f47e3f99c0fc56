"""bench/expectations.py at a small size, so that the benchmark cannot rot between full runs.

It runs the script as a user does, in its own process, on the three databases, and checks only
that each decided both deliveries and every expectation was met: never a time, which a test
cannot hold.
"""

from __future__ import annotations

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.postgres, pytest.mark.mariadb]


def test_expectations_bench_decides_with_and_without_them_on_every_database(
    postgres_url: str, mariadb_url: str
) -> None:
    printed = run_bench("expectations.py", "--rows", "2000")
    for database in ("postgresql", "sqlite", "mysql"):
        (line,) = [line for line in printed.splitlines() if line.startswith(f"{database}, ")]
        assert "with 9 on 6 columns (9 met)" in line, printed
        assert "target under +30%" in line, printed
