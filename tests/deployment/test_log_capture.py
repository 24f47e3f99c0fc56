"""Log capture, its refusals' commands, and one-task deliveries, under the real scheduler
(dags/log_capture.py), every connection kept in the metadata database (added through the REST
API, as an administrator adds one), each DAG into a receiver schema of its own.

    pg log:     a PostgreSQL table's first delivery (the full read that makes the slot), a read
                of its log; a third run reads on, and the second run's extract, cleared, reads
                from the position the slot has released: its plan is stale and already met, so
                it is skipped as superseded. `dogana cdc status` prints the drop-slot command
                for the idle slot; run as printed, the slot is gone. The next run is refused
                (slot_dropped) and its log prints the full read's command; run as printed, a
                run reads the table whole, the slot is made again, and the log goes on.
    maria log:  a MariaDB table's full read, then its binlog; a TRUNCATE refuses the next read
                with the full read's command; run as printed, the table is published again.
    deliver:    DeliverOperator (two readers in one exported snapshot), @daily with catch-up,
                unpaused beside two manual runs (one with a logical date, one with none).

A command a log or the CLI prints is run as a person runs it: the printed line split as a shell
splits it, in the deployment's terminal environment (its settings, no AIRFLOW_CONN_*).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import psycopg
import psycopg2
import pytest
from deployment import Client, Deployment, Run
from stories import Played, Servers, story

from dogana_core import Outcome
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

PG_LOG, MARIA_LOG, DELIVER = "dogana_test_pg_log", "dogana_test_maria_log", "dogana_test_deliver"
SECRET = f"sched-{secrets.token_hex(8)}"
"""The password of the PostgreSQL sources' connections (trust auth ignores it): it must appear
in no task log, XCom or command output."""
FULL_READ = re.compile(r"to run the full read: (airflow dags trigger .*)$")
DROP_SLOT = re.compile(r"^\s*(dogana cdc drop-slot .*)$", re.MULTILINE)


@dataclass
class Story:
    """What a story did and saw, for the tests to judge."""

    dag_id: str
    run: str
    url: str
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, str | None]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    xcoms: dict[str, Any] = field(default_factory=dict)
    compared: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    commands: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    printed: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)

    @property
    def schema(self) -> str:
        """The receiver's schema: named after the DAG and the session (teardown drops it)."""
        return f"{self.dag_id}_{self.run}"

    def receiver(self) -> Receiver:
        return Receiver(
            lambda: psycopg2.connect(self.url, options=f"-csearch_path={self.schema}"), POSTGRES
        )

    def published(self, table: str) -> list[tuple[Any, ...]]:
        with self.receiver().read(table) as read:
            at = [read.columns.index(c) for c in ("id", "amount", "name")]
            return sorted(comparable(tuple(row[i] for i in at)) for row in read.rows)

    def end(self, client: Client, name: str, run: Run, table: str, task: str = "extract") -> None:
        assert client.deployment is not None
        self.runs[name] = run
        self.found[name] = client.wait(run)
        self.states[name] = client.states(run)
        task_id = f"{table}.{task}" if task != "deliver" else task
        self.logs[name] = client.deployment.task_log(run, task_id)
        self.xcoms[name] = client.xcom(run, task_id)


def comparable(row: tuple[Any, ...]) -> tuple[Any, ...]:
    key, amount, name = row
    money = None if amount is None else Decimal(str(amount)).quantize(Decimal("0.01"))
    return (int(key), money, name)


def events(log: str) -> list[str]:
    found = []
    for line in log.splitlines():
        try:
            found.append(str(json.loads(line).get("event", "")))
        except ValueError:
            continue
    return found


def as_printed(deployment: Deployment, line: str) -> subprocess.CompletedProcess[str]:
    """A printed command line run as a person runs it at the deployment's terminal."""
    return subprocess.run(
        shlex.split(line),
        env=deployment.terminal_environment(),
        cwd=deployment.home,
        capture_output=True,
        text=True,
        timeout=300,
    )


def new_run(client: Client, dag_id: str, known: set[Run]) -> Run:
    """The run of dag_id that is not one of known (a command created it)."""
    for _ in range(60):
        found = [run for run in client.runs(dag_id) if run not in known]
        if found:
            return found[-1]
        client._pause()
    raise AssertionError(f"no new run of {dag_id}")


def add_receiver(client: Client, scenario: Story) -> None:
    with psycopg.connect(scenario.url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {scenario.schema}")
    parts = urlsplit(scenario.url)
    client.add_connection(
        f"{scenario.dag_id}_receiver",
        "postgres",
        host=parts.hostname,
        port=parts.port,
        login=parts.username,
        schema=parts.path.lstrip("/"),
        extra={"options": f"-csearch_path={scenario.schema}"},
    )


def add_pg_source(client: Client, conn_id: str, url: str) -> None:
    parts = urlsplit(url)
    client.add_connection(
        conn_id,
        "postgres",
        host=parts.hostname,
        port=parts.port,
        login=parts.username,
        password=SECRET,
        schema=parts.path.lstrip("/"),
    )


def run_of(client: Client) -> str:
    assert client.deployment is not None
    return client.deployment.environment["DOGANA_TEST_RUN"]


# PostgreSQL's log -----------------------------------------------------------------------------


class PgSource:
    def __init__(self, url: str, table: str) -> None:
        self.url, self.table = url, table

    def execute(self, *statements: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)

    def rows(self) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url) as connection:
            found = connection.execute(f'SELECT id, amount, name FROM "{self.table}"').fetchall()
        return sorted(comparable(tuple(row)) for row in found)

    def slot(self, slot: str) -> bool:
        with psycopg.connect(self.url) as connection:
            return (
                connection.execute(
                    "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)
                ).fetchone()
                is not None
            )


@story
def pg_log(client: Client, servers: Servers) -> Story:
    url = servers["postgres"]
    assert url is not None, "the real-scheduler layer's metadata database is PostgreSQL"
    assert client.deployment is not None
    run = run_of(client)
    table, slot = f"sched_pg_log_{run}", f"dogana_sched_{run}"
    scenario = Story(PG_LOG, run, url)
    source = PgSource(url, table)
    source.execute(
        f'CREATE TABLE "{table}" (id bigint PRIMARY KEY, amount numeric(12,2), name text)',
        f"INSERT INTO \"{table}\" SELECT g, g * 1.5, 'n' || g FROM generate_series(1, 20) g",
    )
    add_receiver(client, scenario)
    add_pg_source(client, "dogana_test_pg_source", url)
    client.wait_parsed([PG_LOG])
    client.unpause(PG_LOG)

    def delivered(name: str, run: Run) -> None:
        scenario.end(client, name, run, table)
        if scenario.found[name]["state"] == "success":
            scenario.compared[name] = (scenario.published(table), source.rows())

    delivered("first", client.trigger(PG_LOG))  # logical_date null
    source.execute(
        f"UPDATE \"{table}\" SET amount = 99, name = 'changed' WHERE id = 1",
        f'DELETE FROM "{table}" WHERE id = 2',
        f"INSERT INTO \"{table}\" VALUES (100, 1.25, 'new')",
    )
    delivered("log", client.trigger(PG_LOG))
    source.execute(f"INSERT INTO \"{table}\" VALUES (101, 2.5, 'later')")
    delivered("later", client.trigger(PG_LOG))  # its read moved the slot past "log"'s plan

    # The second run's extract cleared, as the UI's Clear does: its plan is stale.
    client.clear(scenario.runs["log"], f"{table}.extract")
    delivered("cleared", scenario.runs["log"])

    status = client.deployment.at_the_terminal(
        "cdc", "status", "dogana_test_pg_source", "--slot", slot
    )
    scenario.commands["status"] = status
    printed = [m for m in DROP_SLOT.findall(status.stdout) if f"--slot {slot}" in m]
    if printed:
        scenario.printed["drop-slot"] = printed[0]
        scenario.commands["drop-slot"] = as_printed(client.deployment, printed[0])
    scenario.found["slot after drop"] = {"exists": source.slot(slot)}

    source.execute(f"UPDATE \"{table}\" SET name = 'after drop' WHERE id = 3")
    delivered("dropped", client.trigger(PG_LOG))
    full = [m.group(1) for e in events(scenario.logs["dropped"]) if (m := FULL_READ.search(e))]
    if full:
        scenario.printed["full read"] = full[0]
        known = set(client.runs(PG_LOG))
        scenario.commands["full read"] = as_printed(client.deployment, full[0])
        delivered("full read", new_run(client, PG_LOG, known))
        scenario.found["slot after full read"] = {"exists": source.slot(slot)}
        source.execute(f'DELETE FROM "{table}" WHERE id = 4')
        delivered("after reset", client.trigger(PG_LOG))
    return scenario


# MariaDB's binlog -----------------------------------------------------------------------------


class MariaSource:
    def __init__(self, url: str, table: str) -> None:
        self.url, self.table = url, table

    def connection(self) -> Any:
        import MySQLdb

        parts = urlsplit(self.url)
        return MySQLdb.connect(
            host=parts.hostname,
            port=parts.port,
            user=parts.username,
            password=parts.password or "",
            database=parts.path.lstrip("/"),
            autocommit=True,
        )

    def execute(self, *statements: str) -> None:
        connection = self.connection()
        try:
            for statement in statements:
                connection.cursor().execute(statement)
        finally:
            connection.close()

    def rows(self) -> list[tuple[Any, ...]]:
        connection = self.connection()
        try:
            cursor = connection.cursor()
            cursor.execute(f"SELECT id, amount, name FROM `{self.table}`")
            return sorted(comparable(tuple(row)) for row in cursor.fetchall())
        finally:
            connection.close()


@story
def maria_log(client: Client, servers: Servers) -> Story | None:
    maria, url = servers["mariadb"], servers["postgres"]
    if maria is None or url is None:
        return None
    assert client.deployment is not None
    run = run_of(client)
    table = f"sched_maria_log_{run}"
    scenario = Story(MARIA_LOG, run, url)
    source = MariaSource(maria, table)
    source.execute(
        f"CREATE TABLE `{table}` (id BIGINT PRIMARY KEY, amount DECIMAL(12,2), name TEXT)",
        f"INSERT INTO `{table}` VALUES (1, 1.5, 'one'), (2, 3, 'two'), (3, 4.5, 'three')",
    )
    add_receiver(client, scenario)
    parts = urlsplit(maria)
    client.add_connection(
        "dogana_test_maria_source",
        "mysql",
        host=parts.hostname,
        port=parts.port,
        login=parts.username,
        schema=parts.path.lstrip("/"),
    )
    client.wait_parsed([MARIA_LOG])
    client.unpause(MARIA_LOG)

    def delivered(name: str, run: Run) -> None:
        scenario.end(client, name, run, table)
        if scenario.found[name]["state"] == "success":
            scenario.compared[name] = (scenario.published(table), source.rows())

    delivered("first", client.trigger(MARIA_LOG))
    source.execute(
        f"UPDATE `{table}` SET amount = 99, name = 'changed' WHERE id = 1",
        f"DELETE FROM `{table}` WHERE id = 2",
        f"INSERT INTO `{table}` VALUES (100, 1.25, 'new')",
    )
    delivered("log", client.trigger(MARIA_LOG))
    source.execute(f"TRUNCATE TABLE `{table}`", f"INSERT INTO `{table}` VALUES (7, 7, 'seven')")
    delivered("truncated", client.trigger(MARIA_LOG))
    full = [m.group(1) for e in events(scenario.logs["truncated"]) if (m := FULL_READ.search(e))]
    if full:
        scenario.printed["full read"] = full[0]
        known = set(client.runs(MARIA_LOG))
        scenario.commands["full read"] = as_printed(client.deployment, full[0])
        delivered("full read", new_run(client, MARIA_LOG, known))
    return scenario


# DeliverOperator ------------------------------------------------------------------------------


@story
def deliver(client: Client, servers: Servers) -> Story:
    url = servers["postgres"]
    assert url is not None
    run = run_of(client)
    table = f"sched_deliver_{run}"
    scenario = Story(DELIVER, run, url)
    source = PgSource(url, table)
    # Enough pages that two readers each read a range of them.
    source.execute(
        f'CREATE TABLE "{table}" (id bigint PRIMARY KEY, amount numeric(12,2), name text)',
        f"INSERT INTO \"{table}\" SELECT g, g / 4.0, repeat('x', 200) || g "
        "FROM generate_series(1, 5000) g",
    )
    add_receiver(client, scenario)
    add_pg_source(client, "dogana_test_deliver_source", url)
    client.wait_parsed([DELIVER])
    client.unpause(DELIVER)
    scheduled = client.wait_for_run(DELIVER, run_type="scheduled")
    manual = client.trigger(DELIVER)  # logical_date null
    dated = client.trigger(DELIVER, logical_date=datetime.now(UTC).isoformat())
    client.wait_all([scheduled, manual, dated])
    for n, each in enumerate(client.runs(DELIVER)):
        scenario.end(client, f"run {n}", each, table, task="deliver")
    scenario.compared["all"] = (scenario.published(table), source.rows())
    return scenario


# Fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def leave_nothing(
    played: Played, deployment: Deployment, postgres_url: str, request: pytest.FixtureRequest
) -> Iterator[None]:
    """After the module, whatever its stories made is dropped, by the session's names, whether
    a story finished or not."""
    yield
    for each in (pg_log, maria_log, deliver):
        with contextlib.suppress(Exception):
            played.result(each)
    run = deployment.environment["DOGANA_TEST_RUN"]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for dag_id in (PG_LOG, MARIA_LOG, DELIVER):
            connection.execute(f"DROP SCHEMA IF EXISTS {dag_id}_{run} CASCADE")
        for table in (f"sched_pg_log_{run}", f"sched_deliver_{run}"):
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')
        connection.execute(f'DROP PUBLICATION IF EXISTS "dogana_sched_{run}"')
        connection.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s AND NOT active",
            (f"dogana_sched_{run}",),
        )
    with contextlib.suppress(pytest.skip.Exception):
        source = MariaSource(request.getfixturevalue("mariadb_url"), "")
        source.execute(f"DROP TABLE IF EXISTS `sched_maria_log_{run}`")


@pytest.fixture(scope="module")
def pg(played: Played) -> Story:
    return played.result(pg_log)


@pytest.fixture(scope="module")
def maria(played: Played) -> Story:
    found = played.result(maria_log)
    if found is None:
        pytest.skip("MariaDB is not reachable")
    return found


@pytest.fixture(scope="module")
def delivered(played: Played) -> Story:
    return played.result(deliver)


def shows(story: Story, *names: str) -> str:
    return "\n".join(f"{n}: {story.states.get(n)}\n{story.logs.get(n, '')[-3000:]}" for n in names)


# PostgreSQL's log -----------------------------------------------------------------------------


def test_a_postgres_log_pipeline_publishes_the_source_first_whole_then_from_its_log(
    pg: Story,
) -> None:
    for name, shape in (("first", "snapshot"), ("log", "log"), ("later", "log")):
        assert pg.found[name]["state"] == "success", shows(pg, name)
        assert pg.xcoms[name]["manifest"]["shape"] == shape
        published, source = pg.compared[name]
        assert published == source, name
    assert pg.found["first"]["logical_date"] is None


def test_a_cleared_extract_whose_plan_the_slot_released_is_skipped_as_superseded(
    pg: Story,
) -> None:
    assert pg.found["cleared"]["state"] == "success", shows(pg, "cleared")
    table = f"sched_pg_log_{pg.run}"
    assert pg.states["cleared"][f"{table}.extract"] == "skipped", pg.states["cleared"]
    assert pg.states["cleared"][f"{table}.publish"] == "skipped"
    assert any(e.startswith("read superseded") for e in events(pg.logs["cleared"]))


def test_the_drop_slot_command_cdc_status_prints_drops_the_slot_as_printed(pg: Story) -> None:
    status = pg.commands["status"]
    assert status.returncode == 0, status.stderr
    slot = f"dogana_sched_{pg.run}"
    assert pg.printed["drop-slot"] == f"dogana cdc drop-slot dogana_test_pg_source --slot {slot}"
    dropped = pg.commands["drop-slot"]
    assert dropped.returncode == 0, dropped.stderr
    assert f"slot {slot} dropped" in dropped.stdout
    assert pg.found["slot after drop"] == {"exists": False}


def test_a_dropped_slot_prints_the_full_read_command_and_as_printed_it_resets_the_chain(
    pg: Story,
) -> None:
    table = f"sched_pg_log_{pg.run}"
    assert pg.states["dropped"][f"{table}.extract"] == "failed"
    assert "slot_dropped" in pg.logs["dropped"]
    assert pg.printed["full read"] == (
        f'airflow dags trigger {PG_LOG} --conf \'{{"dogana_shape": {{"{table}": "snapshot"}}}}\''
    )
    command = pg.commands["full read"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert pg.found["full read"]["state"] == "success", shows(pg, "full read")
    assert pg.xcoms["full read"]["manifest"]["shape"] == "snapshot"
    assert pg.found["slot after full read"] == {"exists": True}
    assert pg.found["after reset"]["state"] == "success", shows(pg, "after reset")
    assert pg.xcoms["after reset"]["manifest"]["shape"] == "log"
    for name in ("full read", "after reset"):
        published, source = pg.compared[name]
        assert published == source, name
    receiver = pg.receiver()
    assert receiver.verify(table).publications == 5


def test_the_status_command_a_person_runs_shows_the_log_table_complete(
    pg: Story, deployment: Deployment
) -> None:
    table = f"sched_pg_log_{pg.run}"
    status = deployment.at_the_terminal("status", f"{PG_LOG}_receiver")
    assert status.returncode == 0, status.stderr
    (row,) = [line for line in status.stdout.splitlines() if line.startswith(f"{table} ")]
    assert row.split()[1] == "complete", row


def test_no_source_password_in_a_task_log_an_xcom_or_a_command_output(
    pg: Story, delivered: Story, deployment: Deployment
) -> None:
    for story_ in (pg, delivered):
        for name, log in story_.logs.items():
            assert SECRET not in log, name
        assert SECRET not in json.dumps(story_.xcoms, default=str)
        for name, command in story_.commands.items():
            assert SECRET not in command.stdout + command.stderr, name
    for dag_id in (PG_LOG, DELIVER):
        for path in (deployment.logs / "tasks" / f"dag_id={dag_id}").rglob("*.log"):
            assert SECRET not in path.read_text(errors="replace"), path


# MariaDB's binlog -----------------------------------------------------------------------------


def test_a_mariadb_binlog_pipeline_publishes_the_source_and_a_truncate_asks_for_a_full_read(
    maria: Story,
) -> None:
    table = f"sched_maria_log_{maria.run}"
    for name, shape in (("first", "snapshot"), ("log", "log")):
        assert maria.found[name]["state"] == "success", shows(maria, name)
        assert maria.xcoms[name]["manifest"]["shape"] == shape
        published, source = maria.compared[name]
        assert published == source, name
    assert maria.states["truncated"][f"{table}.extract"] == "failed"
    assert maria.printed["full read"] == (
        f'airflow dags trigger {MARIA_LOG} --conf \'{{"dogana_shape": {{"{table}": "snapshot"}}}}\''
    )
    command = maria.commands["full read"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert maria.found["full read"]["state"] == "success", shows(maria, "full read")
    published, source = maria.compared["full read"]
    assert published == source == [(7, Decimal("7.00"), "seven")]


# DeliverOperator ------------------------------------------------------------------------------


def test_deliver_runs_with_catch_up_beside_manual_runs_end_green_with_the_source_published(
    delivered: Story,
) -> None:
    table = f"sched_deliver_{delivered.run}"
    assert len(delivered.found) >= 3
    dates = [found["logical_date"] for found in delivered.found.values()]
    assert None in dates and any(d is not None for d in dates)
    for name, found in delivered.found.items():
        assert found["state"] == "success", shows(delivered, name)
        assert delivered.states[name]["deliver"] in ("success", "skipped"), delivered.states
    published, source = delivered.compared["all"]
    assert published == source and len(source) == 5000
    receipts = delivered.receiver().receipts(table)
    accepted = [r for r in receipts if r.outcome is Outcome.ACCEPTED]
    assert accepted, receipts
    for refused in (r for r in receipts if r.outcome is Outcome.REJECTED):
        assert [c.name for c in refused.failed] == ["transition"]
    assert delivered.receiver().verify(table).publications == len(accepted)
    # A superseded delivery's file is removed as superseded, never logged as published.
    for name, log in delivered.logs.items():
        if delivered.states[name]["deliver"] == "skipped" and "superseded by" in log:
            assert ": published, removed" not in log, name
    # No step warns that it "cannot be called outside of the Task Runner".
    assert not any("outside of the Task Runner" in log for log in delivered.logs.values())
    # Two readers read the table in one exported snapshot, into one delivery.
    readers = [n for n, log in delivered.logs.items() if "read by 2 readers" in log]
    assert readers, {n: log[-2000:] for n, log in delivered.logs.items()}
    for name in readers:
        # A full read planned beside another run's may be superseded by it (catch-up and manual
        # runs race), and is then skipped, not published.
        state, log = delivered.states[name]["deliver"], delivered.logs[name]
        assert state == "success" or "superseded by" in log, (name, state, log[-2000:])
    # The table's first publication is one of these full reads.
    assert any(delivered.states[name]["deliver"] == "success" for name in readers)
