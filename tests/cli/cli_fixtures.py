"""The installed `dogana` console script, and real delivered files for it to read.

Tests run the script installed next to the interpreter (pip install -e . puts it there), in a
subprocess, as a sender or an operator would. The orders rows and the file writer are shared
with the row checks' tests (order_files).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from order_files import ORDERS_SCHEMA as SCHEMA
from order_files import PRODUCED, order, write
from order_files import honest_orders as honest

from dogana_core import Contract, Manifest, Shape
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.ledger import Ledger

DOGANA = Path(sys.executable).parent / "dogana"

SINCE = datetime(2026, 10, 18, 2, 0, tzinfo=UTC)
SEPTEMBER = (date(2026, 9, 1), date(2026, 9, 30))

ORDERS = Contract(
    "orders",
    ("id",),
    {
        "nightly": Shape.complete(),
        "month": Shape.complete(window=True),
        "changes": Shape.changes(tombstones=True),
    },
    window_column="order_date",
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"id": "int", "order_date": "date", "updated_at": "datetime", "is_deleted": "bool"},
)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def failed(self) -> set[str]:
        """The names of the checks `dogana check` printed as FAIL."""
        return {line.split()[1] for line in self.out.splitlines() if line.startswith("  FAIL ")}


def dogana(*args: str | Path, cwd: Path) -> Result:
    assert DOGANA.exists(), f"{DOGANA} is not installed: pip install -e . first"
    done = subprocess.run(
        [str(DOGANA), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    return Result(done.returncode, done.stdout, done.stderr)


def write_contract(directory: Path, contract: Contract = ORDERS) -> Path:
    path = directory / "orders.contract.json"
    path.write_text(contract.to_json())
    return path


def write_manifest(path: Path, manifest: Manifest) -> Path:
    path.write_text(manifest.to_json())
    return path


NIGHT = datetime(2026, 10, 18, 2, 0, tzinfo=UTC)


def history() -> list[Receipt]:
    """A full read, a September window, then a rejected redelivery of September."""
    ledger = Ledger.new(ORDERS)
    full = ORDERS.manifest("nightly", NIGHT, rows=3)
    first = Gate.evaluate(ledger, full, [Check("rows", True, "3")], now=NIGHT + timedelta(hours=1))
    ledger = ledger.follow(first)
    month = ORDERS.manifest("month", PRODUCED, window=SEPTEMBER, rows=3)
    second = Gate.evaluate(ledger, month, [Check("rows", True, "3")], now=PRODUCED)
    ledger = ledger.follow(second)
    again = ORDERS.manifest("month", PRODUCED + timedelta(hours=2), window=SEPTEMBER, rows=3)
    third = Gate.evaluate(
        ledger, again, [Check("key_unique", False, "id=2 twice")], now=PRODUCED + timedelta(hours=3)
    )
    return [first, second, third]


__all__ = [
    "DOGANA",
    "NIGHT",
    "ORDERS",
    "PRODUCED",
    "SCHEMA",
    "SEPTEMBER",
    "SINCE",
    "Result",
    "dogana",
    "history",
    "honest",
    "order",
    "write",
    "write_contract",
    "write_manifest",
]
