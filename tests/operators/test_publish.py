"""Plan -> extract -> Gate -> Publish, run by dag.test() against a real receiver database."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from delivery_dags import (
    Source,
    asset_events,
    orders_contract,
    pipeline,
    sqlite_connection,
    states,
    write_dag,
    xcom,
)

from dogana_core.gate import Receipt
from dogana_provider.hooks.dogana import DoganaHook

pytestmark = pytest.mark.airflow


def published(hook: DoganaHook, table: str) -> dict[int, str]:
    with hook.receiver.read(table) as snapshot:
        id_at, name_at = snapshot.columns.index("id"), snapshot.columns.index("name")
        return {row[id_at]: row[name_at] for row in snapshot.rows}


def test_a_delivery_is_planned_extracted_gated_and_published(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"receiver_{uid}", f"orders_{uid}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    contract = orders_contract(table)
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(contract.to_json(), encoding="utf-8")
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
    run = module.dag.test()
    assert states(run) == {t: "success" for t in ("plan", "extract", "gate", "publish")}
    receipt = Receipt.from_dict(xcom(run, "publish"))
    hook = DoganaHook(conn_id)
    assert published(hook, table) == {1: "one", 2: "two"}
    ledger = hook.receiver.ledger(table)
    claims = ledger.claims(receipt.manifest.produced_at, limit=timedelta.max)
    assert claims.exact_as_of == receipt.manifest.produced_at
    events = asset_events(f"dogana://{conn_id}/{table}")
    assert events[-1]["exact_as_of"] == receipt.manifest.produced_at.isoformat()
    assert events[-1]["publication_id"] == receipt.publication_id
