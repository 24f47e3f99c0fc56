"""pgbench's TPC-B against the source while its four tables are delivered from the log as one
group: every published state a reader samples keeps TPC-B's invariant, and once the load stops
and the last delivery publishes, the receiver's tables equal the source's row for row."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from airflow_runs import states
from cdc_pipeline import drop_slot, log_contract, postgres_connection, write_group_dag

from dogana_provider.hooks.dogana import DoganaHook

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]

LOAD_SECONDS = 4
KEYS = {
    "pgbench_accounts": "aid",
    "pgbench_tellers": "tid",
    "pgbench_branches": "bid",
    "pgbench_history": "hid",
}
# What each table's rows are compared on: every column but the fillers pgbench never writes.
COMPARED = {
    "pgbench_accounts": "aid, bid, abalance",
    "pgbench_tellers": "tid, bid, tbalance",
    "pgbench_branches": "bid, bbalance",
    "pgbench_history": "hid, tid, bid, aid, delta",
}
SUMS = {
    "pgbench_accounts": "abalance",
    "pgbench_tellers": "tbalance",
    "pgbench_branches": "bbalance",
    "pgbench_history": "delta",
}


@dataclass
class Bench:
    db: Any
    name: str
    conn_id: str
    slot: str

    def pgbench(self, *arguments: str) -> list[str]:
        return ["pgbench", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres", *arguments, self.name]


@pytest.fixture
def bench(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bench]:
    import psycopg

    if shutil.which("pgbench") is None:
        pytest.skip("pgbench is not installed (PostgreSQL's client tools)")
    uid = uuid.uuid4().hex[:8]
    name, conn_id, slot = f"dogana_tpcb_{uid}", f"tpcb_{uid}", f"dogana_cdc_{os.getpid()}_{uid}"
    admin = psycopg.connect(postgres_url, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", postgres_connection(name))
    db = None
    try:
        bench = Bench(None, name, conn_id, slot)
        subprocess.run(bench.pgbench("-i", "-s", "1", "-q"), check=True, capture_output=True)
        db = psycopg.connect(postgres_url.rsplit("/", 1)[0] + f"/{name}", autocommit=True)
        # pgbench_history has no primary key: its rows have no identity (two equal rows can be
        # two transactions), and a delete in the log, and a keyed changes delivery, need one.
        # A bigserial names each row by its insert, which TPC-B never updates or deletes.
        db.execute("ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY")
        bench.db = db
        yield bench
    finally:
        if db is not None:
            drop_slot(db, slot)
            db.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def sums(connection: Any) -> tuple[int, ...]:
    return tuple(
        int(connection.execute(f"SELECT coalesce(sum({column}), 0) FROM {table}").fetchone()[0])
        for table, column in SUMS.items()
    )


def test_tpcb_load_delivered_as_one_group_keeps_the_invariant_in_every_published_state(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bench: Bench
) -> None:
    tables = list(KEYS)
    connector = {
        "kind": "pg_logical",
        "conn_id": bench.conn_id,
        "tables": tables,
        "slot": bench.slot,
    }
    contracts = [log_contract(table, key) for table, key in KEYS.items()]
    module, receiver_id = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    hook = DoganaHook(receiver_id)
    runs = [module.dag.test()]  # the four tables whole, at the slot's consistent point

    sampled: list[tuple[int, ...]] = []
    stop = threading.Event()

    def sample() -> None:
        """The receiver's four tables read in one committed state, as a reader would."""
        while not stop.is_set():
            with hook.committed() as connection:
                sampled.append(sums(connection))

    load = subprocess.Popen(
        bench.pgbench("-T", str(LOAD_SECONDS), "-c", "2", "-n"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    reader = threading.Thread(target=sample)
    reader.start()
    try:
        while load.poll() is None:  # a delivery every second or two while the load runs
            runs.append(module.dag.test())
        runs.append(module.dag.test())  # the changes after the load's last commit
    finally:
        stop.set()
        reader.join()
        load.wait()
    assert load.returncode == 0, load.stdout.read() if load.stdout else ""
    assert all(set(states(run).values()) == {"success"} for run in runs)
    assert len(runs) >= 3, "deliveries while the load ran"

    with hook.committed() as connection:
        final = sums(connection)
        for table, columns in COMPARED.items():
            key = KEYS[table]
            published = connection.execute(f"SELECT {columns} FROM {table} ORDER BY {key}")
            found = bench.db.execute(f"SELECT {columns} FROM {table} ORDER BY {key}")
            assert [tuple(r) for r in published.fetchall()] == [tuple(r) for r in found], table
    assert final == sums(bench.db) and final[3] != 0, "the load's transactions all published"
    assert sampled, "the reader sampled the receiver while the load ran"
    broken = [state for state in sampled if len(set(state)) != 1]
    assert not broken, f"states where the four sums differ: {broken[:3]}"
