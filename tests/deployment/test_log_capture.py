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
    pg group:   two PostgreSQL tables behind one slot, published together: both whole, then a
                transaction touching both from the log; a TRUNCATE of one refuses the group's
                next read with the command of every table's full read; run as printed, a run
                publishes both whole, and the log goes on.
    pg stale:   two runs at once, held by pools the story resizes: a run plans while another's
                read is not yet published, and its read comes after a third run's read has
                moved the slot past that plan; the publication since does not meet its run's
                requirement, so it fails asking to plan again; run as printed, a new run plans
                from the published position and reads the log on, no full read.
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
from typing import Any, Protocol
from urllib.parse import urlsplit

import psycopg
import psycopg2
import pytest
from deployment import TERMINAL, Client, Deployment, Run
from stories import Played, Servers, story, told_by

from dogana_core import Outcome
from dogana_core.manifest import Manifest
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver

PG_LOG, MARIA_LOG, DELIVER = "dogana_test_pg_log", "dogana_test_maria_log", "dogana_test_deliver"
PG_GROUP, PG_STALE = "dogana_test_pg_group", "dogana_test_pg_stale"
GROUP_ID = "both"
"""The pg group DAG's task group (dags/log_capture.py)."""
STALE_POOLS = {"extract": "dogana_test_stale_extract", "gate": "dogana_test_stale_gate"}
"""The pools of the pg stale DAG's extract and gate (dags/log_capture.py)."""
SECRET = f"sched-{secrets.token_hex(8)}"
"""The password of the PostgreSQL sources' connections (trust auth ignores it): it must appear
in no task log, XCom or command output."""
FULL_READ = re.compile(r"to run the full read: (airflow dags trigger .*)$")
PLAN_AGAIN = re.compile(r"to plan again: (airflow dags trigger .*)$")
DROP_SLOT = re.compile(r"^\s*(dogana cdc drop-slot .*)$", re.MULTILINE)


class Source(Protocol):
    """Where a delivered table comes from, as a story reads it."""

    def rows(self) -> list[tuple[Any, ...]]: ...


@dataclass
class Story:
    """What a story did and saw, for the tests to judge."""

    dag_id: str
    run: str
    url: str
    group: str = ""
    """The delivery's task group, the prefix of its tasks' ids ("" for a one-task DAG)."""
    sources: dict[str, Source] = field(default_factory=dict)
    """Each table the DAG delivers, and the source that holds it."""
    found: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, str | None]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    xcoms: dict[str, Any] = field(default_factory=dict)
    compared: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)
    """After each successful run, each table's published rows and the source's."""
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What the receiver held at a moment: each table's published rows and ledger."""
    commands: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    printed: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)

    @property
    def schema(self) -> str:
        """The receiver's schema: named after the DAG and the session (teardown drops it)."""
        return f"{self.dag_id}_{self.run}"

    def task(self, name: str) -> str:
        return f"{self.group}.{name}" if self.group else name

    def receiver(self) -> Receiver:
        return Receiver(
            lambda: psycopg2.connect(self.url, options=f"-csearch_path={self.schema}"), POSTGRES
        )

    def published(self, table: str) -> list[tuple[Any, ...]]:
        with self.receiver().read(table) as read:
            at = [read.columns.index(c) for c in ("id", "amount", "name")]
            return sorted(comparable(tuple(row[i] for i in at)) for row in read.rows)

    def end(self, client: Client, name: str, run: Run, task: str = "extract") -> None:
        """Wait for run to end; its state, its tasks' and task's log and return value."""
        assert client.deployment is not None
        self.runs[name] = run
        self.found[name] = client.wait(run)
        self.states[name] = client.states(run)
        self.logs[name] = client.deployment.task_log(run, self.task(task))
        self.xcoms[name] = client.xcom(run, self.task(task))

    def delivered(self, client: Client, name: str, run: Run) -> None:
        """end(), then each table's published rows beside the source's, if the run succeeded."""
        self.end(client, name, run)
        if self.found[name]["state"] == "success":
            self.compared[name] = {
                table: (self.published(table), source.rows())
                for table, source in self.sources.items()
            }

    def keep(self, name: str) -> None:
        receiver = self.receiver()
        self.kept[name] = {
            table: (self.published(table), receiver.ledger(table).to_dict())
            for table in self.sources
        }

    def manifests(self, name: str) -> list[Manifest]:
        """The manifest of each delivery the run's extract pushed (a group's: one per table)."""
        pushed = self.xcoms[name]
        return [
            Manifest.from_dict(d["manifest"])
            for d in (pushed if isinstance(pushed, list) else [pushed])
        ]

    def shapes(self, name: str) -> list[str]:
        return [manifest.shape for manifest in self.manifests(name)]


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


def run_printed(
    client: Client, scenario: Story, refused: str, printed: re.Pattern[str], name: str
) -> bool:
    """The command the refused run's log printed (printed's first group) run as printed, and
    the run it creates delivered as name; False when the log printed none."""
    assert client.deployment is not None
    lines = [m.group(1) for e in events(scenario.logs[refused]) if (m := printed.search(e))]
    if not lines:
        return False
    scenario.printed[name] = lines[0]
    known = set(client.runs(scenario.dag_id))
    scenario.commands[name] = as_printed(client.deployment, lines[0])
    scenario.delivered(client, name, new_run(client, scenario.dag_id, known))
    return True


def new_run(client: Client, dag_id: str, known: set[Run]) -> Run:
    """The run of dag_id that is not one of known (a command created it)."""
    for _ in range(60):
        found = [run for run in client.runs(dag_id) if run not in known]
        if found:
            return found[-1]
        client._pause()
    raise AssertionError(f"no new run of {dag_id}")


def wait_task(client: Client, run: Run, task_id: str, *states: str) -> str | None:
    """Wait until the task of run is in one of states, or the run has ended; the task's state."""
    for _ in range(300):
        state = client.states(run).get(task_id)
        if state in states or client.run(run)["state"] in TERMINAL:
            return state
        client._pause()
    raise AssertionError(f"{task_id} of {run} not {states}: {client.explain(run)}")


def begin(client: Client, scenario: Story, conn_id: str, conn_type: str, url: str) -> None:
    """The DAG's receiver (a schema of its own) and its source's connection (a PostgreSQL
    one with SECRET as its password) added, the DAG parsed and unpaused."""
    with psycopg.connect(scenario.url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {scenario.schema}")
    client.add_schema_connection(f"{scenario.dag_id}_receiver", scenario.url, scenario.schema)
    secret = {"password": SECRET} if conn_type == "postgres" else {}
    client.add_server_connection(conn_id, conn_type, url, **secret)
    client.wait_parsed([scenario.dag_id])
    client.unpause(scenario.dag_id)


def run_of(client: Client) -> str:
    assert client.deployment is not None
    return client.deployment.environment["DOGANA_TEST_RUN"]


def postgres(servers: Servers) -> str:
    url = servers["postgres"]
    assert url is not None, "the real-scheduler layer's metadata database is PostgreSQL"
    return url


# PostgreSQL's log -----------------------------------------------------------------------------


class PgSource:
    def __init__(self, url: str, table: str) -> None:
        self.url, self.table = url, table

    def create(self, rows: int) -> None:
        """The table, with rows rows."""
        self.execute(
            f'CREATE TABLE "{self.table}" (id bigint PRIMARY KEY, amount numeric(12,2), name text)',
            f"INSERT INTO \"{self.table}\" SELECT g, g * 1.5, 'n' || g "
            f"FROM generate_series(1, {rows}) g",
        )

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
    url = postgres(servers)
    assert client.deployment is not None
    run = run_of(client)
    table, slot = f"sched_pg_log_{run}", f"dogana_sched_{run}"
    source = PgSource(url, table)
    scenario = Story(PG_LOG, run, url, table, {table: source})
    source.create(20)
    begin(client, scenario, "dogana_test_pg_source", "postgres", url)

    scenario.delivered(client, "first", client.trigger(PG_LOG))  # logical_date null
    source.execute(
        f"UPDATE \"{table}\" SET amount = 99, name = 'changed' WHERE id = 1",
        f'DELETE FROM "{table}" WHERE id = 2',
        f"INSERT INTO \"{table}\" VALUES (100, 1.25, 'new')",
    )
    scenario.delivered(client, "log", client.trigger(PG_LOG))
    source.execute(f"INSERT INTO \"{table}\" VALUES (101, 2.5, 'later')")
    # Its read moves the slot past "log"'s plan.
    scenario.delivered(client, "later", client.trigger(PG_LOG))

    # The second run's extract cleared, as the UI's Clear does: its plan is stale.
    client.clear(scenario.runs["log"], f"{table}.extract")
    scenario.delivered(client, "cleared", scenario.runs["log"])

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
    scenario.delivered(client, "dropped", client.trigger(PG_LOG))
    if run_printed(client, scenario, "dropped", FULL_READ, "full read"):
        scenario.found["slot after full read"] = {"exists": source.slot(slot)}
        source.execute(f'DELETE FROM "{table}" WHERE id = 4')
        scenario.delivered(client, "after reset", client.trigger(PG_LOG))
    return scenario


@story
def pg_group(client: Client, servers: Servers) -> Story:
    url = postgres(servers)
    run = run_of(client)
    tables = [f"sched_pg_group_a_{run}", f"sched_pg_group_b_{run}"]
    sources = {table: PgSource(url, table) for table in tables}
    scenario = Story(PG_GROUP, run, url, GROUP_ID, dict(sources))
    for each in sources.values():
        each.create(5)
    source, first, second = sources[tables[0]], *(f'"{table}"' for table in tables)
    begin(client, scenario, "dogana_test_pg_group_source", "postgres", url)

    scenario.delivered(client, "first", client.trigger(PG_GROUP))
    # One transaction moves an amount from a row of one table to a new row of the other.
    source.execute(
        "BEGIN",
        f"UPDATE {first} SET amount = amount - 1 WHERE id = 1",
        f"INSERT INTO {second} VALUES (100, 1, 'moved')",
        "COMMIT",
    )
    scenario.delivered(client, "log", client.trigger(PG_GROUP))
    source.execute(f"TRUNCATE TABLE {second}", f"INSERT INTO {second} VALUES (7, 7, 'seven')")
    scenario.keep("before the refusal")
    scenario.delivered(client, "truncated", client.trigger(PG_GROUP))
    scenario.keep("after the refusal")
    if run_printed(client, scenario, "truncated", FULL_READ, "full read"):
        source.execute(
            "BEGIN",
            f"DELETE FROM {first} WHERE id = 2",
            f"UPDATE {second} SET name = 'after reset' WHERE id = 7",
            "COMMIT",
        )
        scenario.delivered(client, "after reset", client.trigger(PG_GROUP))
    return scenario


@story
def pg_stale(client: Client, servers: Servers) -> Story:
    """Runs a, b and c of one DAG, held by its pools so that c's read moves the slot past a's
    plan, and a's read comes after it, with a publication since that a's run end is after.

    The scheduler queues the tasks waiting on a pool in order of their runs' logical dates (its
    query orders by priority weight, then logical date): a and c are given dates, c's earlier,
    so that when the extract pool opens one slot, c's extract reads first.
    """
    url = postgres(servers)
    run = run_of(client)
    table = f"sched_pg_stale_{run}"
    source = PgSource(url, table)
    scenario = Story(PG_STALE, run, url, table, {table: source})
    extract, gate = scenario.task("extract"), scenario.task("gate")
    source.create(5)
    client.pool(STALE_POOLS["extract"], 1)
    client.pool(STALE_POOLS["gate"], 1)
    begin(client, scenario, "dogana_test_pg_stale_source", "postgres", url)
    scenario.delivered(client, "first", client.trigger(PG_STALE))

    # b reads the log; its gate waits.
    client.pool(STALE_POOLS["gate"], 0)
    source.execute(f"UPDATE \"{table}\" SET name = 'b' WHERE id = 1")
    b = client.trigger(PG_STALE)
    wait_task(client, b, gate, "scheduled")
    read_at = Manifest.from_dict(client.xcom(b, extract)["manifest"]).produced_at
    # a, its run's end after b's read, plans on the position b read from; its extract waits.
    client.pool(STALE_POOLS["extract"], 0)
    a_end = datetime.now(UTC)
    a = client.trigger(PG_STALE, logical_date=a_end.isoformat())
    wait_task(client, a, extract, "scheduled")
    # b publishes: up to a time before a's run end.
    client.pool(STALE_POOLS["gate"], 1)
    wait_task(client, b, gate, "success")
    client.pool(STALE_POOLS["gate"], 0)
    scenario.delivered(client, "b", b)
    # c plans on b's publication; its read moves the slot there, past a's plan.
    source.execute(f"UPDATE \"{table}\" SET name = 'c' WHERE id = 2")
    c = client.trigger(PG_STALE, logical_date=(read_at + (a_end - read_at) / 2).isoformat())
    wait_task(client, c, extract, "scheduled")
    scenario.keep("before a's read")
    client.pool(STALE_POOLS["extract"], 1)
    for each in (c, a):
        wait_task(client, each, extract, "success", "failed", "skipped")
    scenario.keep("after a's read")
    scenario.states["c before its gate"] = client.states(c)
    client.pool(STALE_POOLS["gate"], 1)
    scenario.end(client, "a", a)
    scenario.delivered(client, "c", c)
    run_printed(client, scenario, "a", PLAN_AGAIN, "plan again")
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
    run = run_of(client)
    table = f"sched_maria_log_{run}"
    source = MariaSource(maria, table)
    scenario = Story(MARIA_LOG, run, url, table, {table: source})
    source.execute(
        f"CREATE TABLE `{table}` (id BIGINT PRIMARY KEY, amount DECIMAL(12,2), name TEXT)",
        f"INSERT INTO `{table}` VALUES (1, 1.5, 'one'), (2, 3, 'two'), (3, 4.5, 'three')",
    )
    begin(client, scenario, "dogana_test_maria_source", "mysql", maria)

    scenario.delivered(client, "first", client.trigger(MARIA_LOG))
    source.execute(
        f"UPDATE `{table}` SET amount = 99, name = 'changed' WHERE id = 1",
        f"DELETE FROM `{table}` WHERE id = 2",
        f"INSERT INTO `{table}` VALUES (100, 1.25, 'new')",
    )
    scenario.delivered(client, "log", client.trigger(MARIA_LOG))
    source.execute(f"TRUNCATE TABLE `{table}`", f"INSERT INTO `{table}` VALUES (7, 7, 'seven')")
    scenario.delivered(client, "truncated", client.trigger(MARIA_LOG))
    run_printed(client, scenario, "truncated", FULL_READ, "full read")
    return scenario


# DeliverOperator ------------------------------------------------------------------------------


@story
def deliver(client: Client, servers: Servers) -> Story:
    url = postgres(servers)
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
    begin(client, scenario, "dogana_test_deliver_source", "postgres", url)
    scheduled = client.wait_for_run(DELIVER, run_type="scheduled")
    manual = client.trigger(DELIVER)  # logical_date null
    dated = client.trigger(DELIVER, logical_date=datetime.now(UTC).isoformat())
    client.wait_all([scheduled, manual, dated])
    for n, each in enumerate(client.runs(DELIVER)):
        scenario.end(client, f"run {n}", each, task="deliver")
    scenario.compared["all"] = {table: (scenario.published(table), source.rows())}
    return scenario


# Fixtures -------------------------------------------------------------------------------------

STORIES = (pg_log, pg_group, pg_stale, maria_log, deliver)
SLOTS = ("dogana_sched", "dogana_sched_group", "dogana_sched_stale")
PG_TABLES = ("sched_pg_log", "sched_pg_group_a", "sched_pg_group_b", "sched_pg_stale")


@pytest.fixture(scope="module", autouse=True)
def leave_nothing(
    played: Played, deployment: Deployment, postgres_url: str, request: pytest.FixtureRequest
) -> Iterator[None]:
    """After the module, whatever its stories made is dropped, by the session's names, whether
    a story finished or not."""
    try:  # asked before the module's tests: pytest refuses a fixture first asked in teardown
        mariadb_url: str | None = request.getfixturevalue("mariadb_url")
    except pytest.skip.Exception:
        mariadb_url = None
    yield
    for each in STORIES:
        with contextlib.suppress(Exception):
            played.result(each)
    run = deployment.environment["DOGANA_TEST_RUN"]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for dag_id in (PG_LOG, PG_GROUP, PG_STALE, MARIA_LOG, DELIVER):
            connection.execute(f"DROP SCHEMA IF EXISTS {dag_id}_{run} CASCADE")
        for table in (*PG_TABLES, "sched_deliver"):
            connection.execute(f'DROP TABLE IF EXISTS "{table}_{run}"')
        for slot in SLOTS:
            connection.execute(f'DROP PUBLICATION IF EXISTS "{slot}_{run}"')
            connection.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active",
                (f"{slot}_{run}",),
            )
    if mariadb_url is not None:
        MariaSource(mariadb_url, "").execute(f"DROP TABLE IF EXISTS `sched_maria_log_{run}`")


pg = told_by(pg_log, "pg")
group = told_by(pg_group, "group")
stale = told_by(pg_stale, "stale")
delivered = told_by(deliver, "delivered")


@pytest.fixture(scope="module")
def maria(played: Played) -> Story:
    found = played.result(maria_log)
    if found is None:
        pytest.skip("MariaDB is not reachable")
    return found


def shows(story: Story, *names: str) -> str:
    return "\n".join(f"{n}: {story.states.get(n)}\n{story.logs.get(n, '')[-3000:]}" for n in names)


def assert_published_as_source(story: Story, *names: str) -> None:
    """After each named run, every table's published rows are the source's."""
    for name in names:
        assert story.found[name]["state"] == "success", shows(story, name)
        for table, (published, source) in story.compared[name].items():
            assert published == source, (name, table)


def trigger_line(dag_id: str, **shapes: str) -> str:
    """`airflow dags trigger` as a log prints it: with a conf naming each table's shape."""
    if not shapes:
        return f"airflow dags trigger {dag_id}"
    return (
        f"airflow dags trigger {dag_id} --conf {shlex.quote(json.dumps({'dogana_shape': shapes}))}"
    )


# PostgreSQL's log -----------------------------------------------------------------------------


def test_a_postgres_log_pipeline_publishes_the_source_first_whole_then_from_its_log(
    pg: Story,
) -> None:
    assert_published_as_source(pg, "first", "log", "later")
    for name, shape in (("first", "snapshot"), ("log", "log"), ("later", "log")):
        assert pg.shapes(name) == [shape]
    assert pg.found["first"]["logical_date"] is None


def test_a_cleared_extract_whose_plan_the_slot_released_is_skipped_as_superseded(
    pg: Story,
) -> None:
    assert pg.found["cleared"]["state"] == "success", shows(pg, "cleared")
    assert pg.states["cleared"][pg.task("extract")] == "skipped", pg.states["cleared"]
    assert pg.states["cleared"][pg.task("publish")] == "skipped"
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
    assert pg.states["dropped"][pg.task("extract")] == "failed"
    assert "slot_dropped" in pg.logs["dropped"]
    assert pg.printed["full read"] == trigger_line(PG_LOG, **{table: "snapshot"})
    command = pg.commands["full read"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert_published_as_source(pg, "full read", "after reset")
    assert pg.shapes("full read") == ["snapshot"]
    assert pg.found["slot after full read"] == {"exists": True}
    assert pg.shapes("after reset") == ["log"]
    assert pg.receiver().verify(table).publications == 5


def test_the_status_command_a_person_runs_shows_the_log_table_complete(
    pg: Story, deployment: Deployment
) -> None:
    table = f"sched_pg_log_{pg.run}"
    status = deployment.at_the_terminal("status", f"{PG_LOG}_receiver")
    assert status.returncode == 0, status.stderr
    (row,) = [line for line in status.stdout.splitlines() if line.startswith(f"{table} ")]
    assert row.split()[1] == "complete", row


def test_no_source_password_in_a_task_log_an_xcom_or_a_command_output(
    pg: Story, group: Story, stale: Story, delivered: Story, deployment: Deployment
) -> None:
    for story_ in (pg, group, stale, delivered):
        for name, log in story_.logs.items():
            assert SECRET not in log, name
        assert SECRET not in json.dumps(story_.xcoms, default=str)
        for name, command in story_.commands.items():
            assert SECRET not in command.stdout + command.stderr, name
    for dag_id in (PG_LOG, PG_GROUP, PG_STALE, DELIVER):
        for path in (deployment.logs / "tasks" / f"dag_id={dag_id}").rglob("*.log"):
            assert SECRET not in path.read_text(errors="replace"), path


# A PostgreSQL group ---------------------------------------------------------------------------


def test_a_transaction_across_a_groups_two_tables_is_published_in_both_from_the_log(
    group: Story,
) -> None:
    assert_published_as_source(group, "first", "log")
    assert group.shapes("first") == ["snapshot", "snapshot"]
    assert group.shapes("log") == ["log", "log"]
    positions = {(m.produced_at, m.generation) for m in group.manifests("log")}
    assert len(positions) == 1, "both tables read at one position"


def test_a_truncate_refuses_the_group_and_its_printed_full_read_of_every_table_resets_it(
    group: Story,
) -> None:
    assert group.found["truncated"]["state"] == "failed"
    assert group.states["truncated"] == {
        group.task("plan"): "success",
        group.task("extract"): "failed",
        group.task("gate"): "upstream_failed",
        group.task("publish"): "upstream_failed",
    }
    assert "truncate_in_log" in group.logs["truncated"]
    assert group.kept["after the refusal"] == group.kept["before the refusal"]
    every_table = trigger_line(PG_GROUP, **dict.fromkeys(group.sources, "snapshot"))
    assert group.printed.get("full read") == every_table, shows(group, "truncated")
    command = group.commands["full read"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert_published_as_source(group, "full read", "after reset")
    assert group.shapes("full read") == ["snapshot", "snapshot"]
    assert group.shapes("after reset") == ["log", "log"]
    assert group.found["full read"]["conf"] == json.loads(command.args[-1])


# A stale plan ---------------------------------------------------------------------------------


def test_a_read_whose_plan_the_slot_released_fails_unmet_and_as_printed_a_new_plan_reads_on(
    stale: Story,
) -> None:
    extract = stale.task("extract")
    assert_published_as_source(stale, "first", "b", "c")
    assert stale.states["c before its gate"][extract] == "success"
    assert stale.states["a"] == {
        stale.task("plan"): "success",
        extract: "failed",
        stale.task("gate"): "upstream_failed",
        stale.task("publish"): "upstream_failed",
    }
    assert any(e.startswith("stale plan") for e in events(stale.logs["a"])), shows(stale, "a")
    assert stale.kept["after a's read"] == stale.kept["before a's read"]
    assert stale.printed.get("plan again") == trigger_line(PG_STALE), shows(stale, "a")
    command = stale.commands["plan again"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert_published_as_source(stale, "plan again")
    assert stale.shapes("plan again") == ["log"]
    [again], [c] = stale.manifests("plan again"), stale.manifests("c")
    assert again.since == c.generation, "the new plan reads from the published position"


# MariaDB's binlog -----------------------------------------------------------------------------


def test_a_mariadb_binlog_pipeline_publishes_the_source_and_a_truncate_asks_for_a_full_read(
    maria: Story,
) -> None:
    table = f"sched_maria_log_{maria.run}"
    assert_published_as_source(maria, "first", "log")
    assert [maria.shapes("first"), maria.shapes("log")] == [["snapshot"], ["log"]]
    assert maria.states["truncated"][maria.task("extract")] == "failed"
    assert maria.printed["full read"] == trigger_line(MARIA_LOG, **{table: "snapshot"})
    command = maria.commands["full read"]
    assert command.returncode == 0, command.stdout + command.stderr
    assert_published_as_source(maria, "full read")
    assert maria.compared["full read"][table][0] == [(7, Decimal("7.00"), "seven")]


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
    [(published, source)] = delivered.compared["all"].values()
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
