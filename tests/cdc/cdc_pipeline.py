"""A source table (PostgreSQL with its pipeline's slot, or MariaDB) and a delivery DAG reading
its log."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operators"))

from delivery_dags import sqlite_connection, write_dag

from dogana_core import Contract, Shape

COLUMNS = {
    "id": "int",
    "amount": "decimal(12,2)",
    "at": "datetime",
    "name": "str",
    "flag": "bool",
}
DDL = "id bigint PRIMARY KEY, amount numeric(12,2), at timestamptz, name text, flag boolean"


def log_contract(table: str) -> Contract:
    """A complete read issuing the slot's position, then the log by sequence with tombstones."""
    return Contract(
        table,
        ("id",),
        {
            "snapshot": Shape.complete(cost=100),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )


@dataclass
class PgTable:
    """A source table, the connection id that reaches it and the pipeline's slot."""

    db: Any
    table: str
    conn_id: str
    slot: str

    def execute(self, sql: str, params: Any = None) -> Any:
        return self.db.execute(sql, params)

    def rows(self) -> dict[int, tuple[Any, ...]]:
        found = self.db.execute(f'SELECT id, amount, at, name, flag FROM "{self.table}"')
        return {row[0]: tuple(row[1:]) for row in found.fetchall()}

    def config(self, **options: Any) -> dict[str, Any]:
        return {
            "kind": "pg_logical",
            "conn_id": self.conn_id,
            "table": self.table,
            "slot": self.slot,
            **options,
        }

    def confirmed(self) -> int | None:
        from dogana_provider.connectors.pgoutput import lsn_of

        row = self.db.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (self.slot,),
        ).fetchone()
        return None if row is None else lsn_of(row[0])


def drop_slot(db: Any, slot: str) -> None:
    db.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )


@dataclass
class Pipeline:
    """plan >> extract (the pg_logical connector) >> gate >> publish, on a SQLite receiver."""

    module: Any
    receiver_id: str
    table: str

    def run(self) -> Any:
        return self.module.dag.test()

    def published(self) -> dict[int, tuple[Any, ...]]:
        from dogana_provider.hooks.dogana import DoganaHook

        with DoganaHook(self.receiver_id).receiver.read(self.table) as snapshot:
            at = [snapshot.columns.index(c) for c in ("id", "amount", "at", "name", "flag")]
            return {row[at[0]]: tuple(row[i] for i in at[1:]) for row in snapshot.rows}

    def ledger(self) -> Any:
        from dogana_provider.hooks.dogana import DoganaHook

        return DoganaHook(self.receiver_id).receiver.ledger(self.table)


def write_pipeline(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: PgTable | MariaTable,
    *,
    gate_options: str = "",
) -> Pipeline:
    receiver_id = f"receiver_{source.table[-8:]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    contract_path = tmp_path / "contract.json"
    contract_path.write_text(log_contract(source.table).to_json(), encoding="utf-8")
    output = (tmp_path / "deliveries" / "{{ run_id | replace(':', '_') }}").as_uri()
    connector = source.config(columns=COLUMNS, fetch_rows=2)
    module = write_dag(
        airflow_home,
        f"cdc_{source.table[-8:]}",
        f"""
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
                task_id="extract",
                contract={str(contract_path)!r},
                connector={connector!r},
                output_folder={output!r},
            )
            gate = GateOperator(task_id="gate", receiver_conn_id={receiver_id!r}{gate_options})
            publish = PublishOperator(
                task_id="publish", receiver_conn_id={receiver_id!r}, table={source.table!r}
            )
            plan >> extract >> gate >> publish
        """,
    )
    return Pipeline(module, receiver_id, source.table)


MARIADB_DDL = "id BIGINT PRIMARY KEY, amount DECIMAL(12,2), at DATETIME(6), name TEXT, flag BOOLEAN"


@dataclass
class MariaTable:
    """A MariaDB source table and the connection id that reaches it; no slot: the position
    is the receiver's alone."""

    db: Any
    table: str
    conn_id: str

    def execute(self, sql: str, params: Any = None) -> Any:
        cursor = self.db.cursor()
        cursor.execute(sql, params)
        return cursor

    def rows(self) -> dict[int, tuple[Any, ...]]:
        found = self.execute(f"SELECT id, amount, at, name, flag FROM `{self.table}`")
        return {row[0]: tuple(row[1:]) for row in found.fetchall()}

    def config(self, **options: Any) -> dict[str, Any]:
        return {"kind": "mariadb_binlog", "conn_id": self.conn_id, "table": self.table, **options}


def comparable(rows: dict[int, tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    """Rows (amount, at, name, flag by id) as comparable values, whichever database holds them."""

    def value(column: int, v: Any) -> Any:
        if v is None:
            return None
        if column == 0:
            return Decimal(str(v)).quantize(Decimal("0.01"))
        if column == 1:
            instant = v if isinstance(v, datetime) else datetime.fromisoformat(str(v))
            return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant
        if column == 3:
            return bool(v)
        return v

    return {key: tuple(value(i, v) for i, v in enumerate(row)) for key, row in rows.items()}
