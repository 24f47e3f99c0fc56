"""TPC-B's four tables (pgbench's accounts, tellers, branches and history) as a group a log
delivers under load: what the tests on each database check of the published states."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from airflow_runs import states

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


def sums(connection: Any) -> tuple[int, ...]:
    """The four balances' sums; TPC-B keeps them equal in every committed state."""
    return tuple(
        int(connection.execute(f"SELECT coalesce(sum({column}), 0) FROM {table}").fetchone()[0])
        for table, column in SUMS.items()
    )


def deliver_under_load(
    module: Any, hook: Any, loading: Callable[[], bool]
) -> tuple[list[Any], list[tuple[int, ...]]]:
    """The group delivered again and again while loading() says the load runs, then once more
    for the changes after its last commit, while a reader samples the receiver's four sums in
    one committed state each time, as a reader would: the runs, and the sampled sums."""
    runs: list[Any] = []
    sampled: list[tuple[int, ...]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            with hook.committed() as connection:
                sampled.append(sums(connection))

    reader = threading.Thread(target=sample)
    reader.start()
    try:
        while loading():
            runs.append(module.dag.test())
        runs.append(module.dag.test())
    finally:
        stop.set()
        reader.join()
    return runs, sampled


def assert_published_like_the_source(
    runs: list[Any], hook: Any, source: Any, sampled: list[tuple[int, ...]]
) -> None:
    """Every run a success, several while the load ran; the receiver's tables equal the
    source's (anything with execute(sql) returning rows) row for row; and every sampled
    published state keeps TPC-B's invariant."""
    assert all(set(states(run).values()) == {"success"} for run in runs)
    assert len(runs) >= 3, "deliveries while the load ran"
    with hook.committed() as connection:
        final = sums(connection)
        for table, columns in COMPARED.items():
            key = KEYS[table]
            published = connection.execute(f"SELECT {columns} FROM {table} ORDER BY {key}")
            found = source.execute(f"SELECT {columns} FROM {table} ORDER BY {key}")
            assert [tuple(r) for r in published.fetchall()] == [tuple(r) for r in found], table
    assert final == sums(source) and final[3] != 0, "the load's transactions all published"
    assert sampled, "the reader sampled the receiver while the load ran"
    broken = [state for state in sampled if len(set(state)) != 1]
    assert not broken, f"states where the four sums differ: {broken[:3]}"
