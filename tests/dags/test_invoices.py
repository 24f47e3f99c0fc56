"""dags/examples/invoices.py: invoices and lines read in one snapshot, published in one commit,
and a report that waits until both are exact at one instant."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from example_runs import (
    Databases,
    asset_events,
    create_invoice_tables,
    load_example,
    local_path,
    now,
    redeliver,
    states,
    xcom,
)

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

# delivery_task_group: the group's four tasks in the TaskGroup "invoices"
SKIPPED_DELIVERY = ("invoices.plan", "invoices.extract", "invoices.gate", "invoices.publish")
TASKS = (*SKIPPED_DELIVERY, "wait_exact", "report")


def source_state(databases: Databases) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    invoices = set(
        databases.source_rows("SELECT invoice_id, customer FROM invoices WHERE NOT is_deleted")
    )
    lines = set(
        databases.source_rows("SELECT line_id, invoice_id, amount_cents FROM invoice_lines")
    )
    return invoices, lines


def published_state(
    databases: Databases,
) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    return (
        databases.published("invoices", ("invoice_id", "customer")),
        databases.published("invoice_lines", ("line_id", "invoice_id", "amount_cents")),
    )


def source_totals(databases: Databases) -> dict[str, int]:
    rows = databases.source_rows(
        "SELECT i.customer, SUM(l.amount_cents) FROM invoices i "
        "JOIN invoice_lines l ON l.invoice_id = i.invoice_id WHERE NOT i.is_deleted "
        "GROUP BY i.customer"
    )
    return {customer: int(total) for customer, total in rows}


def invoice(databases: Databases, invoice_id: int, customer: str, deleted: bool = False) -> None:
    databases.source("DELETE FROM invoices WHERE invoice_id = ?", (invoice_id,))
    databases.source(
        "INSERT INTO invoices VALUES (?, ?, ?, ?)", (invoice_id, customer, now(), deleted)
    )


def setup_source(databases: Databases) -> None:
    create_invoice_tables(databases)
    invoice(databases, 1, "ada")
    invoice(databases, 2, "grace")
    databases.source(
        "INSERT INTO invoice_lines VALUES (?, ?, ?)",
        (10, 1, 1000),
        (11, 1, 250),
        (20, 2, 4000),
    )


def test_invoices_and_lines_are_exact_at_one_instant_for_the_report(
    databases: Databases, airflow_home: Path
) -> None:
    setup_source(databases)
    example = load_example(airflow_home, "invoices")

    first = databases.run(example.dag)
    assert states(first) == dict.fromkeys(TASKS, "success")
    manifests = [Manifest.from_dict(item["manifest"]) for item in xcom(first, "invoices.extract")]
    assert [m.shape for m in manifests] == ["full", "full"]
    instant = manifests[0].produced_at
    assert manifests[1].produced_at == instant, "one snapshot, one produced_at"
    assert published_state(databases) == source_state(databases)
    assert databases.claims(["invoices", "invoice_lines"]).exact_as_of == instant
    report = xcom(first, "report")
    assert report == {"exact_as_of": instant.isoformat(), "totals": source_totals(databases)}

    # Invoice 3 with its lines; invoice 2 cancelled (flag set, its lines deleted); a line edited.
    invoice(databases, 3, "edsger")
    databases.source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (30, 3, 700), (31, 3, 50))
    invoice(databases, 2, "grace", deleted=True)
    databases.source("DELETE FROM invoice_lines WHERE invoice_id = ?", (2,))
    databases.source("UPDATE invoice_lines SET amount_cents = ? WHERE line_id = ?", (1100, 10))

    second = databases.run(example.dag)
    assert states(second) == dict.fromkeys(TASKS, "success")
    invoices, lines = (
        Manifest.from_dict(item["manifest"]) for item in xcom(second, "invoices.extract")
    )
    # Each table its cheapest read to (p, p): the invoices' changes, the lines' full read.
    assert (invoices.shape, invoices.rows, invoices.tombstones) == ("changes", 1, 1)
    assert (lines.shape, lines.rows) == ("full", 4)
    assert invoices.produced_at == lines.produced_at
    assert published_state(databases) == source_state(databases)
    exact = databases.claims(["invoices", "invoice_lines"]).exact_as_of
    assert exact == lines.produced_at
    assert (
        xcom(second, "report")["totals"] == source_totals(databases) == {"ada": 1350, "edsger": 750}
    )
    for table in ("invoices", "invoice_lines"):
        event = asset_events(f"dogana://dogana_default/{table}")[-1]
        assert event["exact_as_of"] == exact.isoformat()

    # A rerun of a covered interval skips the delivery, and the report still runs.
    rerun = databases.run(example.dag, logical_date=second.logical_date.replace(microsecond=1))
    assert states(rerun) == {
        **dict.fromkeys(SKIPPED_DELIVERY, "skipped"),
        "wait_exact": "success",
        "report": "success",
    }

    # The group gated and published again replays whole: nothing changes.
    ledgers = databases.hook.ledgers(["invoices", "invoice_lines"])
    again = redeliver(databases, airflow_home, xcom(second, "invoices.extract"))
    assert states(again) == {"gate": "success", "publish": "success"}
    receipts = [Receipt.from_dict(r) for r in xcom(again, "publish")]
    assert [r.outcome for r in receipts] == [Outcome.REPLAYED, Outcome.REPLAYED]
    assert databases.hook.ledgers(["invoices", "invoice_lines"]) == ledgers
    assert published_state(databases) == source_state(databases)


def test_a_tampered_line_file_refuses_the_whole_group(
    databases: Databases, airflow_home: Path
) -> None:
    setup_source(databases)
    example = load_example(airflow_home, "invoices")
    assert states(databases.run(example.dag)) == dict.fromkeys(TASKS, "success")
    before = published_state(databases)
    ledgers = databases.hook.ledgers(["invoices", "invoice_lines"])

    invoice(databases, 1, "ada lovelace")
    databases.source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (12, 1, 99))
    extracted = databases.run(
        example.dag, mark_success_pattern="^(invoices\\.(gate|publish)|wait_exact|report)$"
    )
    delivery = xcom(extracted, "invoices.extract")
    lines_file = local_path(delivery[1]["uri"])
    table = pq.read_table(lines_file)
    pq.write_table(table.slice(0, table.num_rows - 1), lines_file)  # a line lost on the way

    refused = redeliver(databases, airflow_home, delivery)
    assert states(refused) == {"gate": "failed", "publish": "upstream_failed"}
    for table_name in ("invoices", "invoice_lines"):
        assert databases.receipts(table_name)[-1].outcome is Outcome.REJECTED
    assert published_state(databases) == before
    assert databases.hook.ledgers(["invoices", "invoice_lines"]) == ledgers
