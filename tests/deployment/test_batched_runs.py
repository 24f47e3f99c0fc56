"""Many small tables in few tasks, as a user runs them: dogana_test_batched (dags/batched.py),
DeliverOperator mapped over contracts_in_folder(folder, tasks=2), @daily, unpaused (which
creates its latest scheduled run, with a logical date) and triggered at once (a manual run,
without one): the two runs race over the folder's five tables, three alone and two as a group,
from a SQLite file of the test's own into a fresh PostgreSQL schema. Both connections are in
the metadata database, added through the REST API; the receiver's carries a password (trust
auth ignores it) that must appear in no task log or XCom.

Each table ends published with the source's rows, by its own deliveries: each race a table
loses is the one test_overlapping_runs.py forces for the four-task form, a read refused as
late, recorded, and its publish skipped naming the publication that met the run's
requirement; or the run's plan finds the table's claims suffice already. Either way both runs
end green, and every publication has its own receipt and its own Asset event on the alias.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import psycopg2
import pytest
from deployment import Client, Deployment, Run
from stories import Played, Servers, drop_schema, story

from dogana_core import Outcome, Receipt
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

DAG_ID = "dogana_test_batched"
RECEIVER = "dogana_test_batched"  # dags/batched.py's connections
SOURCE = "dogana_test_batched_source"
ALONE, GROUP = ["batched_a", "batched_b", "batched_c"], ["batched_d", "batched_e"]
TABLES = [*ALONE, *GROUP]
"""The tables of dags/batched_contracts/, in the folder's order: batches [a, b] and [c, (d, e)]."""
SECRET = f"batched-{secrets.token_hex(8)}"
RUNS = ("scheduled", "manual")
RACE_LOST = {"transition", "together"}
"""The checks a superseded delivery fails: transition (read before a publication it is older
than), and for a group, together (refused with a table of its group)."""


@dataclass
class Batched:
    """What the story saw, for the tests to judge."""

    schema: str
    url: str
    folder: Path
    runs: dict[str, Run] = field(default_factory=dict)
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, str | None]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    xcoms: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def source(self) -> Path:
        return self.folder / "source.sqlite"

    def receiver(self) -> Receiver:
        return Receiver(
            lambda: psycopg2.connect(self.url, options=f"-csearch_path={self.schema}"), POSTGRES
        )

    def source_rows(self, table: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.source) as connection:
            found = connection.execute(f"SELECT id, name FROM {table} ORDER BY id").fetchall()
        connection.close()
        return found

    def published_rows(self, table: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, options=f"-csearch_path={self.schema}") as connection:
            found = connection.execute(f"SELECT id, name FROM {table} ORDER BY id").fetchall()
        return [tuple(row) for row in found]


def fill_source(path: Path) -> None:
    """Each table a few rows of its own; WAL, so that the two runs' tasks read at once."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        for number, table in enumerate(TABLES):
            connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)")
            connection.executemany(
                f"INSERT INTO {table} VALUES (?, ?)",
                [(row, f"{table} {row}") for row in range(1, number + 3)],
            )
    connection.close()


@story
def batched(client: Client, servers: Servers) -> Batched:
    url = servers["postgres"]
    assert url is not None, "the real-scheduler layer's metadata database is PostgreSQL"
    assert client.deployment is not None
    found = Batched(
        f"dogana_batched_{uuid.uuid4().hex[:10]}",
        url,
        Path(tempfile.mkdtemp(prefix="dogana-batched-")),
    )
    fill_source(found.source)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {found.schema}")
    client.add_schema_connection(RECEIVER, url, found.schema, password=SECRET)
    client.add_connection(SOURCE, "sqlite", host=str(found.source))
    client.wait_parsed([DAG_ID])

    client.unpause(DAG_ID)
    found.runs["scheduled"] = client.wait_for_run(DAG_ID, run_type="scheduled")
    found.runs["manual"] = client.trigger(DAG_ID)
    for name, run in found.runs.items():
        found.found[name] = client.wait(run)
    for name, run in found.runs.items():
        found.states[name] = client.states(run)
        found.xcoms[name] = [client.xcom(run, "deliver", map_index=i) for i in range(2)]
        found.logs[name] = "\n".join(
            client.deployment.task_log(run, "deliver", i) for i in range(2)
        )
    return found


@pytest.fixture(scope="module")
def runs(played: Played, postgres_url: str) -> Any:
    found = played.result(batched)
    yield found
    drop_schema(postgres_url, found.schema)
    shutil.rmtree(found.folder, ignore_errors=True)


def receipts(runs: Batched) -> dict[str, list[Receipt]]:
    receiver = runs.receiver()
    return {table: receiver.receipts(table) for table in TABLES}


def test_a_folder_in_two_batches_unpaused_beside_a_manual_run_publishes_every_table_once_green(
    client: Client, runs: Batched
) -> None:
    for name in RUNS:
        assert runs.found[name]["state"] == "success", client.explain(runs.runs[name])
        assert set(runs.states[name].values()) <= {"success", "skipped"}, runs.states[name]
        assert runs.states[name]["contracts_in_folder"] == "success"
    assert runs.found["scheduled"]["logical_date"] is not None
    assert runs.found["manual"]["logical_date"] is None
    logs = runs.logs["scheduled"] + runs.logs["manual"]
    receiver = runs.receiver()
    for table, found in receipts(runs).items():
        accepted = [r for r in found if r.outcome is Outcome.ACCEPTED]
        refused = [r for r in found if r.outcome is not Outcome.ACCEPTED]
        assert accepted, (table, found)
        for receipt in refused:  # a lost race, recorded, and said so in the losing task's log
            assert receipt.outcome is Outcome.REJECTED, (table, receipt)
            failed = {check.name for check in receipt.failed}
            assert "transition" in failed and failed <= RACE_LOST, (table, failed)
            said = f"{table}: delivery {receipt.manifest.identity[:12]} (produced at"
            assert said in logs and "superseded by publication" in logs, table
        assert receiver.verify(table).publications == len(accepted)
        assert runs.published_rows(table) == runs.source_rows(table)


def test_each_table_of_a_batch_has_its_own_receipt_and_asset_event_on_the_alias(
    client: Client, runs: Batched
) -> None:
    stored = receipts(runs)
    published: dict[str, list[str]] = {table: [] for table in TABLES}
    for name in RUNS:
        delivered = []
        for batch in runs.xcoms[name]:
            for record in batch or []:  # None: a batch every table of which was skipped
                if "skipped" in record:
                    continue
                given = record["receipt"]
                for receipt in given if isinstance(given, list) else [given]:
                    table = receipt["manifest"]["table"]
                    delivered.append(table)
                    if receipt["outcome"] == "accepted":
                        published[table].append(receipt["publication_id"])
        assert delivered == [table for table in TABLES if table in delivered], delivered
    for table in TABLES:
        accepted = [r.publication_id for r in stored[table] if r.outcome is Outcome.ACCEPTED]
        assert sorted(published[table]) == sorted(accepted), table
        events = client.asset_events(f"dogana://{RECEIVER}/{table}", source_dag_id=DAG_ID)
        assert sorted(event["extra"]["publication_id"] for event in events) == sorted(accepted)
        assert {tuple(event["extra"]["tables"]) for event in events} == {(table,)}
    every = [pid for ids in published.values() for pid in ids]
    assert len(set(every)) == len(every)


def test_no_receiver_password_in_a_task_log_or_an_xcom_of_the_batched_runs(
    runs: Batched, deployment: Deployment
) -> None:
    logs = sorted((deployment.logs / "tasks" / f"dag_id={DAG_ID}").rglob("*.log"))
    assert len(logs) >= 2 * len(RUNS)  # contracts_in_folder and at least one batch, each run
    for path in logs:
        assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in json.dumps(runs.xcoms, default=str)
