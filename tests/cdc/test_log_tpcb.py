"""pgbench's TPC-B against the source while its four tables are delivered from the log as one
group: every published state a reader samples keeps TPC-B's invariant, and once the load stops
and the last delivery publishes, the receiver's tables equal the source's row for row."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline import drop_slot, log_contract, postgres_connection, write_group_dag
from tpcb import KEYS, assert_published_like_the_source, deliver_under_load

from dogana_provider.hooks.dogana import DoganaHook

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]

LOAD_SECONDS = 4


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
    first = module.dag.test()  # the four tables whole, at the slot's consistent point

    load = subprocess.Popen(
        bench.pgbench("-T", str(LOAD_SECONDS), "-c", "2", "-n"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # A delivery every second or two while the load runs.
        runs, sampled = deliver_under_load(module, hook, lambda: load.poll() is None)
    finally:
        load.wait()
    assert load.returncode == 0, load.stdout.read() if load.stdout else ""
    assert_published_like_the_source([first, *runs], hook, bench.db, sampled)
