"""kill -9 of the extract and of the publish at random points, while a writer keeps changing the
source: the receiver's table ends equal to the source's, and every receipt's dates are true.

Each round is one delivery through the real operators (plan, extract with the log connector,
gate, publish), called as Airflow calls them; the extract or the publish runs in a child forked
from this process (Airflow imported once) and is SIGKILLed after a random delay, sometimes
mid-step, sometimes after it finished. A killed step ends the run, as a task killed by the OS
fails its DAG run; the next round plans again from what the receiver holds.

"True" is checked against the writer's own record (log_writer.py): every transaction with
bounds on its commit instant on the source's clock, and the rows it left. A published state must
be exactly the source's state after some transaction k (no half transaction, no double), and
its receipt's complete_as_of and deletions_as_of must not pass the commit of k + 1: the
published rows were still the source's rows at the receipt's date, or later. Then a clean
delivery publishes the final state row for row, and no slot of the pipeline is left active or
left behind (PostgreSQL's; MariaDB's binlog holds none). One LogSource fixture per database.

    DOGANA_KILL_ROUNDS=100 DOGANA_KILL_SEED=7 pytest tests/cdc/test_log_kills.py

CI runs 10 rounds; the seed is random unless given, and printed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cdc_pipeline import COLUMNS, MariaTable, PgTable, log_contract
from delivery_dags import sqlite_connection

from dogana_core.receipt import Outcome, Receipt

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]

ROUNDS = int(os.environ.get("DOGANA_KILL_ROUNDS", "10"))
KEYS = 40  # the writer's keys: about half live at a time, and moved keys above them


@dataclass
class LogSource:
    """What the test needs of one database's log: its connector, its writer, its leftovers."""

    table: str
    connector: dict[str, Any]
    writer: dict[str, Any]  # log_writer.py's SPEC_JSON, less the seed
    rows: Callable[[], dict[int, tuple[Any, ...]]]
    leftovers: Callable[[], list[Any]]  # slots (or the like) of this pipeline still held


@pytest.fixture
def pg_log(source: PgTable, postgres_url: str) -> LogSource:
    def leftovers() -> list[Any]:
        found = source.execute(
            "SELECT slot_name, active_pid FROM pg_replication_slots "
            "WHERE slot_name LIKE %s AND (slot_name <> %s OR active)",
            (f"%{source.slot[-8:]}%", source.slot),
        )
        return list(found.fetchall())

    return LogSource(
        source.table,
        source.config(columns=COLUMNS, fetch_rows=5),
        {
            "driver": "psycopg",
            "connect": {"conninfo": postgres_url, "autocommit": False},
            "table": f'"{source.table}"',
            "clock": "clock_timestamp()",
        },
        source.rows,
        leftovers,
    )


@pytest.fixture
def mariadb_log(binlog_source: MariaTable) -> LogSource:
    return LogSource(
        binlog_source.table,
        {
            "kind": "mariadb_binlog",
            "conn_id": binlog_source.conn_id,
            "table": binlog_source.table,
            "columns": COLUMNS,
            "fetch_rows": 5,
        },
        {
            "driver": "MySQLdb",
            "connect": {
                "host": "127.0.0.1",
                "port": 3306,
                "user": "root",
                "database": "test",
                "init_command": "SET time_zone = '+00:00'",
            },
            "table": f"`{binlog_source.table}`",
            "clock": "SYSDATE(6)",
            "naive_utc": True,
        },
        binlog_source.rows,
        list,  # the binlog holds no slot: a position is the pipeline's alone
    )


# One line a database: its LogSource fixture.
SOURCES = ["pg_log", "mariadb_log"]


# The writer's record -------------------------------------------------------------------------


@dataclass
class History:
    """The source's states in commit order, each with bounds on when it began and ended."""

    states: list[frozenset[tuple[Any, ...]]] = field(default_factory=list)
    lo: list[datetime] = field(default_factory=list)
    hi: list[datetime] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> History:
        history, live = cls(), dict[int, tuple[Any, ...]]()
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            assert entry["n"] == len(history.states)
            for key, values in entry["rows"].items():
                if values is None:
                    live.pop(int(key), None)
                else:
                    live[int(key)] = comparable(values)
            history.states.append(frozenset((key, *row) for key, row in live.items()))
            history.lo.append(datetime.fromisoformat(entry["lo"]))
            history.hi.append(datetime.fromisoformat(entry["hi"]))
        return history

    def which(self, published: frozenset[tuple[Any, ...]]) -> int:
        """The transaction after which the source held exactly these rows."""
        found = [n for n, state in enumerate(self.states) if state == published]
        assert found, "the published rows were never the source's rows: a torn or doubled change"
        [n] = found  # each transaction writes a row named after it
        return n


def comparable(row: Any) -> tuple[Any, ...]:
    """amount, at, name, flag as one type each, whichever database held them."""
    amount, at, name, flag = row
    if amount is not None:
        amount = Decimal(str(amount)).quantize(Decimal("0.01"))
    if at is not None:
        at = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
        at = (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC)
    return (amount, at, name, None if flag is None else bool(flag))


def as_state(rows: dict[int, tuple[Any, ...]]) -> frozenset[tuple[Any, ...]]:
    return frozenset((key, *comparable(row)) for key, row in rows.items())


@pytest.fixture
def writer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Starts log_writer.py for a LogSource; stops it when asked, or at the end."""
    stop = tmp_path / "writer.stop"
    started: list[subprocess.Popen[bytes]] = []

    def start(log: LogSource, seed: int) -> Path:
        path = tmp_path / "writer.jsonl"
        spec = {**log.writer, "keys": KEYS, "seed": seed}
        started.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).with_name("log_writer.py")),
                    json.dumps(spec),
                    str(path),
                    str(stop),
                ]
            )
        )
        while not path.exists() or not path.read_text(encoding="utf-8"):
            assert started[0].poll() is None, "the writer stopped before its first rows"
            time.sleep(0.01)
        return path

    def finish() -> None:
        stop.touch()
        for process in started:
            assert process.wait(timeout=60) == 0, "the writer failed"

    start.finish = finish  # type: ignore[attr-defined]
    try:
        yield start
    finally:
        stop.touch()
        for process in started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# The pipeline's steps, as Airflow runs them ---------------------------------------------------


class Ti:
    """The one thing the plan asks of its task instance: somewhere to state its requirement."""

    def xcom_push(self, key: str, value: Any) -> None:
        pass


def context(run: int) -> dict[str, Any]:
    return {
        "dag": SimpleNamespace(dag_id="log_kills"),
        "run_id": f"kill_{run}",
        "data_interval_end": datetime.now(UTC),
        "ti": Ti(),
    }


def alone() -> Any:
    """A DAG of one task: what a rejection asks of the task's DAG has an answer (no plan)."""
    from airflow.sdk import DAG

    return DAG(dag_id="log_kills", schedule=None)


@dataclass
class Steps:
    contract: Path
    connector: dict[str, Any]
    receiver_id: str
    folder: Path

    def plan(self, run: int) -> Any:
        from dogana_provider.operators.plan import PlanDeliveryOperator

        ctx = context(run)
        return PlanDeliveryOperator(
            dag=alone(),
            task_id="plan",
            contract=str(self.contract),
            receiver_conn_id=self.receiver_id,
            fresh_as_of=ctx["data_interval_end"],
        ).execute(ctx)

    def extract(self, run: int, request: Any) -> Any:
        from dogana_provider.operators.extract import ExtractOperator

        return ExtractOperator(
            dag=alone(),
            task_id="extract",
            contract=str(self.contract),
            connector=self.connector,
            request=request,
            output_folder=str(self.folder / f"run_{run}"),
        ).execute(context(run))

    def gate(self, run: int, delivery: Any) -> Any:
        from dogana_provider.operators.gate import GateOperator

        return GateOperator(
            task_id="gate",
            dag=alone(),
            receiver_conn_id=self.receiver_id,
            delivery=delivery,
        ).execute(context(run))

    def deliver(self, run: int) -> Any:
        return self.publish(run, self.gate(run, self.extract(run, self.plan(run))))

    def publish(self, run: int, decision: Any) -> Any:
        from dogana_provider.operators.publish import PublishOperator

        return PublishOperator(
            task_id="publish",
            dag=alone(),
            receiver_conn_id=self.receiver_id,
            decision=decision,
        ).execute(context(run))


def pipeline(log: LogSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Steps:
    """The four steps on a SQLite receiver of the test's own."""
    receiver_id = f"receiver_kills_{log.table[-8:]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    contract = tmp_path / "contract.json"
    contract.write_text(log_contract(log.table).to_json(), encoding="utf-8")
    return Steps(contract, log.connector, receiver_id, tmp_path / "deliveries")


def killed_after(delay: float, step: Callable[[], Any], result: Path) -> bool:
    """Runs step in a forked child and SIGKILLs it after delay: True if it was killed before
    it finished (its result then never written), False if it finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest, never a cleanup of the parent's things
        code = 1
        try:
            value = step()
            result.with_suffix(".part").write_text(json.dumps(value), encoding="utf-8")
            os.replace(result.with_suffix(".part"), result)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)  # a child that finished is a zombie until reaped: no effect
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return True
    assert os.WEXITSTATUS(status) == 0, f"the step failed in its child (exit {status})"
    return False


def timed(took: dict[str, float], kind: str, call: Callable[[], Any]) -> Any:
    """call(), its time folded into took[kind]: where the next kill of that step may land."""
    start = time.perf_counter()
    value = call()
    took[kind] = 0.5 * took[kind] + 0.5 * (time.perf_counter() - start)
    return value


def one_run(
    steps: Steps, run: int, victim: str, delay: float, took: dict[str, float], result: Path
) -> str:
    """plan, extract, gate, publish, the victim killed after delay: what became of it."""
    request = steps.plan(run)
    if victim == "extract":
        if killed_after(delay, partial(steps.extract, run, request), result):
            return "extract killed"
        delivery = json.loads(result.read_text(encoding="utf-8"))
        decision = steps.gate(run, delivery)
        timed(took, "publish", partial(steps.publish, run, decision))
        return "extract finished before its kill"
    delivery = timed(took, "extract", partial(steps.extract, run, request))
    decision = steps.gate(run, delivery)
    if killed_after(delay, partial(steps.publish, run, decision), result):
        return "publish killed"
    return "publish finished before its kill"


# The test ------------------------------------------------------------------------------------


@pytest.mark.parametrize("database", SOURCES)
def test_kill_9_of_extract_and_publish_at_random_points_loses_nothing_and_dates_stay_true(
    database: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dogana_provider.hooks.dogana import DoganaHook

    log: LogSource = request.getfixturevalue(database)
    writer = request.getfixturevalue("writer")  # after the source: stopped before it is dropped
    seed = int(os.environ.get("DOGANA_KILL_SEED", random.randrange(10**6)))
    print(f"{database}: {ROUNDS} rounds, DOGANA_KILL_SEED={seed}")
    rng = random.Random(seed)
    # A killed extract's scratch files stay where the test cleans up.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    steps = pipeline(log, tmp_path, monkeypatch)
    receiver = DoganaHook(steps.receiver_id).receiver
    history_path = writer(log, seed)

    published: list[tuple[Receipt, frozenset[tuple[Any, ...]]]] = []

    def observe() -> None:
        """The publication a run made, if it made one, with the rows it left published."""
        receipts = [r for r in receiver.receipts(log.table) if r.outcome is Outcome.ACCEPTED]
        assert len(receipts) - len(published) <= 1, "one run published more than once"
        if len(receipts) > len(published):
            with receiver.read(log.table) as snapshot:
                assert snapshot.ledger.publication_id == receipts[-1].publication_id
                at = [snapshot.columns.index(c) for c in ("id", "amount", "at", "name", "flag")]
                rows = {row[at[0]]: tuple(row[i] for i in at[1:]) for row in snapshot.rows}
            published.append((receipts[-1], as_state(rows)))

    took = {"extract": 0.3, "publish": 0.1}  # refined by each clean step's time
    tally: dict[str, int] = {}
    for run in range(ROUNDS):
        victim = rng.choice(("extract", "publish"))
        delay = rng.uniform(0, 1.3 * took[victim])
        before = len(published)
        outcome = one_run(steps, run, victim, delay, took, tmp_path / f"result_{run}.json")
        observe()
        if outcome == "publish killed" and len(published) > before:
            outcome = "publish killed after its commit"
        tally[outcome] = tally.get(outcome, 0) + 1
        print(f"round {run}: {victim} killed after {delay:.3f}s: {outcome}")
        # The pipeline's next run, under the same writes: it publishes what the kill left.
        steps.deliver(ROUNDS + run)
        observe()

    writer.finish()
    steps.deliver(2 * ROUNDS)
    observe()
    history = History.read(history_path)
    assert published[-1][1] == as_state(log.rows()) == history.states[-1], "row for row"

    print(f"{database}: {tally}; {len(published)} publications; {len(history.states)} writes")
    for receipt, state in published:
        n = history.which(state)
        assert receipt.transition is not None
        for region in receipt.transition.regions:
            for date in (region.complete_as_of, region.deletions_as_of):
                assert date is not None
                if n + 1 < len(history.states):
                    assert date <= history.hi[n + 1], (
                        f"{receipt.manifest.shape} receipt dated {date}, but transaction {n + 1} "
                        f"committed by {history.hi[n + 1]} is not in what it published"
                    )
    assert not log.leftovers(), "a slot of this pipeline is held or left behind"


def test_a_read_waits_for_the_slot_a_killed_reads_server_process_still_holds(
    source: PgTable, pg_log: LogSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg2
    from psycopg2.extras import LogicalReplicationConnection

    from dogana_provider.hooks.dogana import DoganaHook

    steps = pipeline(pg_log, tmp_path, monkeypatch)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    steps.deliver(0)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', true)")
    # A session streaming from the slot holds it as a killed read's process does, for a while.
    holder = psycopg2.connect(source.db.info.dsn, connection_factory=LogicalReplicationConnection)
    holder.cursor().start_replication(
        slot_name=source.slot,
        decode=False,
        options={"proto_version": "1", "publication_names": source.slot},
    )
    assert pg_log.leftovers(), "the slot is held"
    released = threading.Timer(1.0, holder.close)
    released.start()
    try:
        steps.deliver(1)
    finally:
        released.join()
    receiver = DoganaHook(steps.receiver_id).receiver
    with receiver.read(source.table) as snapshot:
        assert sorted(row[snapshot.columns.index("id")] for row in snapshot.rows) == [1, 2]
