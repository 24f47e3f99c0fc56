"""DAG files, a scripted source and the metadata-database reads the operator tests share.

A test writes a DAG file under ``airflow_home / "dags"`` (dag.test() parses the DAGs folder),
loads it and runs it with dag.test(). The source is a JSON file of rows the test edits between
runs; ``extract`` stands in for ExtractOperator: it reads the source "in one snapshot" at the
source's clock, writes Parquet with DeliveryWriter and pushes {"manifest", "uri"} as the real
extractor does.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from airflow_runs import asset_events as asset_events
from airflow_runs import states as states
from airflow_runs import xcom as xcom
from soft_deletes import orders_contract as orders_contract

from dogana_core import Contract
from dogana_core.planner import ExtractionRequest
from dogana_provider.delivery.files import DeliveryWriter

if TYPE_CHECKING:
    # Not at import: conftest.py imports this module before pytest_configure points Airflow at
    # the temporary AIRFLOW_HOME, and Airflow reads its configuration when first imported.
    from dogana_provider.hooks.dogana import DoganaHook

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("day", pa.date32()),
        ("name", pa.string()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        ("deleted", pa.bool_()),
    ]
)


class Source:
    """A soft-deleting source table kept as JSON: {id: {name, day, updated_at, deleted}}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():
            path.write_text("{}", encoding="utf-8")

    def rows(self) -> dict[int, dict[str, Any]]:
        data = json.loads(self.path.read_text(encoding="utf-8"))
        return {int(key): value for key, value in data.items()}

    def _save(self, rows: dict[int, dict[str, Any]]) -> None:
        self.path.write_text(json.dumps(rows), encoding="utf-8")

    def put(self, id_: int, name: str, day: int = 0) -> None:
        rows = self.rows()
        rows[id_] = {
            "name": name,
            "day": (date(2026, 1, 1) + timedelta(days=day)).isoformat(),
            "updated_at": _tick().isoformat(),
            "deleted": False,
        }
        self._save(rows)

    def soft_delete(self, id_: int) -> None:
        rows = self.rows()
        rows[id_]["deleted"] = True
        rows[id_]["updated_at"] = _tick().isoformat()
        self._save(rows)

    def live(self) -> dict[int, str]:
        return {id_: row["name"] for id_, row in self.rows().items() if not row["deleted"]}


def _tick() -> datetime:
    """The source's clock for a change: strictly later than any earlier change or read."""
    time.sleep(0.002)
    return datetime.now(UTC)


def snapshot_after(until: datetime) -> datetime:
    """The instant of a read taken at or after the planned boundary, by the source's clock."""
    while datetime.now(UTC) <= until:
        time.sleep(0.01)
    return datetime.now(UTC)


def extract_group(
    requests: list[dict[str, Any]], sources: dict[str, tuple[str, str]], folder: str
) -> list[dict[str, Any]]:
    """Every table of a group read "in one snapshot": one produced_at for every manifest.

    sources maps each table to its contract's path and its source's path.
    """
    until = max(ExtractionRequest.from_dict(request).until for request in requests)
    produced_at = snapshot_after(until)
    return [
        extract(request, *sources[request["table"]], folder, produced_at=produced_at)
        for request in requests
    ]


def extract(
    request: dict[str, Any],
    contract_path: str,
    source_path: str,
    folder: str,
    *,
    tamper: bool = False,
    produced_at: datetime | None = None,
) -> dict[str, Any]:
    """The stand-in extractor: read the source as the request asks, write it, declare it."""
    contract = Contract.from_json(Path(contract_path).read_bytes())
    req = ExtractionRequest.from_dict(request)
    if produced_at is None:
        produced_at = snapshot_after(req.until)
    rows = Source(Path(source_path)).rows()
    shape = contract.shape(req.shape)
    chosen = []
    for id_, row in sorted(rows.items()):
        updated = datetime.fromisoformat(row["updated_at"])
        if shape.is_complete:
            if not row["deleted"]:
                chosen.append((id_, row, False))
        elif req.since < updated <= produced_at:  # type: ignore[operator]
            chosen.append((id_, row, row["deleted"]))
    path = Path(folder) / f"{contract.table}-{uuid.uuid4().hex[:8]}.parquet"
    with DeliveryWriter(path, contract, SCHEMA) as writer:
        writer.write(batch(chosen))
        written = writer.close()
    manifest = req.manifest(
        contract,
        produced_at,
        rows=written.rows,
        tombstones=written.tombstones,
        content_hash=written.sha256,
    )
    if tamper:  # the file loses its last row after the manifest was declared
        chosen = chosen[:-1]
        with DeliveryWriter(path, contract, SCHEMA, overwrite=True) as writer:
            writer.write(batch(chosen))
            writer.close()
    return {"manifest": manifest.to_dict(), "uri": path.as_uri()}


def batch(chosen: list[tuple[int, dict[str, Any], bool]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [
            {
                "id": id_,
                "day": date.fromisoformat(row["day"]),
                "name": None if deleted else row["name"],
                "updated_at": datetime.fromisoformat(row["updated_at"]),
                "deleted": deleted,
            }
            for id_, row, deleted in chosen
        ],
        schema=SCHEMA,
    )


# DAG files --------------------------------------------------------------------------------------


def write_dag(airflow_home: Path, dag_id: str, body: str) -> Any:
    """Write a DAG file under the DAGs folder, load it, and return its module (module.dag)."""
    header = textwrap.dedent(
        f"""
        import datetime
        from airflow.sdk import DAG, task

        START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
        dag = DAG({dag_id!r}, schedule=None, start_date=START, catchup=False)
        """
    )
    path = airflow_home / "dags" / f"{dag_id}.py"
    path.write_text(header + textwrap.dedent(body), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(dag_id, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class ReceiverConnection:
    """A receiver behind a connection id (the receiver_connection fixture), and its kind."""

    conn_id: str
    kind: str


def published(hook: DoganaHook, table: str) -> dict[int, str]:
    """The published rows, id -> name, and nothing else of the table."""
    with hook.receiver.read(table) as snapshot:
        id_at, name_at = snapshot.columns.index("id"), snapshot.columns.index("name")
        return {row[id_at]: row[name_at] for row in snapshot.rows}


def sqlite_connection(path: Path) -> str:
    """An AIRFLOW_CONN_* value naming a SQLite database file (SqliteHook)."""
    return json.dumps({"conn_type": "sqlite", "host": str(path)})


def pipeline(
    conn_id: str,
    table: str,
    contract_path: Path,
    source: Source,
    folder: Path,
    *,
    plan: str = "",
    tamper: bool = False,
    publish: str = "",
    gate: str = "",
) -> str:
    """A DAG body: Plan -> extract (the stand-in) -> Gate -> Publish, for one table.

    plan, gate and publish are more keyword arguments of those operators, as Python source;
    publish names the table when it says nothing else.
    """
    publish = publish or f"table={table!r}"
    return f"""
        import delivery_dags
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator, dogana_asset

        with dag:
            planned = PlanDeliveryOperator(
                task_id="plan",
                contract={str(contract_path)!r},
                receiver_conn_id={conn_id!r},
                {plan}
            )

            @task
            def extract(request):
                return delivery_dags.extract(
                    request, {str(contract_path)!r}, {str(source.path)!r}, {str(folder)!r},
                    tamper={tamper!r},
                )

            gate = GateOperator(task_id="gate", receiver_conn_id={conn_id!r}, {gate})
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={conn_id!r}, {publish}
            )
            extract(planned.output) >> gate >> publish
        """


def four_operators(
    receiver_id: str, table: str, contract_path: Path, extract: str, *, gate: str = ""
) -> str:
    """A DAG body: PlanDeliveryOperator -> ExtractOperator -> GateOperator -> PublishOperator,
    for one table, planned fresh as of the run's data_interval_end.

    extract and gate are more keyword arguments of those operators, as Python source (json is
    imported for them)."""
    return f"""
        import json

        from dogana_provider.operators.extract import ExtractOperator
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            plan = PlanDeliveryOperator(
                task_id="plan",
                contract={str(contract_path)!r},
                receiver_conn_id={receiver_id!r},
                fresh_as_of="{{{{ data_interval_end }}}}",
            )
            extract = ExtractOperator(
                task_id="extract", contract={str(contract_path)!r}, {extract}
            )
            gate = GateOperator(task_id="gate", receiver_conn_id={receiver_id!r}, {gate})
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={receiver_id!r}, table={table!r}
            )
            plan >> extract >> gate >> publish
        """


def publish_meanwhile(
    request: dict[str, Any], contract_path: str, source_path: str, folder: str, conn_id: str
) -> str:
    """Another run of the same DAG, planned from the same ledger: it reads the source later and
    publishes first. Returns its publication id."""
    from dogana_core.gate import Outcome
    from dogana_core.manifest import Manifest
    from dogana_provider.hooks.dogana import DoganaHook

    receiver = DoganaHook(conn_id).receiver
    receiver.register(Contract.from_json(Path(contract_path).read_bytes()))
    delivered = extract(request, contract_path, source_path, folder)
    path = Path(delivered["uri"].removeprefix("file://"))
    receipt = receiver.receive(path, Manifest.from_dict(delivered["manifest"]))
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
    return receipt.publication_id


def publish_group_meanwhile(
    requests: list[dict[str, Any]], sources: dict[str, tuple[str, str]], folder: str, conn_id: str
) -> dict[str, str]:
    """Another run of the same group DAG, planned from the same ledgers: it reads every table
    later, in one snapshot, and publishes the group first. Returns each table's publication id."""
    from dogana_core.gate import Outcome
    from dogana_core.group import Group
    from dogana_core.manifest import Manifest
    from dogana_provider.hooks.dogana import DoganaHook

    receiver = DoganaHook(conn_id).receiver
    contracts = [Contract.from_json(Path(sources[r["table"]][0]).read_bytes()) for r in requests]
    for contract in contracts:
        receiver.register(contract)
    deliveries = {}
    for delivered in extract_group(requests, sources, folder):
        manifest = Manifest.from_dict(delivered["manifest"])
        deliveries[manifest.table] = (Path(delivered["uri"].removeprefix("file://")), manifest)
    receipts = receiver.receive_group(Group(tuple(contracts)), deliveries)
    assert all(r.outcome is Outcome.ACCEPTED for r in receipts), [r.failed for r in receipts]
    return {receipt.table: receipt.publication_id for receipt in receipts}
