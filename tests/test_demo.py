"""examples/demo.py, what `python3 dev.py demo` runs: the example DAGs on SQLite over four days."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.airflow


def claims_rows(block: str) -> dict[str, list[str]]:
    """The claims table after a day: table -> its cells (dates as one cell each)."""
    rows = {}
    for line in block.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0] in {"orders", "invoices", "invoice_lines", "events"}:
            rows[cells[0]] = cells
        elif cells and cells[0] == "shipments (last 30 days)":
            rows["shipments"] = cells
    return rows


def test_the_demo_runs_the_example_dags_and_prints_every_tables_claims() -> None:
    # A fresh machine: none of this session's Airflow settings leak into the demo.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DOGANA"))}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    home = re.search(r"Airflow home (\S+),", result.stdout)
    kept = home is not None and Path(home.group(1)).exists()
    if kept:  # a failed demo keeps its home for a person to look into; a test does not
        shutil.rmtree(home.group(1), ignore_errors=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert home is not None and not kept, "the demo removes its Airflow home when it ends well"
    assert f"its Airflow home {home.group(1)} removed" in result.stdout
    out = result.stdout
    assert "FAILED" not in out
    assert "[info" not in out, "Airflow's logs belong in the log file, not on the screen"
    days = out.split("\nDay ")
    assert len(days) == 5  # the header, then four days

    first = claims_rows(days[1])
    assert set(first) == {"orders", "invoices", "invoice_lines", "events", "shipments"}
    for cells in first.values():
        state, complete, deletions, exact, rows, held = cells[1:7]
        assert state == "complete" and complete == deletions == exact and rows == held
    assert first["invoices"][4] == first["invoice_lines"][4], "read in one snapshot"

    second = claims_rows(days[2])
    assert second["orders"][1:2] == ["complete"] and second["orders"][5:7] == ["3", "3"]
    assert second["shipments"][1] == "patched" and second["shipments"][4] == "-"
    assert second["shipments"][5:7] == ["3", "2"], "a changes read keeps a deleted row"
    assert "dogana_orders_daily         ok      orders changes" in days[2]
    assert "invoice report, as of" in days[2] and "ada 12.50, edsger 7.50" in days[2]

    third = claims_rows(days[3])
    assert "dogana_orders_daily         refused orders changes" in days[3]
    blocked = " ".join(days[3].split("nothing was published):\n", 1)[1].split())
    assert blocked.startswith("orders: delivery "), "a person sees the gate's rejection"
    assert "amount_cents.min: violated (block): min -500 (geq_to 0), 1 row" in blocked
    assert third["orders"][5:7] == ["5", "4"], "a DELETE is invisible to a changes read"
    sunday, checks = days[4].split("\nThe hourly freshness check\n")
    freshness, status = checks.split("\nThe receiver at a terminal: dogana status dogana_default\n")
    assert claims_rows(sunday)["orders"][5:7] == ["4", "4"], "the weekly full read repairs it"
    assert "5 PASS, 0 WARN, 0 ERROR" in freshness
    shown_status = claims_rows(status.replace("shipments  ", "shipments (last 30 days)  "))
    assert {table: cells[1] for table, cells in shown_status.items()} == {
        "orders": "complete", "invoices": "complete", "invoice_lines": "complete",
        "events": "complete", "shipments": "patched",
    }  # fmt: skip
    assert re.search(r"\n12 DAG runs in \d+ s\n", out)

    # docs/demo.md shows a real run: the same lines, but for instants, ages, paths and seconds.
    page = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    shown = page.split("real run:\n\n```\n")[1]
    shown = shown.split("```", 1)[0]
    shown_lines = [line for line in shown.splitlines() if not line.startswith("dev.py: ")]
    assert [masked(line) for line in shown_lines] == [masked(line) for line in out.splitlines()]


def masked(line: str) -> str:
    line = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?", "<instant>", line)
    line = re.sub(r"/tmp/dogana-demo-\w+", "<home>", line)
    line = re.sub(r"delivery [0-9a-f]{12}\b", "delivery <identity>", line)
    line = re.sub(r"\b\d+m? ?\d*s\b", "<age>", line)
    line = re.sub(r"runs in \d+ s", "runs in <n> s", line)
    return " ".join(line.split())
