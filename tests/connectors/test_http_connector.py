"""The HTTP JSON API connector against a real server process: each fault a named refusal or an
honest delivery, and no read claiming more than a paged API proves."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from api_servers import NESTED, Api, api_server

from dogana_core import Contract, Ledger, Shape
from dogana_core.planner import next_extraction
from dogana_provider.connectors import HttpJsonConnector, RefusedRead, SourceUnavailable
from dogana_provider.connectors.conformance import conformance
from dogana_provider.connectors.extract import extract
from dogana_provider.connectors.http import NOT_ONE_SNAPSHOT
from dogana_provider.dialects import SQLITE
from dogana_provider.receiver.receiver import Receiver

ORDERS = Contract(
    "orders",
    ("order_id",),
    {
        "export": Shape.complete(cost=10),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
    },
    deleted_column="deleted",
    types={"order_id": "int", "deleted": "bool"},
)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    with api_server(monkeypatch) as found:
        yield found


def rows(reading) -> list[dict]:
    return pa.Table.from_batches(list(reading), schema=reading.schema).to_pylist()


def test_an_api_change_log_passes_conformance(api: Api) -> None:
    report = conformance(HttpJsonConnector(api.config()))
    assert report.failed == ()


def test_a_last_page_without_next_cursor_resumes_after_its_last_row(api: Api) -> None:
    connector = HttpJsonConnector(api.config())
    reading = connector.read("orders")
    assert [r["seq"] for r in rows(reading)] == list(range(1, 8))
    # The server's last page names no next cursor: the position is the last row's seq.
    assert reading.checkpoint() == "after:7"
    api.append({"order_id": 8, "amount": 80.0}, {"order_id": 3, "deleted": True})
    resumed = connector.resume("orders", reading.checkpoint())
    assert [(r["seq"], r["deleted"]) for r in rows(resumed)] == [(8, False), (9, True)]


def test_without_cursor_field_a_read_that_ends_without_a_token_is_refused(api: Api) -> None:
    config = api.config(pagination={"type": "cursor", "size": 3})
    reading = HttpJsonConnector(config).read("orders")
    rows(reading)
    with pytest.raises(RefusedRead) as refused:
        reading.checkpoint()
    assert refused.value.rule == "no_position"
    assert "restart from the beginning" in str(refused.value)


def test_429_is_retried_no_sooner_than_its_retry_after(api: Api) -> None:
    reading = HttpJsonConnector(api.config("/rate-limited/feed")).read("orders")
    assert len(rows(reading)) == 7
    hits = [hit for hit in api.hits() if hit[0].startswith("/rate-limited")]
    assert [hit[1] for hit in hits[:3]] == [200, 429, 200]
    limited, retried = (datetime.fromisoformat(hit[2]) for hit in hits[1:3])
    assert (retried - limited).total_seconds() >= 2  # Retry-After: 2, backoff 0.01 s


def test_a_500_on_one_page_is_retried_and_every_row_delivered(api: Api) -> None:
    reading = HttpJsonConnector(api.config("/failing/feed")).read("orders")
    assert [r["seq"] for r in rows(reading)] == list(range(1, 8))
    assert [hit[1] for hit in api.hits()][:3] == [200, 500, 200]


def test_a_server_still_failing_after_the_retries_is_unavailable_not_refused(api: Api) -> None:
    reading = HttpJsonConnector(api.config("/failing/feed", retries=1)).read("orders")
    with pytest.raises(SourceUnavailable, match="HTTP 500 after 1 attempts"):
        rows(reading)


@pytest.mark.parametrize(
    ("endpoint", "options", "rule", "says"),
    [
        ("/malformed/feed", {}, "malformed_json", "page 2"),
        ("/keyless/feed", {}, "record_missing_key", "record 3 has no order_id"),
        ("/html/feed", {}, "not_json", "text/html"),
        (
            "/feed",
            {"columns": {"seq": "int", "order_id": "str", "amount": "float", "deleted": "bool"}},
            "record_does_not_fit",
            "order_id str",
        ),
    ],
)
def test_a_page_that_is_not_what_was_declared_refuses_the_read_naming_it(
    api: Api, endpoint: str, options: dict, rule: str, says: str
) -> None:
    with pytest.raises(RefusedRead) as refused:
        rows(HttpJsonConnector(api.config(endpoint, **options)).read("orders"))
    assert refused.value.rule == rule
    assert says in str(refused.value)


def test_nested_fields_are_read_into_the_flat_columns_their_paths_name(api: Api) -> None:
    connector = HttpJsonConnector(api.config("/v1/order-changes", **NESTED))
    api.append({"order_id": 3, "deleted": True})
    reading = connector.read("orders")
    assert reading.schema.names == list(NESTED["columns"])  # flat: no struct reaches the file
    found = rows(reading)
    assert [(r["order_id"], r["customer_id"], r["country"]) for r in found[:2]] == [
        (1, 1001, "FR"),
        (2, 1002, "IT"),
    ]
    # A deletion's order holds its id only: the fields under it are nulls, not a refusal.
    assert found[-1] == {
        "seq": 8,
        "order_id": 3,
        "amount": None,
        "customer_id": None,
        "country": None,
        "deleted": True,
    }
    assert conformance(connector).failed == ()


@pytest.mark.parametrize(
    ("endpoint", "says"),
    [
        (
            "/unfit-object/v1/order-changes",
            "record 2: order.customer is string, not an object holding order.customer.id "
            "(column customer_id)",
        ),
        (
            "/unfit-value/v1/order-changes",
            'record 2: order.id is string "2", not the int column order_id declares',
        ),
    ],
)
def test_record_does_not_fit_names_the_nested_field_and_its_record(
    api: Api, endpoint: str, says: str
) -> None:
    with pytest.raises(RefusedRead) as refused:
        rows(HttpJsonConnector(api.config(endpoint, **NESTED)).read("orders"))
    assert refused.value.rule == "record_does_not_fit"
    assert f"{api.url}{endpoint} page 1" in str(refused.value)
    assert says in str(refused.value)
    assert "order_id int at order.id" in str(refused.value)  # the declaration it broke


def test_record_missing_key_names_the_nested_field_of_the_key(api: Api) -> None:
    with pytest.raises(RefusedRead) as refused:
        rows(HttpJsonConnector(api.config("/keyless/v1/order-changes", **NESTED)).read("orders"))
    assert refused.value.rule == "record_missing_key"
    assert "record 3 has no order.id, the key column order_id" in str(refused.value)


@pytest.mark.parametrize(
    ("paths", "problem"),
    [
        ({"total": "order.amount"}, "paths: 'total' is not one of the columns"),
        ({"order_id": "order..id"}, "paths: order_id: 'order..id' is not a dotted path"),
        ({"order_id": "seq"}, "paths: seq is read by more than one column"),
        (
            {"order_id": "amount.id"},
            "paths: amount is both column amount's value and the object holding column "
            "order_id's amount.id",
        ),
    ],
)
def test_paths_that_name_no_field_of_one_record_are_refused_by_validate(
    api: Api, paths: dict, problem: str
) -> None:
    problems = HttpJsonConnector(api.config(paths=paths)).validate()
    assert any(found.startswith(problem) for found in problems), problems


def test_a_paged_collection_changing_during_the_read_proves_no_snapshot(
    api: Api, tmp_path: Path
) -> None:
    config = api.config(
        "/offsets", pagination={"type": "offset", "size": 3}, feed=False, deleted_field=None
    )
    connector = HttpJsonConnector(config)
    reading = connector.read("orders")
    seen = [r["order_id"] for r in rows(reading)]
    # Order 1 went after the first page, shifting order 4 onto it: the read never saw order 4.
    assert 4 not in seen and 1 in seen
    proof = reading.proof()
    assert proof.shape is None and NOT_ONE_SNAPSHOT in proof.why
    complete = Contract(
        "orders", ("order_id",), {"pages": Shape.complete()}, types={"order_id": "int"}
    )
    request = next_extraction(Ledger.new(complete), "pages", datetime.now(UTC))
    target = tmp_path / "pages.parquet"
    with pytest.raises(RefusedRead) as refused:
        extract(connector, "orders", complete, request, target)
    assert refused.value.rule == "claims_more_than_read" and not target.exists()


def test_page_numbers_read_every_page_but_prove_no_shape(api: Api) -> None:
    config = api.config(
        "/pages", pagination={"type": "page", "size": 3}, feed=False, deleted_field=None
    )
    report = conformance(HttpJsonConnector(config))
    assert report.failed == ("proof_declares_a_shape",)
    assert NOT_ONE_SNAPSHOT in report.check("proof_declares_a_shape").detail


def test_an_export_then_the_feed_publish_the_log_at_the_servers_instants(
    api: Api, tmp_path: Path
) -> None:
    receiver = Receiver(lambda: sqlite3.connect(tmp_path / "warehouse.sqlite"), SQLITE)
    receiver.register(ORDERS)
    connector = HttpJsonConnector(api.config())

    def deliver(shape: str):
        request = next_extraction(receiver.ledger("orders"), shape, datetime.now(UTC))
        found = extract(connector, "orders", ORDERS, request, tmp_path / f"{shape}.parquet")
        return found, receiver.receive(found.path, found.manifest)

    export, receipt = deliver("export")
    assert receipt.outcome == "accepted" and export.manifest.generation == "after:7"
    assert export.proof.clock == "the server's 'as_of' in the last page"
    api.append({"order_id": 2, "amount": 21.0}, {"order_id": 5, "deleted": True})
    feed, receipt = deliver("feed")
    assert receipt.outcome == "accepted"
    assert (feed.manifest.since, feed.manifest.generation) == ("after:7", "after:9")
    assert (feed.manifest.rows, feed.manifest.tombstones) == (1, 1)
    with receiver.read("orders") as read:
        at = read.columns.index("order_id")
        assert sorted(row[at] for row in read.rows) == [1, 2, 3, 4, 6, 7]
