"""A source table (PostgreSQL with its pipeline's slot, or MariaDB) and a delivery DAG reading
its log."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operators"))

from delivery_dags import four_operators, sqlite_connection, write_dag

from dogana_core import Contract, Shape

COLUMNS = {
    "id": "int",
    "amount": "decimal(12,2)",
    "at": "datetime",
    "name": "str",
    "flag": "bool",
}
DDL = "id bigint PRIMARY KEY, amount numeric(12,2), at timestamptz, name text, flag boolean"


def log_contract(table: str, key: str = "id") -> Contract:
    """A complete read issuing the slot's position, then the log by sequence with tombstones."""
    return Contract(
        table,
        (key,),
        {
            "snapshot": Shape.complete(cost=100),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        deleted_column="deleted",
        types={key: "int", "deleted": "bool"},
    )


def postgres_connection(database: str) -> str:
    """An AIRFLOW_CONN_* value naming a database of the PostgreSQL server the tests use."""
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": "127.0.0.1",
            "port": 5432,
            "login": "postgres",
            "schema": database,
        }
    )


def mariadb_connection(database: str) -> str:
    """An AIRFLOW_CONN_* value naming a database of the MariaDB server the tests use."""
    return json.dumps(
        {
            "conn_type": "mysql",
            "host": "127.0.0.1",
            "port": 3306,
            "login": "root",
            "schema": database,
        }
    )


def write_group_dag(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    connector: dict[str, Any],
    contracts: list[Contract],
    schema_policy: Any = None,
) -> tuple[Any, str]:
    """One delivery_task_group reading a table, or a group's tables from one slot (group id
    "both"), through the connector (a configuration) into a SQLite receiver, under the schema
    policy given (by default none declared); the DAG's module and the receiver's connection
    id."""
    name = str(connector.get("slot") or connector.get("table") or connector["tables"][0])[-8:]
    receiver_id = f"receiver_{name}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    paths = []
    for contract in contracts:
        path = tmp_path / f"{contract.table}.json"
        path.write_text(contract.to_json(), encoding="utf-8")
        paths.append(str(path))
    output = (tmp_path / "deliveries" / "{{ run_id | replace(':', '_') }}").as_uri()
    tables = repr(paths[0]) if len(paths) == 1 else f'group={paths!r}, group_id="both"'
    module = write_dag(
        airflow_home,
        f"cdc_group_{name}",
        f"""
        from dogana_provider.task_groups.delivery import delivery_task_group

        with dag:
            delivery_task_group(
                {tables},
                receiver_conn_id={receiver_id!r},
                extract={{"connector": {connector!r}, "output_folder": {output!r}}},
                fresh_as_of="{{{{ data_interval_end }}}}",
                schema_policy={schema_policy!r},
            )
        """,
    )
    return module, receiver_id


@dataclass
class PgTable:
    """A source table, the connection id that reaches it and the pipeline's slot."""

    db: Any
    table: str
    conn_id: str
    slot: str
    now: ClassVar[str] = "now()"
    ddl: ClassVar[str] = DDL

    @property
    def quoted(self) -> str:
        return f'"{self.table}"'

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

    def group_config(self, tables: list[str], **options: Any) -> dict[str, Any]:
        """A group of tables read from the pipeline's slot."""
        return {
            "kind": "pg_logical",
            "conn_id": self.conn_id,
            "tables": tables,
            "slot": self.slot,
            **options,
        }

    def session(self) -> PgTable:
        """The same table on a connection of its own (for another thread)."""
        import psycopg

        return PgTable(
            psycopg.connect(self.db.info.dsn, autocommit=True), self.table, self.conn_id, self.slot
        )

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


SLOT = re.compile(r"dogana_cdc_([0-9]+)_[0-9a-f]{8}")


def sweep_stale_slots(db: Any) -> list[str]:
    """Drop the slots killed test runs left, each holding the server's WAL until dropped, and
    name them. A test's slot is named dogana_cdc_<pid>_<uid> after the pytest process that
    made it (conftest.py's source); one whose process is gone, and that no session is reading,
    is dropped. A slot of a run still going, here or in another worktree, is kept, whether
    reading or between its reads."""
    found = db.execute(
        "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'dogana\\_cdc\\_%' "
        "AND NOT active"
    ).fetchall()
    swept = []
    for (slot,) in found:
        made = SLOT.fullmatch(slot)
        if made is not None and not _running(int(made.group(1))):
            drop_slot(db, slot)
            swept.append(slot)
    return swept


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


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
    extract_options: str = "",
    name: str = "cdc",
) -> Pipeline:
    receiver_id = f"receiver_{source.table[-8:]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    contract_path = tmp_path / "contract.json"
    contract_path.write_text(log_contract(source.table).to_json(), encoding="utf-8")
    output = (tmp_path / "deliveries" / "{{ run_id | replace(':', '_') }}").as_uri()
    connector = source.config(columns=COLUMNS, fetch_rows=2)
    extract = f"connector={connector!r}, output_folder={output!r}{extract_options}"
    body = four_operators(
        receiver_id, source.table, contract_path, extract, gate=gate_options.lstrip(", ")
    )
    module = write_dag(airflow_home, f"{name}_{source.table[-8:]}", body)
    return Pipeline(module, receiver_id, source.table)


MARIADB_DDL = "id BIGINT PRIMARY KEY, amount DECIMAL(12,2), at DATETIME(6), name TEXT, flag BOOLEAN"


@dataclass
class MariaTable:
    """A MariaDB source table and the connection id that reaches it; no slot: the position
    is the receiver's alone."""

    db: Any
    table: str
    conn_id: str
    now: ClassVar[str] = "NOW(6)"
    ddl: ClassVar[str] = MARIADB_DDL

    @property
    def quoted(self) -> str:
        return f"`{self.table}`"

    def execute(self, sql: str, params: Any = None) -> Any:
        cursor = self.db.cursor()
        cursor.execute(sql, params)
        return cursor

    def rows(self) -> dict[int, tuple[Any, ...]]:
        found = self.execute(f"SELECT id, amount, at, name, flag FROM `{self.table}`")
        return {row[0]: tuple(row[1:]) for row in found.fetchall()}

    def config(self, **options: Any) -> dict[str, Any]:
        return {"kind": "mariadb_binlog", "conn_id": self.conn_id, "table": self.table, **options}

    def group_config(self, tables: list[str], **options: Any) -> dict[str, Any]:
        """A group of tables read from one pass over the binlog."""
        return {"kind": "mariadb_binlog", "conn_id": self.conn_id, "tables": tables, **options}

    def session(self) -> MariaTable:
        """The same table on a connection of its own (for another thread)."""
        import MySQLdb

        db = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", db="test", autocommit=True)
        db.cursor().execute("SET time_zone = '+00:00'")
        return MariaTable(db, self.table, self.conn_id)


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


def read_in_cuts(
    connector: Any, table: str, position: Any, limits: tuple[int | None, ...]
) -> tuple[list[Any], list[Any]]:
    """A log read from position in parts, each resuming at the last one's checkpoint: the
    parts (Arrow tables) and the shape each proved."""
    import pyarrow as pa

    parts, shapes = [], []
    for limit in limits:
        reading = connector.read(table, since=position, limit=limit)
        parts.append(pa.Table.from_batches(list(reading), schema=reading.stream.schema()))
        shapes.append(reading.proof().shape)
        position = reading.checkpoint()
    return parts, shapes


# What the tests of both log connectors share ---------------------------------------------------

FULL_READ = "a full read resets the chain"
TASKS = ("plan", "extract", "gate", "publish")


def log_connector(source: PgTable | MariaTable, **options: Any) -> Any:
    """The source's log connector (pg_logical or mariadb_binlog), its columns declared."""
    from dogana_provider.connectors import MariadbBinlogConnector, PgLogicalConnector

    config = source.config(**{"columns": COLUMNS, **options})
    kind = config.pop("kind")
    return {"pg_logical": PgLogicalConnector, "mariadb_binlog": MariadbBinlogConnector}[kind](
        config
    )


def started(source: PgTable | MariaTable) -> tuple[Any, int]:
    """A first full read (on PostgreSQL, the one that makes the slot); the position it issued."""
    source.execute(f"INSERT INTO {source.quoted} VALUES (1, 1, {source.now}, 'one', true)")
    reader = log_connector(source)
    reading = reader.read(source.table)
    list(reading)
    position = reading.proof().position
    assert isinstance(position, int)
    return reader, position


def refused(reader: Any, table: str, since: int) -> Any:
    """The refusal of a log read from since, which tells the person to run a full read."""
    from dogana_provider.connectors import RefusedRead

    with pytest.raises(RefusedRead) as raised:
        list(reader.read(table, since=since))
    assert FULL_READ in str(raised.value)
    return raised.value


def delivered(run: Any) -> tuple[Any, Any]:
    """A run's manifest and receipt, every task of it a success."""
    from airflow_runs import states, xcom

    from dogana_core.gate import Receipt
    from dogana_core.manifest import Manifest

    assert states(run) == dict.fromkeys(TASKS, "success")
    return Manifest.from_dict(xcom(run, "extract")["manifest"]), Receipt.from_dict(
        xcom(run, "publish")
    )


class Folded:
    """A table's state built from its log: each key's last live row, tombstones removing it."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}

    def apply(self, batches: list[Any]) -> None:
        for batch in batches:
            for row in batch.to_pylist():
                deleted = row.pop("deleted")
                if deleted:
                    self.rows.pop(row["id"], None)
                else:
                    self.rows[row["id"]] = row


def snapshot_state(source: PgTable | MariaTable) -> dict[int, dict[str, Any]]:
    """The table read in one snapshot by the SQL connector, rows by id."""
    from dogana_provider.connectors import SqlConnector

    reader = SqlConnector(
        {"conn_id": source.conn_id, "tables": [source.table], "key": {source.table: ["id"]}}
    )
    with reader:
        return {row["id"]: row for b in reader.read(source.table) for row in b.to_pylist()}


def assert_log_folds_to_the_snapshot(
    reader: Any, source: PgTable | MariaTable, batches: list[list[Any]], upsert: str
) -> None:
    """A whole read, then after each batch of writes (upsert, or delete by id) a read of the
    log from the last position: the state folded from the reads equals the table read in one
    snapshot, each time."""
    folded = Folded()
    with reader:
        reading = reader.read(source.table)
        folded.apply(list(reading))
        position = reading.proof().position
        for batch in batches:
            for op, key, row in batch:
                if op == "delete":
                    source.execute(f"DELETE FROM {source.quoted} WHERE id = %s", (key,))
                    continue
                source.execute(upsert, (key, *row))
            reading = reader.read(source.table, since=position)
            folded.apply(list(reading))
            position = reading.proof().position
            assert folded.rows == snapshot_state(source)
