"""TPC-B's transactions written into MariaDB while its four tables are delivered from the
binlog as one group: every published state a reader samples keeps TPC-B's invariant, and once
the writers stop and the last delivery publishes, the receiver's tables equal the source's row
for row. pgbench speaks only to PostgreSQL: its schema and its transaction are written here,
scaled down (one branch, ten tellers, ten thousand accounts)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline import MariaTable, log_contract, mariadb_connection, write_group_dag
from tpcb import KEYS, assert_published_like_the_source, deliver_under_load

from dogana_provider.hooks.dogana import DoganaHook

pytestmark = [pytest.mark.mariadb, pytest.mark.airflow]

LOAD_SECONDS = 4
WRITERS = 2
BRANCHES, TELLERS, ACCOUNTS = 1, 10, 10_000
# pgbench -i's tables, with the key pgbench_history lacks: a bigint naming each row by its
# insert (TPC-B never updates or deletes one), which a keyed changes delivery needs.
SCHEMA = (
    "CREATE TABLE pgbench_branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88))",
    "CREATE TABLE pgbench_tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84))",
    "CREATE TABLE pgbench_accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84))",
    "CREATE TABLE pgbench_history (hid BIGINT AUTO_INCREMENT PRIMARY KEY, tid INT, bid INT, "
    "aid INT, delta INT, mtime DATETIME(6), filler CHAR(22))",
)


@dataclass
class Bench:
    """The TPC-B database: a connection to it, its name, the Airflow connection reaching it."""

    db: Any
    name: str
    conn_id: str

    def connect(self, *, autocommit: bool) -> Any:
        import MySQLdb

        return MySQLdb.connect(
            host="127.0.0.1", port=3306, user="root", db=self.name, autocommit=autocommit
        )

    def transactions(self, stop: threading.Event, seed: int) -> None:
        """pgbench's TPC-B transaction, again and again until stop: an account, its teller and
        its branch move by one delta, and history records it."""
        chosen = random.Random(seed)
        db = self.connect(autocommit=False)
        try:
            cursor = db.cursor()
            while not stop.is_set():
                aid, tid = chosen.randint(1, ACCOUNTS), chosen.randint(1, TELLERS)
                bid, delta = chosen.randint(1, BRANCHES), chosen.randint(-5000, 5000)
                cursor.execute(
                    "UPDATE pgbench_accounts SET abalance = abalance + %s WHERE aid = %s",
                    (delta, aid),
                )
                cursor.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s", (aid,))
                cursor.fetchall()
                cursor.execute(
                    "UPDATE pgbench_tellers SET tbalance = tbalance + %s WHERE tid = %s",
                    (delta, tid),
                )
                cursor.execute(
                    "UPDATE pgbench_branches SET bbalance = bbalance + %s WHERE bid = %s",
                    (delta, bid),
                )
                cursor.execute(
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) "
                    "VALUES (%s, %s, %s, %s, UTC_TIMESTAMP(6))",
                    (tid, bid, aid, delta),
                )
                db.commit()
        finally:
            db.close()


@pytest.fixture
def bench(mariadb_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bench]:
    import MySQLdb

    uid = uuid.uuid4().hex[:8]
    name, conn_id = f"mariagroup_tpcb_{uid}", f"tpcb_{uid}"
    admin = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
    admin.cursor().execute(f"CREATE DATABASE `{name}`")
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", mariadb_connection(name))
    try:
        bench = Bench(None, name, conn_id)
        bench.db = bench.connect(autocommit=True)
        cursor = bench.db.cursor()
        for statement in SCHEMA:
            cursor.execute(statement)
        cursor.executemany(
            "INSERT INTO pgbench_branches (bid, bbalance) VALUES (%s, %s)",
            [(b, 0) for b in range(1, BRANCHES + 1)],
        )
        cursor.executemany(
            "INSERT INTO pgbench_tellers (tid, bid, tbalance) VALUES (%s, %s, %s)",
            [(t, (t - 1) // (TELLERS // BRANCHES) + 1, 0) for t in range(1, TELLERS + 1)],
        )
        cursor.executemany(
            # Every value a parameter: the driver sends them as one multi-row INSERT.
            "INSERT INTO pgbench_accounts (aid, bid, abalance) VALUES (%s, %s, %s)",
            [(a, (a - 1) // (ACCOUNTS // BRANCHES) + 1, 0) for a in range(1, ACCOUNTS + 1)],
        )
        yield bench
    finally:
        if bench.db is not None:
            bench.db.close()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def test_tpcb_transactions_delivered_from_the_binlog_as_one_group_keep_the_invariant(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bench: Bench
) -> None:
    connector = {"kind": "mariadb_binlog", "conn_id": bench.conn_id, "tables": list(KEYS)}
    contracts = [log_contract(table, key) for table, key in KEYS.items()]
    module, receiver_id = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    hook = DoganaHook(receiver_id)
    stop = threading.Event()
    writers = [
        threading.Thread(target=bench.transactions, args=(stop, seed)) for seed in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    # The four tables whole in one consistent snapshot, under load: read one by one in
    # snapshots of their own, their sums would differ in the first published state.
    first = module.dag.test()
    ends = time.monotonic() + LOAD_SECONDS

    def loading() -> bool:
        if time.monotonic() < ends:
            return True
        stop.set()
        for writer in writers:
            writer.join()
        return False

    try:
        runs, sampled = deliver_under_load(module, hook, loading)
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    source = MariaTable(bench.db, "pgbench_accounts", bench.conn_id)
    assert_published_like_the_source([first, *runs], hook, source, sampled)
