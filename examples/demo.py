"""The demo pipeline: dogana's example DAGs, run by Airflow on SQLite over four simulated days.

    python3 dev.py demo

Nothing to install or start: a temporary Airflow home with its metadata database, a SQLite file
as the source system and another as the warehouse (the receiver), both reached through Airflow
connections. The DAGs are the files in dags/examples/, copied into the DAGs folder and run with
dag.test(), as Airflow's scheduler would run them; the source changes between the days. After
each day the demo prints every table's claims, and at the end the freshness check's report.

The days are simulated: each is one run of each DAG, seconds apart. The dates printed are real:
produced_at is the source's clock when its snapshot was taken, never a scheduler's date.
Airflow's own logs go to a file in the temporary home. The demo removes its home when it ends
well; when it fails, it keeps the home and names its log file, the one place saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "dags" / "examples"
HOME = Path(tempfile.mkdtemp(prefix="dogana-demo-"))
SOURCE = HOME / "source.sqlite"
WAREHOUSE = HOME / "warehouse.sqlite"
LOG = HOME / "airflow.log"

# Airflow reads its configuration once, when first imported: set it all before that.
os.environ.update(
    {
        "AIRFLOW_HOME": str(HOME),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(HOME / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{HOME / 'airflow.db'}",
        "AIRFLOW__DOGANA__DELIVERY_FOLDER": (HOME / "deliveries").as_uri(),
        "AIRFLOW_CONN_DOGANA_SOURCE": json.dumps({"conn_type": "sqlite", "host": str(SOURCE)}),
        "AIRFLOW_CONN_DOGANA_DEFAULT": json.dumps({"conn_type": "sqlite", "host": str(WAREHOUSE)}),
    }
)
for name in ("DOGANA_SOURCE_CONN_ID", "DOGANA_RECEIVER_CONN_ID"):
    os.environ.pop(name, None)

TABLES = ["orders", "invoices", "invoice_lines", "events", "shipments"]
SOURCE_ROWS = {
    "orders": "SELECT count(*) FROM orders WHERE NOT is_deleted",
    "invoices": "SELECT count(*) FROM invoices WHERE NOT is_deleted",
    "invoice_lines": "SELECT count(*) FROM invoice_lines",
    "events": "SELECT count(*) FROM events",
    "shipments": "SELECT count(*) FROM shipments WHERE ship_date >= :low",
}


@contextmanager
def quiet() -> Iterator[None]:
    """Send everything written to stdout and stderr, Airflow's logs included, to LOG."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(LOG, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def now() -> str:
    """The application's clock for a change, as it stores it: ISO 8601 with the offset."""
    time.sleep(0.002)
    return datetime.now(UTC).isoformat()


def source(sql: str, *rows: tuple[Any, ...]) -> None:
    """A change in the source system, committed."""
    with sqlite3.connect(SOURCE) as connection:
        if rows:
            connection.executemany(sql, rows)
        else:
            connection.executescript(sql)


def load(name: str) -> Any:
    """An example DAG file, copied into the DAGs folder (dag.test() parses it there)."""
    target = HOME / "dags" / f"{name}.py"
    shutil.copyfile(EXAMPLES / f"{name}.py", target)
    spec = importlib.util.spec_from_file_location(f"example_{name}", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNS: list[Any] = []


def run(dag: Any, *, refused: bool = False) -> Any:
    """One run of a DAG, its data interval ending now; prints a line with what each task did.

    refused: the run's gate is expected to refuse its delivery (and nothing after it to run)."""
    with quiet():
        found = dag.test(logical_date=datetime.now(UTC))
    RUNS.append(found)
    from airflow.utils.session import create_session

    with create_session() as session:
        # By step: "extract" whether written out or inside a TaskGroup ("events.extract").
        tis = {
            ti.task_id.rsplit(".", 1)[-1]: (ti.task_id, str(ti.state))
            for ti in found.get_task_instances(session=session)
        }
    detail = ""
    delivered = xcom(found, tis["extract"][0]) if "extract" in tis else None
    if delivered is not None:
        items = delivered if isinstance(delivered, list) else [delivered]
        detail = "; ".join(
            f"{m['table']} {m['shape']} {m['rows']} rows"
            + (f" {m['tombstones']} tombstones" if m["tombstones"] else "")
            for m in (item["manifest"] for item in items)
        )
    elif tis.get("plan", ("", ""))[1] == "skipped":
        detail = "claims already suffice: nothing delivered"
    elif "freshness" in tis:
        detail = "its report:"
    status = "ok" if all(s in ("success", "skipped") for _, s in tis.values()) else "FAILED"
    if refused and tis.get("gate", ("", ""))[1] == "failed":
        status = "refused"
    print(f"  {dag.dag_id:<27} {status:<7} {detail}")
    return found


def xcom(found: Any, task_id: str, key: str = "return_value") -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    query = XComModel.get_many(run_id=found.run_id, key=key, dag_ids=found.dag_id, task_ids=task_id)
    with create_session() as session:
        row = session.scalars(query).first()
        return None if row is None else XComModel.deserialize_value(row)


def rejection() -> str:
    """The orders table's last receipt, a rejection, as the gate task's failure states it."""
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.operators.gate import rejection_message

    with quiet():  # the hook logs which connection it opened
        receipt = DoganaHook("dogana_default").receiver.receipts("orders")[-1]
    return rejection_message(receipt)


def claims_table() -> str:
    """Every table's claims now, and its rows published beside the rows the source holds."""
    from dogana_core.claims import NO_LIMIT
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.receiver.receiver import UnknownTable
    from dogana_provider.report.table import text_table, when

    hook = DoganaHook("dogana_default")
    at = datetime.now(UTC)
    low = at.date() - timedelta(days=29)
    rows: list[list[str]] = []
    with quiet():  # the hook logs which connection it opened
        hook.receiver  # noqa: B018
    for table in TABLES:
        with sqlite3.connect(SOURCE) as connection:
            held = connection.execute(SOURCE_ROWS[table], {"low": low.isoformat()}).fetchone()[0]
        try:
            with hook.receiver.read(table) as snapshot:
                published = sum(1 for _ in snapshot.rows)
                window = (low, at.date()) if table == "shipments" else None
                claims = snapshot.ledger.claims(at, limit=NO_LIMIT, window=window)
        except UnknownTable:
            rows.append([table, "-", "-", "-", "-", "-", str(held)])
            continue
        name = f"{table} (last 30 days)" if table == "shipments" else table
        rows.append(
            [
                name,
                str(claims.state),
                when(claims.complete_as_of),
                when(claims.deletions_as_of),
                when(claims.exact_as_of),
                str(published),
                str(held),
            ]
        )
    header = ["table", "state", "complete as of", "deletions as of", "exact as of", "rows"]
    return text_table([*header, "source rows"], rows)


def day(title: str) -> None:
    print(f"\n{title}")


def main() -> int:
    started = time.monotonic()
    (HOME / "dags").mkdir()
    print(f"dogana demo: Airflow home {HOME}, source and warehouse are SQLite files in it")
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True
    )
    LOG.write_text(migrate.stdout + migrate.stderr)
    if migrate.returncode != 0:
        print("airflow db migrate failed")
        return 1
    with quiet():
        orders, invoices, events = load("orders"), load("invoices"), load("events")
        shipments, freshness = load("shipments"), load("freshness")

    # The shipments window is the last 30 UTC days: keep every run on one day.
    clock = datetime.now(UTC)
    midnight = datetime.combine(clock.date() + timedelta(days=1), datetime.min.time(), UTC)
    if midnight - clock < timedelta(minutes=1):
        print(f"waiting {(midnight - clock).seconds + 1} s for UTC midnight to pass")
        time.sleep((midnight - clock).total_seconds() + 1)
    today = datetime.now(UTC).date()
    source((ROOT / "examples" / "source_tables.sqlite.sql").read_text())
    source(
        "INSERT INTO orders VALUES (?, ?, ?, ?, 0)",
        (1, "ada", 1200, now()),
        (2, "grace", 800, now()),
        (3, "edsger", 450, now()),
    )
    source(
        "INSERT INTO invoices (invoice_id, customer, updated_at, is_deleted) VALUES (?, ?, ?, 0)",
        (1, "ada", now()),
        (2, "grace", now()),
    )
    source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (10, 1, 1000), (11, 1, 250), (20, 2, 4000))
    source("INSERT INTO events VALUES (?, ?, ?)", *[(k, "home", now()) for k in ("view",) * 3])
    source(
        "INSERT INTO shipments VALUES (?, ?, ?, ?)",
        (1, today.isoformat(), 500, now()),
        (2, (today - timedelta(days=12)).isoformat(), 1200, now()),
        (3, (today - timedelta(days=45)).isoformat(), 300, now()),  # older than the window
    )

    day("Day 1, Sunday: the first runs read every table whole (an empty ledger proves nothing)")
    run(orders.weekly_full)
    run(invoices.dag)
    run(events.dag)
    run(shipments.dag)
    print(claims_table())

    day("Day 2, Monday: an order added, one changed, one soft-deleted; an invoice cancelled")
    source("INSERT INTO orders VALUES (?, ?, ?, ?, 0)", (4, "barbara", 3000, now()))
    source("UPDATE orders SET amount_cents = 950, updated_at = ? WHERE order_id = 2", (now(),))
    source("UPDATE orders SET is_deleted = 1, updated_at = ? WHERE order_id = 3", (now(),))
    source(
        "INSERT INTO invoices (invoice_id, customer, updated_at, is_deleted) VALUES (?, ?, ?, 0)",
        (3, "edsger", now()),
    )
    source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (30, 3, 700), (31, 3, 50))
    source("UPDATE invoices SET is_deleted = 1, updated_at = ? WHERE invoice_id = 2", (now(),))
    source("DELETE FROM invoice_lines WHERE invoice_id = ?", (2,))
    source("INSERT INTO events VALUES (?, ?, ?)", ("click", "cart", now()), ("buy", "cart", now()))
    source(
        "INSERT INTO shipments VALUES (?, ?, ?, ?)",
        (4, (today - timedelta(days=2)).isoformat(), 800, now()),
    )
    source("DELETE FROM shipments WHERE shipment_id = ?", (2,))
    run(orders.daily)
    invoiced = run(invoices.dag)
    run(events.dag)
    run(shipments.dag)
    print(claims_table())
    report = xcom(invoiced, "report")
    totals = ", ".join(f"{c} {t / 100:.2f}" for c, t in report["totals"].items())
    print(f"  invoice report, as of {report['exact_as_of']}: {totals}")
    print(
        "  shipments is patched: its changes read cannot see shipment 2, deleted from the "
        "source,\n  so deletions stay as of Sunday's read until the window is next read whole."
    )

    day("Day 3, Tuesday: a bug writes an order of -5.00; someone runs DELETE on order 1")
    source("INSERT INTO orders VALUES (?, ?, ?, ?, 0)", (6, "ken", -500, now()))
    run(orders.daily, refused=True)
    print("  what the gate's log says, and the receipt recorded (nothing was published):")
    print(textwrap.fill(rejection(), width=96, initial_indent="    ", subsequent_indent="    "))
    print("  the shop fixes the amount; the same day, someone deletes order 1 by hand")
    source("UPDATE orders SET amount_cents = 500, updated_at = ? WHERE order_id = 6", (now(),))
    source("DELETE FROM orders WHERE order_id = ?", (1,))
    source("INSERT INTO orders VALUES (?, ?, ?, ?, 0)", (5, "donald", 120, now()))
    run(orders.daily)
    print(claims_table())
    print(
        "  orders: 5 rows published, 4 in the source. A changes read cannot see a DELETE, and the\n"
        "  dates cannot either: they describe what the declarations prove (see orders.py)."
    )

    day("Day 4, Sunday: the weekly full read replaces the table")
    run(orders.weekly_full)
    print(claims_table())

    day("The hourly freshness check")
    checked = run(freshness.dag)
    print(xcom(checked, "freshness", key="report"))

    day("The receiver at a terminal: dogana status dogana_default")
    status = subprocess.run(
        [str(Path(sys.executable).parent / "dogana"), "status", "dogana_default"],
        capture_output=True,
        text=True,
    )
    print(status.stdout + status.stderr, end="")

    print(f"\n{len(RUNS)} DAG runs in {time.monotonic() - started:.0f} s")
    return 0


def finish() -> int:
    """Run the demo; remove its home when it ends well, keep it to be read when it fails."""
    try:
        code = main()
    except BaseException:
        print(f"dogana demo failed: its Airflow home is kept, Airflow's logs are in {LOG}")
        raise
    if code != 0:
        print(f"dogana demo failed: its Airflow home is kept, Airflow's logs are in {LOG}")
        return code
    shutil.rmtree(HOME, ignore_errors=True)
    print(f"dogana demo: its Airflow home {HOME} removed")
    return 0


if __name__ == "__main__":
    sys.exit(finish())
