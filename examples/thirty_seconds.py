"""dogana's core in thirty seconds: a full export on Sunday, changes on Monday, what each proves.

Run it with `.venv/bin/python examples/thirty_seconds.py`. Nothing here reads rows: the core
decides from declarations.
"""

from datetime import UTC, datetime, timedelta

from dogana_core import Contract, Shape
from dogana_core.gate import Gate
from dogana_core.ledger import Ledger

# The source's guarantees: a full read of the table, and rows changed since a timestamp
# (without tombstones: this source cannot say what it deleted).
orders = Contract(
    "orders",
    ("id",),
    {
        "sunday_full": Shape.complete(cost=10),
        "daily_changes": Shape.changes(checkpoint="timestamp"),
    },
    cursor_column="updated_at",
    types={"id": "int", "updated_at": "datetime"},
)
ledger = Ledger.new(orders)

sunday = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
monday = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
now = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def show(title: str) -> None:
    claims = ledger.claims(now, limit=timedelta(days=2))
    print(
        f"{title}\n  state {claims.state}, complete as of {claims.complete_as_of}, "
        f"deletions as of {claims.deletions_as_of}, exact as of {claims.exact_as_of}"
    )


show("A new ledger proves nothing:")

# Sunday's full dump proves the table as it was at 02:00: nothing missing, nothing deleted kept.
full = orders.manifest("sunday_full", sunday, rows=1_000)
receipt = Gate.evaluate(ledger, full, now=now)
ledger = ledger.follow(receipt)
show(f"After Sunday's full export ({receipt.outcome}):")

# Monday's changes prove nothing is missing as of Monday, but deletions only as of Sunday.
changes = orders.manifest("daily_changes", monday, since=sunday, rows=40)
receipt = Gate.evaluate(ledger, changes, now=now)
ledger = ledger.follow(receipt)
show(f"After Monday's changes ({receipt.outcome}): patched, not exact")

# A read claiming an instant the receiver has not reached yet is refused, and changes nothing.
future = orders.manifest("daily_changes", now + timedelta(hours=1), since=monday, rows=3)
receipt = Gate.evaluate(ledger, future, now=now)
print(
    f"A read from the future is {receipt.outcome}: "
    + "; ".join(f"{c.name}: {c.detail}" for c in receipt.failed)
)
show("The ledger is as it was:")
