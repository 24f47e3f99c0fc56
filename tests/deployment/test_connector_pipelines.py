"""A JSON Lines pipeline and an HTTP one under the real scheduler, end to end, one run each.

    dogana_web_orders        dags/examples/web_orders.py, unpaused: its scheduled run reads the
                             web shop's change log (source_tables.py, DOGANA_WEB_ORDERS_JSONL)
                             whole, as the table (export)
    dogana_api_orders        dags/examples/api_orders.py, unpaused: its scheduled run walks the
                             test API's nested change log (/v1/order-changes) by cursor from
                             its start, through the http connection shop_api kept in the
                             metadata database (conftest.py)

Each run's receiver holds the source's rows, and its receipt dates the table by what the read
proved: for the file, the worker's instant just before the read took the file's size (during
the extract task); for the API, the server's "as_of" in its last page, never the worker's clock.
The feeds after an export are the connectors' own tests (tests/connectors), run by run.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from api_servers import Api
from deployment import Client, Run
from source_tables import WEB_ORDERS as CHANGES
from source_tables import web_orders_now
from stories import Played, Servers, story

from dogana_core.manifest import Manifest
from dogana_core.receipt import Receipt
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

WEB_ORDERS = "dogana_web_orders"
API_ORDERS = "dogana_api_orders"


@dataclass(frozen=True)
class Ran:
    """A run, its final state, and what its extract task wrote and when it ran."""

    run: Run
    found: dict[str, Any]
    manifest: Manifest | None
    extract: dict[str, Any]


def finished(client: Client, run: Run, table: str) -> Ran:
    found = client.wait(run)
    extracted = client.xcom(run, f"{table}.extract") if found["state"] == "success" else None
    manifest = None if extracted is None else Manifest.from_dict(extracted["manifest"])
    [extract] = [ti for ti in client.task_instances(run) if ti["task_id"] == f"{table}.extract"]
    return Ran(run, found, manifest, extract)


@story
def web_orders_run(client: Client, servers: Servers) -> Ran:
    # Unpaused, the example's schedule creates its run at once: a manual run beside it would
    # be a second read of the same file.
    client.wait_parsed([WEB_ORDERS])
    client.unpause(WEB_ORDERS)
    return finished(client, client.wait_for_run(WEB_ORDERS, run_type="scheduled"), "web_orders")


@story
def api_orders_run(client: Client, servers: Servers) -> Ran:
    # As the web orders example: its schedule creates the run once unpaused.
    client.wait_parsed([API_ORDERS])
    client.unpause(API_ORDERS)
    return finished(client, client.wait_for_run(API_ORDERS, run_type="scheduled"), "api_orders")


@pytest.fixture(scope="module")
def receiver(postgres_url: str, examples_receiver: str) -> Receiver:
    """The examples' receiver, as the tests read it behind the deployment's back."""
    return Receiver(
        lambda: psycopg2.connect(postgres_url, options=f"-csearch_path={examples_receiver}"),
        POSTGRES,
    )


@pytest.fixture(scope="module")
def web_orders(played: Played, client: Client) -> Ran:
    ran = played.result(web_orders_run)
    assert ran.found["state"] == "success", client.explain(ran.run)
    return ran


@pytest.fixture(scope="module")
def api_orders(played: Played, client: Client) -> Ran:
    ran = played.result(api_orders_run)
    assert ran.found["state"] == "success", client.explain(ran.run)
    return ran


def rows(receiver: Receiver, table: str, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    with receiver.read(table) as read:
        at = [read.columns.index(column) for column in columns]
        return sorted(tuple(row[i] for i in at) for row in read.rows)


def receipt_of(receiver: Receiver, table: str, manifest: Manifest) -> Receipt:
    """The receipt of the delivery this manifest describes (later runs may add their own)."""
    [found] = [
        r
        for r in receiver.receipts(table)
        if (r.manifest.content_hash, r.manifest.produced_at)
        == (manifest.content_hash, manifest.produced_at)
    ]
    return found


def dated_by(receipt: Receipt) -> set[datetime]:
    """The instants the receipt's accepted delivery dates its table by, every region's."""
    assert receipt.transition is not None, receipt.checks
    return {
        instant
        for region in receipt.transition.regions
        for instant in (region.complete_as_of, region.deletions_as_of)
    }


# JSON Lines ---------------------------------------------------------------------------------


def test_a_json_lines_change_log_is_published_as_the_orders_it_leaves(
    web_orders: Ran, receiver: Receiver
) -> None:
    expected = [(n, o["amount"], o["status"]) for n, o in sorted(web_orders_now().items())]
    assert rows(receiver, "web_orders", ("order_id", "amount", "status")) == expected


def test_a_json_lines_receipt_dates_the_table_at_the_read_it_proved(
    web_orders: Ran, receiver: Receiver, sources: dict[str, Path]
) -> None:
    manifest = web_orders.manifest
    assert manifest is not None and manifest.shape == "export"
    # The position the read issued: the whole file, every line.
    size = sources["web_orders"].stat().st_size
    assert str(manifest.generation).startswith(f"jsonl:{size}:{len(CHANGES)}:")
    # The worker's instant just before the read, so within the extract task's run.
    began = datetime.fromisoformat(web_orders.extract["start_date"])
    ended = datetime.fromisoformat(web_orders.extract["end_date"])
    assert began <= manifest.produced_at <= ended
    receipt = receipt_of(receiver, "web_orders", manifest)
    assert receipt.outcome == "accepted"
    assert dated_by(receipt) == {manifest.produced_at}


# HTTP ---------------------------------------------------------------------------------------


def get(api: Api, path: str) -> Any:
    with urllib.request.urlopen(f"{api.url}{path}") as response:
        return json.loads(response.read())


def test_an_api_change_log_is_published_as_the_orders_the_server_holds(
    api_orders: Ran, receiver: Receiver, api: Api
) -> None:
    live = get(api, "/pages?page=1&per_page=100")["data"]
    expected = sorted((o["order_id"], o["amount"], 1000 + o["order_id"]) for o in live)
    assert [n for n, _, _ in expected] == [1, 2, 3, 4, 6, 7]  # 2 updated, 5 deleted
    # Each column read from its field in the nested record (the example's paths).
    assert rows(receiver, "api_orders", ("order_id", "amount", "customer_id")) == expected


def test_an_api_receipt_dates_the_table_at_the_servers_instant_in_its_last_page(
    api_orders: Ran, receiver: Receiver, api: Api
) -> None:
    manifest = api_orders.manifest
    assert manifest is not None and manifest.shape == "export"
    assert manifest.generation == "after:9"  # the log's last change, seq 9
    # The server stamps "as_of" while answering a page and notes the hit just after: the
    # instant lies within the extract task, just before the hit of a page it read.
    began = datetime.fromisoformat(api_orders.extract["start_date"])
    ended = datetime.fromisoformat(api_orders.extract["end_date"])
    pages = [
        datetime.fromisoformat(hit[2])
        for hit in get(api, "/hits")
        if hit[0].startswith("/v1/order-changes")
    ]
    assert began <= manifest.produced_at
    assert any(manifest.produced_at <= hit <= ended for hit in pages), pages
    receipt = receipt_of(receiver, "api_orders", manifest)
    assert receipt.outcome == "accepted"
    assert dated_by(receipt) == {manifest.produced_at}
