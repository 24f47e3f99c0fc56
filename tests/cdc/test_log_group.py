"""A group of tables read from one slot at one LSN and published together: a transaction that
touches two of them is in both deliveries or in neither, and a reader of the receiver never
sees one table ahead of the other."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import COLUMNS, DDL, PgTable, log_contract, write_group_dag

from dogana_core.group import Group
from dogana_core.manifest import Manifest
from dogana_provider.hooks.dogana import DoganaHook

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]

ROWS = 20
TOTAL = ROWS * 100 * 2


@pytest.fixture
def second(source: PgTable) -> Iterator[str]:
    table = f"{source.table}_b"
    source.execute(f'CREATE TABLE "{table}" ({DDL})')
    try:
        yield table
    finally:
        source.execute(f'DROP TABLE IF EXISTS "{table}"')


def test_a_transaction_across_two_tables_of_a_group_is_published_in_both_at_one_instant(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: PgTable,
    second: str,
) -> None:
    import psycopg

    tables = [source.table, second]
    connector = {
        "kind": "pg_logical",
        "conn_id": source.conn_id,
        "tables": tables,
        "slot": source.slot,
        "columns": dict.fromkeys(tables, COLUMNS),
        "fetch_rows": 7,
    }
    contracts = [log_contract(table) for table in tables]
    module, receiver_id = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    for table in tables:
        source.execute(
            f"INSERT INTO \"{table}\" SELECT i, 100, now(), 'n', true "
            f"FROM generate_series(1, {ROWS}) AS i"
        )
    hook = DoganaHook(receiver_id)
    stop = threading.Event()
    samples: list[tuple[Any, ...]] = []

    def move() -> None:
        """Each transaction moves an amount from a row of one table to a row of the other."""
        with psycopg.connect(source.db.info.dsn, autocommit=True) as db:
            step = 0
            while not stop.is_set():
                step += 1
                with db.transaction():
                    db.execute(
                        f'UPDATE "{tables[0]}" SET amount = amount - 1 WHERE id = %s',
                        (step % ROWS + 1,),
                    )
                    db.execute(
                        f'UPDATE "{tables[1]}" SET amount = amount + 1 WHERE id = %s',
                        (step * 7 % ROWS + 1,),
                    )

    def sample() -> None:
        """The receiver's two tables read in one committed state, as a reader would."""
        while not stop.is_set():
            try:
                with hook.committed() as connection:
                    sums = [
                        connection.execute(f'SELECT sum(amount), count(*) FROM "{t}"').fetchone()
                        for t in tables
                    ]
                    ledgers = [hook.receiver.store.state(connection, t) for t in tables]
            except Exception:  # before the first publication the tables are not there
                continue
            if all(ledger is not None for ledger in ledgers):
                samples.append((*sums, *(ledger.ledger.generation for ledger in ledgers)))

    threads = [threading.Thread(target=move), threading.Thread(target=sample)]
    first = module.dag.test()
    for thread in threads:
        thread.start()
    try:
        runs = [module.dag.test() for _ in range(3)]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    last = module.dag.test()
    for run in (first, *runs, last):
        assert set(states(run).values()) == {"success"}
    manifests = [Manifest.from_dict(d["manifest"]) for d in xcom(last, "both.extract")]
    assert [m.shape for m in manifests] == ["log", "log"]
    assert len({(m.produced_at, m.since, m.generation) for m in manifests}) == 1

    with hook.committed() as connection:
        for table in tables:
            published = connection.execute(
                f'SELECT id, CAST(amount AS INTEGER) FROM "{table}" ORDER BY id'
            ).fetchall()
            found = source.execute(f'SELECT id, amount::int FROM "{table}" ORDER BY id')
            assert [tuple(r) for r in published] == [tuple(r) for r in found.fetchall()]
    ledgers = hook.ledgers(tables)
    group = Group(tuple(ledger.contract for ledger in ledgers.values()))
    claims = group.claims(ledgers, manifests[0].produced_at, limit=timedelta.max)
    assert claims.exact_as_of == manifests[0].produced_at

    assert samples, "the reader sampled the receiver while the group was delivered"
    for (sum_a, count_a), (sum_b, count_b), position_a, position_b in samples:
        assert (count_a, count_b) == (ROWS, ROWS)
        assert float(sum_a) + float(sum_b) == TOTAL, "a transaction in one table, not the other"
        assert position_a == position_b


def test_a_group_plan_mixing_whole_reads_and_log_reads_is_refused_naming_the_fix() -> None:
    from datetime import UTC, datetime

    from dogana_core.planner import ExtractionRequest
    from dogana_provider.connectors import ConnectorError
    from dogana_provider.operators.extract import _group_since

    contracts = {table: log_contract(table) for table in ("a", "b")}
    until = datetime(2026, 1, 1, tzinfo=UTC)
    whole = [ExtractionRequest(t, "snapshot", until, issue_position=True) for t in "ab"]
    assert _group_since(contracts, whole) is None
    logs = [ExtractionRequest(t, "log", until, since=7, issue_position=True) for t in "ab"]
    assert _group_since(contracts, logs) == 7
    for mixed in ([whole[0], logs[1]], [logs[0], replace(logs[1], since=8)]):
        with pytest.raises(ConnectorError, match="every table's complete shape"):
            _group_since(contracts, mixed)
