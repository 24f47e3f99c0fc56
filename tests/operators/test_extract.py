"""ExtractOperator in real DAG runs (dag.test() on a migrated metadata database), no mocks.

Each DAG is a file under the DAGs folder: a plan task hands over the request as the planner
would (a wire dict in XCom), the extract task reads the source in one snapshot, and the test
reads the XCom it pushed, the file at its URI, and has the reference receiver decide it.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest
from delivery_dags import sqlite_connection, states, write_dag, xcom

from dogana_core import Contract, Shape
from dogana_core.gate import Outcome
from dogana_core.manifest import Manifest
from dogana_core.planner import ExtractionRequest
from dogana_provider.cli import main as cli
from dogana_provider.dialects import SQLITE
from dogana_provider.receiver import Receiver

pytestmark = pytest.mark.airflow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def contract_for(table: str) -> Contract:
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(),
            "changes": Shape.changes(checkpoint="timestamp", tombstones=True),
        },
        cursor_column="updated_at",
        deleted_column="deleted",
        types={"id": "int", "updated_at": "datetime", "deleted": "bool"},
    )


ROWS = [
    (1, "one", T0 + timedelta(hours=1), False),
    (2, "two", T0 + timedelta(hours=2), False),
    (3, "three", T0 + timedelta(hours=3), True),
    (4, "four", T0 + timedelta(hours=4), False),
]


def sqlite_source(path: Path, tables: list[str]) -> None:
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode = WAL")
    for table in tables:
        connection.execute(
            f"CREATE TABLE {SQLITE.quote(table)} (id INTEGER PRIMARY KEY, name TEXT, "
            "updated_at DATETIME, deleted BOOLEAN)"
        )
        connection.executemany(
            f"INSERT INTO {SQLITE.quote(table)} VALUES (?, ?, ?, ?)",
            [(i, n, u.isoformat(), d) for i, n, u, d in ROWS],
        )
    connection.commit()
    connection.close()


def sqlite_source_behind(
    conn_id: str, path: Path, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite source of ROWS in table, at path, reached through the connection conn_id."""
    sqlite_source(path, [table])
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(path))


@pytest.fixture
def postgres_tables(postgres_url: str) -> Iterator[Callable[[list[str]], None]]:
    created: list[str] = []

    def create(tables: list[str]) -> None:
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            for table in tables:
                connection.execute(
                    f'CREATE TABLE "{table}" (id BIGINT PRIMARY KEY, name TEXT, '
                    "updated_at TIMESTAMPTZ, deleted BOOLEAN)"
                )
                with connection.cursor() as cursor:
                    cursor.executemany(f'INSERT INTO "{table}" VALUES (%s, %s, %s, %s)', ROWS)
                created.append(table)

    yield create
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for table in created:
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')


def dogana_check(path: str, contract: Contract, manifest: Manifest, folder: Path) -> None:
    (folder / "c.json").write_text(contract.to_json(), encoding="utf-8")
    (folder / "m.json").write_text(manifest.to_json(), encoding="utf-8")
    argv = [
        "check",
        path,
        "--contract",
        str(folder / "c.json"),
        "--manifest",
        str(folder / "m.json"),
    ]
    assert cli.main(argv) == 0


def receive(path: str, contract: Contract, manifest: Manifest, database: Path) -> Outcome:
    """The reference receiver decides and publishes the file from its local path."""
    receiver = Receiver(lambda: sqlite3.connect(database), SQLITE)
    receiver.register(contract)
    return receiver.receive(path, manifest).outcome


def local(uri: str) -> str:
    assert uri.startswith("file://"), uri
    return uri.removeprefix("file://")


def test_extract_from_sqlite_pushes_the_manifest_and_the_file_uri(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What this test holds is the default folder: the session's own (tests/conftest.py) unset.
    monkeypatch.delenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", raising=False)
    uid = uuid.uuid4().hex[:8]
    table, conn_id, dag_id = f"orders_{uid}", f"source_{uid}", f"extract_sqlite_{uid}"
    sqlite_source_behind(conn_id, tmp_path / "source.sqlite", table, monkeypatch)
    contract = contract_for(table)
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(contract.to_json(), encoding="utf-8")
    request = ExtractionRequest(table, "full", T0 + timedelta(days=1))
    module = write_dag(
        airflow_home,
        dag_id,
        f"""
        from dogana_provider.operators.extract import ExtractOperator

        with dag:
            @task(task_id="plan")
            def plan():
                return {request.to_dict()!r}

            plan() >> ExtractOperator(
                task_id="extract", source_conn_id={conn_id!r}, contract={str(contract_path)!r}
            )
        """,
    )
    run = module.dag.test()
    assert states(run) == {"plan": "success", "extract": "success"}
    pushed = xcom(run, "extract")
    assert set(pushed) == {"manifest", "uri", "origin"}
    assert pushed["origin"] == {
        "source_conn_id": conn_id,
        "source": table,
        "dag_id": dag_id,
        "run_id": run.run_id,
        "task_id": "extract",
    }
    manifest = Manifest.from_dict(pushed["manifest"])
    # The default output: a local folder per DAG and run, the file named after the table.
    assert pushed["uri"].startswith(f"file:///tmp/dogana/{dag_id}/")
    assert pushed["uri"].endswith(f"/{table}.parquet")
    path = local(pushed["uri"])
    try:
        assert manifest.table == table and manifest.shape == "full"
        assert manifest.produced_at >= request.until
        assert (manifest.rows, manifest.tombstones) == (3, 0)
        with open(path, "rb") as delivered:
            assert manifest.content_hash == hashlib.sha256(delivered.read()).hexdigest()
        rows = sorted(pq.read_table(path).to_pylist(), key=lambda row: row["id"])
        assert [(r["id"], r["name"], r["updated_at"]) for r in rows] == [
            (i, n, u) for i, n, u, d in ROWS if not d
        ]
        dogana_check(path, contract, manifest, tmp_path)
        assert receive(path, contract, manifest, tmp_path / "receiver.sqlite") is Outcome.ACCEPTED
    finally:
        shutil.rmtree(f"/tmp/dogana/{dag_id}", ignore_errors=True)


@pytest.mark.postgres
def test_extract_a_group_from_postgres_in_one_snapshot(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: str,
    postgres_tables: Callable[[list[str]], None],
) -> None:
    uid = uuid.uuid4().hex[:8]
    invoices, lines = f"invoices_{uid}", f"lines_{uid}"
    conn_id, dag_id = f"source_{uid}", f"extract_postgres_{uid}"
    postgres_tables([invoices, lines])
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", postgres_url)
    contracts = [contract_for(invoices), contract_for(lines)]
    until = T0 + timedelta(days=1)
    requests = [
        ExtractionRequest(invoices, "full", until).to_dict(),
        ExtractionRequest(lines, "changes", until, since=T0 + timedelta(hours=2)).to_dict(),
    ]
    # The lines come from a DAG author's query, templated (the table's name from params), the
    # request's bounds bound as parameters.
    lines_sql = (
        'SELECT id, upper(name) AS name, updated_at, deleted FROM "{{ params.lines }}" '
        "WHERE updated_at > %(since)s"
    )
    output = (tmp_path / "out").as_uri()
    module = write_dag(
        airflow_home,
        dag_id,
        f"""
        from dogana_provider.operators.extract import ExtractOperator

        with dag:
            @task(task_id="plan")
            def plan():
                return {requests!r}

            ExtractOperator(
                task_id="extract",
                source_conn_id={conn_id!r},
                group={[c.to_dict() for c in contracts]!r},
                request=plan(),
                table_sql={{{lines!r}: {lines_sql!r}}},
                params={{"lines": {lines!r}}},
                output_folder={output!r},
            )
        """,
    )
    run = module.dag.test()
    assert states(run) == {"plan": "success", "extract": "success"}
    pushed = xcom(run, "extract")
    assert [Manifest.from_dict(p["manifest"]).table for p in pushed] == [invoices, lines]
    first, second = (Manifest.from_dict(p["manifest"]) for p in pushed)
    assert first.produced_at == second.produced_at >= until, "one snapshot, one produced_at"
    assert (first.rows, first.tombstones) == (3, 0)  # the soft-deleted row is no invoice
    assert (second.rows, second.tombstones) == (1, 1)  # (since, produced_at]: ids 3 and 4
    names = sorted(pq.read_table(local(pushed[1]["uri"])).column("name").to_pylist())
    assert names == ["FOUR", "THREE"]
    for item, contract in zip(pushed, contracts, strict=True):
        assert item["uri"] == f"{output}/{contract.table}.parquet"
        dogana_check(local(item["uri"]), contract, Manifest.from_dict(item["manifest"]), tmp_path)
    # A changes read needs known regions first; the full read is accepted on a new ledger.
    outcome = receive(local(pushed[0]["uri"]), contracts[0], first, tmp_path / "r.sqlite")
    assert outcome is Outcome.ACCEPTED


def test_extract_to_an_fsspec_url_copies_the_hashed_bytes(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any fsspec URL: memory:// lives in this process, as dag.test() runs tasks here."""
    from airflow.sdk import ObjectStoragePath

    uid = uuid.uuid4().hex[:8]
    table, conn_id, dag_id = f"orders_{uid}", f"source_{uid}", f"extract_memory_{uid}"
    sqlite_source_behind(conn_id, tmp_path / "source.sqlite", table, monkeypatch)
    contract = contract_for(table)
    request = ExtractionRequest(table, "full", T0)
    module = write_dag(
        airflow_home,
        dag_id,
        f"""
        from airflow.sdk.io import attach
        from fsspec.implementations.memory import MemoryFileSystem

        from dogana_provider.operators.extract import ExtractOperator

        # memory:// is no provider's scheme: attach fsspec's filesystem under it, as a DAG
        # attaches any filesystem no provider registers.
        attach("memory", fs=MemoryFileSystem())

        with dag:
            ExtractOperator(
                task_id="extract",
                source_conn_id={conn_id!r},
                contract={contract.to_json()!r},
                request={request.to_json()!r},
                output_folder="memory://dogana/{uid}",
            )
        """,
    )
    run = module.dag.test()
    assert states(run) == {"extract": "success"}
    pushed = xcom(run, "extract")
    assert pushed["uri"] == f"memory://dogana/{uid}/{table}.parquet"
    manifest = Manifest.from_dict(pushed["manifest"])
    with ObjectStoragePath(pushed["uri"]).open("rb") as remote:
        data = remote.read()
    assert hashlib.sha256(data).hexdigest() == manifest.content_hash
    assert (manifest.rows, manifest.tombstones) == (3, 0)


def test_a_request_for_another_table_fails_the_task(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = uuid.uuid4().hex[:8]
    table, conn_id, dag_id = f"orders_{uid}", f"source_{uid}", f"extract_wrong_{uid}"
    sqlite_source_behind(conn_id, tmp_path / "source.sqlite", table, monkeypatch)
    request = ExtractionRequest("somewhere_else", "full", T0)
    module = write_dag(
        airflow_home,
        dag_id,
        f"""
        from dogana_provider.operators.extract import ExtractOperator

        with dag:
            ExtractOperator(
                task_id="extract",
                source_conn_id={conn_id!r},
                contract={contract_for(table).to_dict()!r},
                request={request.to_dict()!r},
                output_folder={(tmp_path / "out").as_uri()!r},
            )
        """,
    )
    run = module.dag.test()
    assert states(run) == {"extract": "failed"}
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.mariadb
def test_extract_changes_with_tombstones_from_mariadb(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mariadb_url: str
) -> None:
    import MySQLdb

    uid = uuid.uuid4().hex[:8]
    table, conn_id, dag_id = f"orders_{uid}", f"source_{uid}", f"extract_mariadb_{uid}"
    options = {"host": "127.0.0.1", "port": 3306, "user": "root", "database": "test"}
    connection = MySQLdb.connect(**options)
    try:
        cursor = connection.cursor()
        cursor.execute(
            f"CREATE TABLE `{table}` (id BIGINT PRIMARY KEY, name TEXT, "
            "updated_at DATETIME(6), deleted BOOLEAN)"
        )
        cursor.executemany(
            f"INSERT INTO `{table}` VALUES (%s, %s, %s, %s)",
            [(i, n, u.replace(tzinfo=None), d) for i, n, u, d in ROWS],
        )
        connection.commit()
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", mariadb_url)
        contract = contract_for(table)
        request = ExtractionRequest(table, "changes", T0 + timedelta(days=1), since=T0)
        output = (tmp_path / "out").as_uri()
        module = write_dag(
            airflow_home,
            dag_id,
            f"""
            from dogana_provider.operators.extract import ExtractOperator

            with dag:
                ExtractOperator(
                    task_id="extract",
                    source_conn_id={conn_id!r},
                    contract={contract.to_dict()!r},
                    request={request.to_dict()!r},
                    output_folder={output!r},
                )
            """,
        )
        run = module.dag.test()
        assert states(run) == {"extract": "success"}
        pushed = xcom(run, "extract")
        manifest = Manifest.from_dict(pushed["manifest"])
        assert (manifest.rows, manifest.tombstones) == (3, 1) and manifest.since == T0
        rows = sorted(pq.read_table(local(pushed["uri"])).to_pylist(), key=lambda r: r["id"])
        assert [(r["id"], r["updated_at"], r["deleted"]) for r in rows] == [
            (i, u, d) for i, _, u, d in ROWS
        ]
        dogana_check(local(pushed["uri"]), contract, manifest, tmp_path)
    finally:
        cursor = connection.cursor()
        cursor.execute(f"DROP TABLE IF EXISTS `{table}`")
        connection.close()
