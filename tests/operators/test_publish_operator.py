"""Plan -> extract -> Gate -> Publish, run by dag.test() against a real receiver database."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from delivery_dags import (
    ReceiverConnection,
    Source,
    asset_events,
    orders_contract,
    pipeline,
    published,
    states,
    write_dag,
    xcom,
)

from dogana_core import Outcome, Receipt
from dogana_core.claims import NO_LIMIT
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.publish import dogana_asset

pytestmark = pytest.mark.airflow

ALL = ("plan", "extract", "gate", "publish")


def test_deliveries_publish_the_source_and_emit_the_claims(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A full read, then changes with a soft delete: the published rows equal the live source
    at produced_at, the ledger is exact at it, and each Asset event's extra says so."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    module = write_dag(
        airflow_home,
        f"flow_{uid}",
        pipeline(
            conn_id,
            table,
            contract_path,
            source,
            tmp_path,
            plan="fresh_as_of='{{ data_interval_end }}',",
        ),
    )
    hook = DoganaHook(conn_id)

    first = module.dag.test()
    assert states(first) == dict.fromkeys(ALL, "success")
    request = xcom(first, "plan")
    assert request["shape"] == "full"  # nothing is known yet: only a full read can start
    receipt = Receipt.from_dict(xcom(first, "publish"))
    assert receipt.outcome is Outcome.ACCEPTED
    assert published(hook, table) == source.live() == {1: "one", 2: "two"}

    source.put(3, "three")
    source.put(1, "uno")
    source.soft_delete(2)
    second = module.dag.test()
    assert states(second) == dict.fromkeys(ALL, "success")
    assert xcom(second, "plan")["shape"] == "changes"  # cheaper, from the held date
    changes = Receipt.from_dict(xcom(second, "publish"))
    assert changes.manifest.rows == 2 and changes.manifest.tombstones == 1
    assert published(hook, table) == source.live() == {1: "uno", 3: "three"}

    p = changes.manifest.produced_at
    ledger = hook.receiver.ledger(table)
    claims = ledger.claims(p, limit=NO_LIMIT)
    assert (claims.complete_as_of, claims.deletions_as_of, claims.exact_as_of) == (p, p, p)
    assert ledger.publication_id == changes.publication_id
    assert hook.receiver.verify(table).head == changes.publication_id

    asset = dogana_asset(table, conn_id)
    assert asset.uri == f"dogana://{conn_id}/{table}"
    extras = asset_events(asset.uri)
    assert len(extras) == 2
    assert extras[0]["publication_id"] == receipt.publication_id
    assert extras[-1] == {
        "tables": [table],
        "complete_as_of": p.isoformat(),
        "deletions_as_of": p.isoformat(),
        "exact_as_of": p.isoformat(),
        "publication_id": changes.publication_id,
        "window": None,
    }
