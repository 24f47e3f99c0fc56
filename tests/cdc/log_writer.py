"""A stream of inserts, updates, key moves and deletes against a source table, each transaction
logged with the source clock's bounds on its commit, until a stop file appears.

    python log_writer.py SPEC_JSON LOG STOP

SPEC_JSON: {"driver": "psycopg" | "MySQLdb", "connect": {...keyword arguments...},
"table": name (quoted as the database quotes it), "clock": the SQL of the server's clock now,
"naive_utc": whether the driver takes instants as naive UTC, "keys": how many keys the rows
take, "seed": int}. Plain SQL through the driver, no Airflow: the
tests start it once and it runs beside every delivery they kill.

Each line of LOG is one committed transaction: {"n", "lo", "hi", "rows": {key: row or null}},
the rows it left (null: deleted). Its commit is after lo (the clock read inside the
transaction, before COMMIT) and before hi (read after COMMIT returned): the state after
transaction n is the source's state from its commit to transaction n + 1's. Every transaction
writes a row whose name is "t<n>", so no two states of the table are equal and a published
state names the transaction it ends at.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

COLUMNS = ("id", "amount", "at", "name", "flag")
START = datetime(2026, 1, 1, tzinfo=UTC)


def row(rng: random.Random, n: int) -> list[Any]:
    """amount, at, name, flag: NULLs sometimes, a unicode name, microsecond instants."""
    amount = None if rng.random() < 0.1 else str(Decimal(rng.randint(-(10**9), 10**9)) / 100)
    at = START + timedelta(microseconds=rng.randint(0, 10**13))
    flag = None if rng.random() < 0.1 else rng.random() < 0.5
    return [amount, at.isoformat(), f"t{n}-ü", flag]


def instant(value: datetime) -> str:
    """A clock reading as ISO 8601 in UTC (a naive reading is the session's UTC)."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()


def main() -> None:
    spec, log_path, stop = json.loads(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    driver = importlib.import_module(spec["driver"])
    db = driver.connect(**spec["connect"])
    table, clock, keys = spec["table"], spec["clock"], spec["keys"]
    naive = spec.get("naive_utc", False)  # a driver that takes instants as naive UTC
    rng = random.Random(spec["seed"])
    cursor = db.cursor()

    def now() -> str:
        cursor.execute(f"SELECT {clock}")
        (clock_now,) = cursor.fetchone()
        return instant(clock_now)

    def upsert(key: int, values: list[Any], present: bool) -> None:
        amount, text, name, flag = values
        at = datetime.fromisoformat(text)
        at = at.replace(tzinfo=None) if naive else at
        if present:
            cursor.execute(
                f"UPDATE {table} SET amount = %s, at = %s, name = %s, flag = %s WHERE id = %s",
                (amount, at, name, flag, key),
            )
        else:
            cursor.execute(
                f"INSERT INTO {table} (id, amount, at, name, flag) VALUES (%s, %s, %s, %s, %s)",
                (key, amount, at, name, flag),
            )

    live: dict[int, list[Any]] = {}
    with log_path.open("a", encoding="utf-8") as log:
        n = 0
        while not stop.exists():
            changed: dict[int, list[Any] | None] = {}
            if n == 0:  # the table's first rows, before any delivery
                for key in range(1, keys // 2 + 1):
                    changed[key] = values = row(rng, 0)
                    upsert(key, values, False)
            else:
                key, values = rng.randint(1, keys), row(rng, n)
                changed[key] = values
                upsert(key, values, key in live)
                for _ in range(rng.randint(0, 2)):
                    other = rng.randint(1, keys)
                    gone = rng.random() < 0.5
                    if other in changed or (other not in live):
                        continue
                    if gone:
                        cursor.execute(f"DELETE FROM {table} WHERE id = %s", (other,))
                        changed[other] = None
                        continue
                    moved = rng.randint(keys + 1, 2 * keys)
                    if moved in live or moved in changed:
                        continue
                    cursor.execute(
                        f"UPDATE {table} SET id = %s, name = %s WHERE id = %s",
                        (moved, f"t{n}-ü", other),
                    )
                    changed[moved] = [*live[other][:2], f"t{n}-ü", live[other][3]]
                    changed[other] = None
            lo = now()
            db.commit()
            hi = now()
            db.commit()
            for key, left in changed.items():
                if left is None:
                    live.pop(key, None)
                else:
                    live[key] = left
            print(json.dumps({"n": n, "lo": lo, "hi": hi, "rows": changed}), file=log, flush=True)
            n += 1
            time.sleep(rng.uniform(0.002, 0.02))
    db.close()


if __name__ == "__main__":
    main()
