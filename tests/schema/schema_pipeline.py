"""One table delivered from a source table by the ExtractOperator and the receiver, driven
directly (execute() and Receiver.receive): what a schema change does to a delivery, without a
DAG run around each step."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk import ObjectStoragePath
from schema_databases import Database

from dogana_core import Contract, Shape
from dogana_core.gate import Receipt
from dogana_core.manifest import Manifest
from dogana_core.planner import Requirement, plan_delivery
from dogana_provider.dialects import declared_types
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.receiver.transactions import transaction
from dogana_provider.schema.versions import SchemaVersion, SchemaVersions


def _bound(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


class Pipeline:
    """Source table src_<uid> delivered as table t_<uid>, complete reads keyed by id."""

    def __init__(
        self, database: Database, uid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.database = database
        self.source = f"src_{uid}"
        self.table = f"t_{uid}"
        self.source_conn = f"src_{uid}"
        self.receiver_conn = f"rcv_{uid}"
        self.folder = tmp_path / "deliveries"
        monkeypatch.setenv(f"AIRFLOW_CONN_{self.source_conn.upper()}", database.airflow)
        receiver = database.airflow
        if database.name == "sqlite":  # a file of its own: the source's is read in a snapshot
            receiver = receiver.replace("source.db", "receiver.db")
        monkeypatch.setenv(f"AIRFLOW_CONN_{self.receiver_conn.upper()}", receiver)
        self.contract = Contract(
            self.table, ("id",), {"full": Shape.complete()}, types={"id": "int"}
        )
        self.runs = 0
        self.pushed: dict[str, Any] | None = None

    @property
    def hook(self) -> DoganaHook:
        return DoganaHook(self.receiver_conn)

    def create(self, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> None:
        """The source table made (again) with these columns (name, kind in Database.ddl, or
        'kind NOT NULL') and rows."""
        ddl = self.database.ddl
        q = self.database.dialect.quote
        spelled = []
        for name, kind in columns:
            base = kind.removesuffix(" NOT NULL")
            spelled.append(f"{q(name)} {ddl[base]}{' NOT NULL' if kind != base else ''}")
        marks = ", ".join([self.database.dialect.placeholder] * len(columns))
        self.database.run(
            f"DROP TABLE IF EXISTS {q(self.source)}",
            f"CREATE TABLE {q(self.source)} ({', '.join(spelled)}, PRIMARY KEY ({q('id')}))",
            # Decimals as text: sqlite3 binds no Decimal, and every database reads the text.
            *[
                (f"INSERT INTO {q(self.source)} VALUES ({marks})", [_bound(v) for v in row])
                for row in rows
            ],
        )

    def deliver(self, policy: Any = None, *, checked: bool = True) -> Receipt:
        """Plan, extract (checking the schema, unless not checked: an extract that does not
        know the receiver) and receive one complete read."""
        self.extract_operator(policy, checked=checked).execute(self.context())
        return self.receive_last()

    def context(self) -> dict[str, Any]:
        """What an extract reads of its task's context: the DAG and the run its origin names."""
        return {"dag": SimpleNamespace(dag_id=f"schema_{self.table}"), "run_id": f"run{self.runs}"}

    def receive_last(self) -> Receipt:
        """Receive what the last extract pushed."""
        assert self.pushed is not None
        path = str(ObjectStoragePath(self.pushed["uri"]).path)
        return self.hook.receiver.receive(path, Manifest.from_dict(self.pushed["manifest"]))

    def extract_operator(self, policy: Any = None, *, checked: bool = True) -> ExtractOperator:
        """The next read's ExtractOperator, planned against the receiver's ledger; what its
        execute pushes is kept for receive_last."""
        ledger = self.hook.receiver.register(self.contract)
        request = plan_delivery(ledger, Requirement(self.table, datetime.now(UTC)))
        assert request is not None
        self.runs += 1
        pipeline = self

        class Kept(ExtractOperator):
            def execute(self, context: Any) -> Any:
                pipeline.pushed = super().execute(context)
                return pipeline.pushed

        return Kept(
            task_id="extract",
            source_conn_id=self.source_conn,
            receiver_conn_id=self.receiver_conn if checked else None,
            contract=self.contract,
            request=request.to_dict(),
            source_table=self.source,
            output_folder=str(self.folder / str(self.runs)),
            schema_policy=policy,
        )

    # What a refusal must leave as it was ---------------------------------------------------------

    def state(self) -> tuple[Any, ...]:
        """Published rows, ledger, receipts, schema versions and the published columns' types."""
        receiver = self.hook.receiver
        with receiver.read(self.table) as read:
            rows = sorted(read.rows)
            ledger = read.ledger.to_dict()
        return (
            rows,
            ledger,
            [r.to_dict() for r in receiver.receipts(self.table)],
            self.versions(),
            self.published_types(),
        )

    def versions(self) -> list[SchemaVersion]:
        receiver = self.hook.receiver
        versions = SchemaVersions(receiver.dialect, receiver.store.prefix)
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            return versions.history(connection, self.table)

    def published_types(self) -> dict[str, str]:
        receiver = self.hook.receiver
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            return declared_types(connection, receiver.dialect, self.table)
