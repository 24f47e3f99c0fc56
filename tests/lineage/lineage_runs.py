"""Real DAG runs of the example DAGs with OpenLineage's file transport: run as a script.

    python lineage_runs.py KIND SERVER_URL WORKDIR EVENTS

OpenLineage's listener is an Airflow plugin, registered once per process when plugins load and
only when a transport is configured, so these runs happen in a process of their own whose
environment names the transport before Airflow is imported. They run, against a source and a
receiver of KIND (sqlite or postgres; SERVER_URL "-" for sqlite): the invoices example (a group
read in one snapshot, and a report gated by ClaimsSensor); the shipments example (a rolling
window); the events example (a keyless append); the orders example's extract, whose
file is altered on its way to the gate, which rejects it; and the freshness example. Every event
is appended to EVENTS as one JSON line; what the runs did is written to WORKDIR/runs.json.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(kind: str, server: str, workdir: Path, events: Path) -> None:
    os.environ["AIRFLOW__OPENLINEAGE__TRANSPORT"] = json.dumps(
        {"type": "file", "log_file_path": str(events), "append": True}
    )
    os.environ["AIRFLOW__OPENLINEAGE__NAMESPACE"] = "dogana-tests"
    sys.path[:0] = [str(HERE.parent), str(HERE.parent / "dags")]
    import pytest
    from example_runs import (
        Databases,
        cheapen,
        create_invoice_tables,
        load_example,
        now,
        on_one_utc_day,
        redeliver,
        states,
        xcom,
    )

    home = Path(os.environ["AIRFLOW_HOME"])
    databases = Databases(kind, workdir, None if server == "-" else server)
    monkeypatch = pytest.MonkeyPatch()
    databases.configure(monkeypatch)
    try:
        databases.create(
            "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, "
            "amount_cents BIGINT, updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
        )
        databases.source(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            (1, "ada", 1200, now(), False),
            (2, "grace", 800, now(), False),
        )
        create_invoice_tables(databases)
        databases.source("INSERT INTO invoices VALUES (?, ?, ?, ?)", (1, "ada", now(), False))
        databases.source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (10, 1, 1000), (11, 1, 250))
        orders, invoices = load_example(home, "orders"), load_example(home, "invoices")
        runs = {"invoices": states(databases.run(invoices.dag))}
        on_one_utc_day()  # the shipments window is the last 30 UTC days
        databases.create(
            "CREATE TABLE shipments (shipment_id BIGINT PRIMARY KEY, ship_date DATE NOT NULL, "
            "weight_g BIGINT, updated_at TIMESTAMPTZ NOT NULL)"
        )
        today = datetime.now(UTC).date()
        databases.source(
            "INSERT INTO shipments VALUES (?, ?, ?, ?)", (1, today.isoformat(), 500, now())
        )
        shipped = databases.run(load_example(home, "shipments").dag)
        runs["shipments"] = states(shipped)
        window = xcom(shipped, "shipments.extract")["manifest"]["window"]
        databases.create(
            "CREATE TABLE events (kind TEXT NOT NULL, payload TEXT, "
            "recorded_at TIMESTAMPTZ NOT NULL)"
        )
        databases.source(
            "INSERT INTO events VALUES (?, ?, ?)", ("login", "ada", now()), ("login", "ada", now())
        )
        runs["events"] = states(databases.run(load_example(home, "events").dag))
        # A read of orders is extracted, and its file altered on its way to the gate.
        extracted = databases.run(orders.daily, mark_success_pattern="^(gate|publish)$")
        delivery = xcom(extracted, "extract")
        cheapen(delivery)
        runs["refused"] = states(redeliver(databases, home, delivery))
        runs["freshness"] = states(databases.run(load_example(home, "freshness").dag))
        heads = {
            table: databases.hook.receiver.ledger(table).publication_id
            for table in ("invoices", "invoice_lines", "events")
        }
        found = {
            "runs": runs,
            "schemas": [
                getattr(databases, "source_schema", None),
                getattr(databases, "receiver_schema", None),
            ],
            "paths": [
                str(getattr(databases, "source_path", "")),
                str(getattr(databases, "receiver_path", "")),
            ],
            "refused_uri": delivery["uri"],
            "published": heads,
            "shipments_window": window,
        }
        (workdir / "runs.json").write_text(json.dumps(found, indent=2))
    finally:
        databases.drop()
        monkeypatch.undo()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
