"""The ledger with a long history: what a delivery costs after 10,000 of them.

The history: 10,000 daily window deliveries, one every other day, each a complete read of its day
proven at the end of that day. Every day stays its own region and the day between stays unknown,
so the ledger ends with 20,001 regions. Printed, each against its target (issue 9):

    core      one Ledger.apply (under 0.1 ms), Gate.evaluate, and claims over the whole table
              and over the last week (under 50 ms), at 100, 1,000 and 10,000 deliveries
    receiver  through the Receiver on SQLite and on PostgreSQL: the state read (the table's row
              read and its ledger loaded, identity included, as decide and publish each do;
              under 50 ms), whole-table claims of the ledger it gives (in a new process under
              50 ms, as a ratio to the old path, which decoded every chunk), then decide and publish
              of the 10,001st delivery beside the first delivery of a new table, as a ratio: a
              table's ten-thousandth delivery should cost what its first did. Each twice: in
              one process, which keeps the chunks it read (receiver/store.py), and with each
              step in a new process, which starts without them, as each Airflow task does
              (what the process kept is forgotten before the step, not timed)

The receiver's history is built quickly: folded in the core with a real receipt per delivery,
then written through the receiver's own storage code (Store.save, Store.update_table) in one
transaction, as 10,000 publications would have left it. Each time is the least of REPEATS in this
one run (the machine is shared, and noise only adds): CPU time for the core, wall-clock time
through the receiver, whose database works in another process, with this process's CPU time
beside it. Not a test: it prints, it never fails.

    PYTHONPATH=. .venv/bin/python bench/ledger.py
    PYTHONPATH=. .venv/bin/python bench/ledger.py --deliveries 1000 --verify
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.contract import Contract
from dogana_core.gate import Gate, Outcome, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.shape import Shape
from dogana_core.stored import Index, named, stored_form
from dogana_provider.dialects import POSTGRES, SQLITE, Dialect
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.store import forget
from dogana_provider.receiver.transactions import transaction

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
FIRST = date(2000, 1, 1)
NOW = datetime(2200, 1, 1, tzinfo=UTC)  # the receiver's clock: after every delivery
ROWS = 100  # rows per daily file
SAMPLE = 200  # applies timed per checkpoint
REPEATS = 5
APPLY_TARGET, CLAIMS_TARGET, STATE_TARGET = 0.1e-3, 50e-3, 50e-3
Clock = Callable[[], float]
CPU = time.process_time  # the core's work alone, whatever else the machine runs


def contract(table: str) -> Contract:
    return Contract(
        table,
        ("id",),
        {"day": Shape.complete(window=True)},
        window_column="day",
        types={"id": "int", "day": "date"},
    )


def day_of(n: int) -> date:
    return FIRST + timedelta(days=2 * n)


def manifest(table: Contract, n: int) -> Manifest:
    day = day_of(n)
    produced_at = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    return table.manifest("day", produced_at, window=(day, day), rows=ROWS)


def best(run: Callable[[], Any], repeats: int = REPEATS, clock: Clock = time.perf_counter) -> float:
    """The least time of repeats runs: the machine is shared, and noise only ever adds."""
    times = []
    for _ in range(repeats):
        start = clock()
        run()
        times.append(clock() - start)
    return min(times)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def verdict(seconds: float, target: float) -> str:
    return f"{'meets' if seconds < target else 'MISSES'} < {target * 1e3:g} ms"


# The core -----------------------------------------------------------------------------------------


def stated(ledger: Ledger) -> Claims:
    """Whole-table claims, and what a freshness check reads of them."""
    claims = ledger.claims(NOW, limit=timedelta(days=30))
    claims.exact_as_of, claims.count  # noqa: B018
    return claims


def per_apply(ledger: Ledger, batch: list[Manifest]) -> float:
    """SAMPLE applies on one ledger (never kept), per apply."""

    def run() -> None:
        for m in batch:
            ledger.apply(m)

    # As timeit does: a cyclic collection of the whole heap would be charged to the apply
    # that happens to trigger it.
    gc.disable()
    try:
        return best(run, clock=CPU) / len(batch)
    finally:
        gc.enable()


def row(table: Contract, ledger: Ledger, deliveries: int) -> tuple[float, str]:
    """The core's costs on the ledger after `deliveries`: apply, and the table's row."""
    batch = [manifest(table, n) for n in range(deliveries, deliveries + SAMPLE)]
    for m in batch:
        m.identity  # noqa: B018 - a sender computes it, not the ledger
    apply = per_apply(ledger, batch)
    gate = best(lambda: Gate.evaluate(ledger, batch[0], now=NOW), clock=CPU)
    now = batch[0].produced_at
    week = (day_of(deliveries - 4), day_of(deliveries - 1))
    # The first call states each chunk once and keeps what does not depend on now. Each lists
    # its regions: claims list them only when they are read.
    first = best(lambda: ledger.claims(now, limit=timedelta(days=30)).regions, 1, CPU)
    whole = best(lambda: ledger.claims(now, limit=timedelta(days=30)).regions, clock=CPU)
    recent = best(lambda: ledger.claims(now, limit=NO_LIMIT, window=week).regions, clock=CPU)
    return apply, (
        f"{deliveries:>10,} {len(ledger.regions):>8,} {ms(apply):>10} {ms(gate):>14} "
        f"{ms(first):>11} {ms(whole):>11} {ms(recent):>13}"
    )


def core(table: Contract, deliveries: int) -> tuple[Ledger, list[Receipt]]:
    """The history in the core, its costs printed at 100, 1,000 and 10,000 deliveries."""
    checkpoints = [n for n in (100, 1_000, 10_000) if n < deliveries] + [deliveries]
    print(f"Core: {deliveries:,} daily window deliveries, every other day (CPU time)")
    print(
        f"{'deliveries':>10} {'regions':>8} {'apply':>10} {'Gate.evaluate':>14} "
        f"{'claims: first':>11} {'again':>11} {'last week':>13}"
    )
    ledger = Ledger.new(table)
    receipts: list[Receipt] = []
    applies = []
    for checkpoint in checkpoints:
        for n in range(len(receipts), checkpoint):
            m = manifest(table, n)
            receipts.append(Gate.evaluate(ledger, m, now=m.produced_at))
            ledger = ledger.apply(m)
        # What the history holds stays: collections would charge its scans to what is timed.
        gc.freeze()
        apply, line = row(table, ledger, checkpoint)
        applies.append(apply)
        print(line)
    print(
        f"apply at {deliveries:,} deliveries: {ms(applies[-1])}, {applies[-1] / applies[0]:.2f}x "
        f"its cost at {checkpoints[0]:,} ({verdict(applies[-1], APPLY_TARGET)})"
    )
    index, chunks = stored_form(ledger)
    wire = ledger.to_json()

    summaries = {name: chunk.summary for name, chunk in named(ledger).items()}

    def load(summarized: bool = False) -> Ledger:
        return Index.read(index).ledger(table, chunks, summaries if summarized else None)

    # The same regions in chunks of their own: claims were never asked of them.
    unasked = Ledger(table, tuple(ledger.regions), ledger.generation, ledger.publication_id)
    first = best(lambda: unasked.claims(NOW, limit=timedelta(days=30)).regions, 1, CPU)
    print(
        f"claims over the whole table, first asked, every region listed: {ms(first)} "
        f"({verdict(first, CLAIMS_TARGET)})"
    )
    decoded = best(lambda: load().claims(NOW, limit=timedelta(days=30)).regions, 1, CPU)
    summarized = best(lambda: stated(load(summarized=True)), clock=CPU)
    print(
        f"claims over the whole table of a ledger just read: {ms(summarized)} from its chunks' "
        f"summaries (the state, the dates, exact_as_of; {verdict(summarized, CLAIMS_TARGET)}), "
        f"{ms(decoded)} with every region listed (decodes every chunk)"
    )
    loaded = best(lambda: load().identity, clock=CPU)
    before = best(lambda: Ledger.from_json(wire).identity, 1, CPU)
    size = sum(map(len, chunks.values())) + len(index)
    print(
        f"a ledger read with its identity: {ms(loaded)} from its stored form "
        f"({size / 1e6:.1f} MB), {ms(before)} from its wire form ({len(wire) / 1e6:.1f} MB) as "
        "before"
    )
    return ledger, receipts


# The receiver -------------------------------------------------------------------------------------


def write_day(directory: Path, n: int) -> Path:
    path = directory / f"day-{n}.parquet"
    ids = range(n * ROWS, (n + 1) * ROWS)
    table = pa.table(
        {"id": pa.array(ids, pa.int64()), "day": pa.array([day_of(n)] * ROWS, pa.date32())}
    )
    pq.write_table(table, path)
    return path


def delivered(
    receiver: Receiver, table: Contract, n: int, directory: Path, *, new_process: bool = False
) -> tuple[float, float, float]:
    """Decide and publish of the table's delivery n: seconds to decide, to publish, and the
    CPU seconds of this process for both. new_process: each step starts without what this
    process kept of stored ledgers, as each runs in a task's own process under Airflow."""
    path, m = write_day(directory, n), manifest(table, n)
    if new_process:
        forget()
    cpu, start = CPU(), time.perf_counter()
    decision = receiver.decide(path, m)
    decided, cpu = time.perf_counter(), CPU() - cpu
    if new_process:
        forget()
    publish_cpu, publishing = CPU(), time.perf_counter()
    receipt = receiver.publish(decision)
    published, cpu = time.perf_counter(), cpu + CPU() - publish_cpu
    if receipt.outcome is not Outcome.ACCEPTED:
        raise SystemExit(f"delivery {n} to {table.table} was refused: {receipt.failed}")
    return decided - start, published - publishing, cpu


def stored_history(receiver: Receiver, ledger: Ledger, receipts: list[Receipt]) -> None:
    """The state 10,000 publications leave, written by the receiver's own storage code."""
    receiver.register(ledger.contract)
    with transaction(receiver.connect, receiver.dialect) as connection:
        for receipt in receipts:
            receiver.store.save(connection, receipt)
        receiver.store.update_table(connection, ledger)


def state_read(receiver: Receiver, table: str) -> Ledger:
    """What decide and publish each read: the table's row, its ledger loaded, its identity."""
    with transaction(receiver.connect, receiver.dialect, write=False) as connection:
        state = receiver.store.state(connection, table)
        assert state is not None
        state.ledger.identity  # noqa: B018
        return state.ledger


def forgetting(run: Callable[[], Any]) -> Callable[[], Any]:
    """run, in a process that starts without what this one kept of stored ledgers."""

    def fresh() -> Any:
        forget()
        return run()

    return fresh


def claims_read(
    receiver: Receiver, table: str, *, new_process: bool, listed: bool = False, old: bool = False
) -> float:
    """Seconds of whole-table claims of the ledger a state read gives, and of reading what a
    freshness check reads of them (the state, the dates, exact_as_of, the regions' count):
    in a new process (from the chunks' stored summaries), or in one that read it and asked
    before. listed: every region listed too, as the sensor's XCom and the UI read them. old:
    the path before the stored summaries, every region listed from chunks read without their
    summaries, so every chunk is decoded, as in a new process each claims read did."""
    if new_process:
        forget()
    else:
        state_read(receiver, table).claims(NOW, limit=timedelta(days=30)).regions  # noqa: B018
    ledger = state_read(receiver, table)
    if old:
        index, chunks = stored_form(ledger)
        ledger = Index.read(index).ledger(ledger.contract, chunks)
    start = time.perf_counter()
    claims = ledger.claims(NOW, limit=timedelta(days=30))
    # The state and the two dates are attributes; these two are what is computed beyond them.
    claims.exact_as_of, claims.count  # noqa: B018
    if listed or old:
        claims.regions  # noqa: B018
    return time.perf_counter() - start


def through_receiver(
    name: str,
    connect: Callable[[], Any],
    dialect: Dialect,
    ledger: Ledger,
    receipts: list[Receipt],
    directory: Path,
    verify: bool,
) -> None:
    uid = uuid.uuid4().hex[:8]
    receiver = Receiver(connect, dialect, prefix=f"bl{uid}", clock=lambda: NOW)
    long = ledger.contract
    fresh = [contract(f"first_{uid}_{k}") for k in range(2 * REPEATS)]
    try:
        start = time.perf_counter()
        stored_history(receiver, ledger, receipts)
        built = time.perf_counter() - start
        read = best(lambda: state_read(receiver, long.table))
        read_cpu = best(lambda: state_read(receiver, long.table), clock=CPU)
        cold = best(forgetting(lambda: state_read(receiver, long.table)))
        n = len(receipts)
        for table in fresh:
            receiver.register(table)
        rows = {}
        for new_process in (False, True):
            # The two kinds of delivery taken in turn, so that a busy moment slows both.
            late, first = [], []
            for k in range(REPEATS):
                at = n + k + REPEATS * new_process
                late.append(delivered(receiver, long, at, directory, new_process=new_process))
                table = fresh[k + REPEATS * new_process]
                first.append(delivered(receiver, table, 0, directory, new_process=new_process))
            rows[new_process] = (late, first)
        first_read = best(lambda: state_read(receiver, fresh[0].table))
        # The new path and the old one taken in turn, so that a busy moment slows both.
        claims_new, claims_listed, claims_old = [], [], []
        for _ in range(REPEATS):
            claims_new.append(claims_read(receiver, long.table, new_process=True))
            claims_listed.append(claims_read(receiver, long.table, new_process=True, listed=True))
            claims_old.append(claims_read(receiver, long.table, new_process=True, old=True))
        new, listed, old = min(claims_new), min(claims_listed), min(claims_old)
        claims_again = min(
            claims_read(receiver, long.table, new_process=False) for _ in range(REPEATS)
        )
        print(
            f"\n{name}: {n:,} publications stored in {built:.1f} s; the state read at "
            f"{len(ledger.regions):,} regions {ms(read)} ({verdict(read, STATE_TARGET)}; CPU "
            f"{ms(read_cpu)}), {ms(cold)} in a new process, at the first delivery "
            f"{ms(first_read)}"
        )
        print(
            f"whole-table claims of the ledger a state read gives, in a new process: {ms(new)} "
            f"from the chunks' stored summaries ({verdict(new, CLAIMS_TARGET)}), {old / new:.0f}x "
            f"less than the old path's {ms(old)} (decodes every chunk; the least of {REPEATS} "
            f"each, in turn); every region listed too {ms(listed)}; {ms(claims_again)} read "
            f"again in one that asked before ({verdict(claims_again, CLAIMS_TARGET)})"
        )
        print(
            f"{'delivery':>10} {'decide':>10} {'publish':>10} {'both':>10} {'CPU, both':>10}  "
            "each step"
        )
        for new_process, (late, first) in rows.items():
            where = "in a new process" if new_process else "in one process"
            for label, times in ((f"{n + 1:,}th", late), ("first", first)):
                decide, publish, cpu = (min(t[i] for t in times) for i in range(3))
                print(
                    f"{label:>10} {ms(decide):>10} {ms(publish):>10} {ms(decide + publish):>10} "
                    f"{ms(cpu):>10}  {where}"
                )
        for new_process, (late, first) in rows.items():
            where = "each step in a new process" if new_process else "in one process"
            both = [min(t[0] + t[1] for t in times) for times in (late, first)]
            print(
                f"the {n + 1:,}th delivery costs {both[0] / both[1]:.2f}x the first, "
                f"{ms(both[0] - both[1])} more, {where} (the least of {REPEATS} each)"
            )
        if verify:
            verified = receiver.verify(long.table)
            print(f"verified: the stored ledger is the fold of its {verified.receipts:,} receipts")
    finally:
        drop(connect, dialect, uid, [long.table, *(t.table for t in fresh)])


def drop(connect: Callable[[], Any], dialect: Dialect, uid: str, tables: list[str]) -> None:
    """The bench's tables and every table of its store, whatever tables the store has grown."""
    steps = Receiver(connect, dialect, prefix=f"bl{uid}").steps
    own = steps.own_names
    # The replay index is no table: it goes with the receipts table.
    names = [*tables, *(name for name in own if name != f"bl{uid}_receipts_manifest")]
    connection = connect()
    try:
        cursor = connection.cursor()
        for table in names:
            cursor.execute(f"DROP TABLE IF EXISTS {dialect.quote(table)}")
        connection.commit()
    finally:
        connection.close()


@contextmanager
def postgres(url: str) -> Iterator[Callable[[], Any] | None]:
    import psycopg2

    try:
        psycopg2.connect(url).close()
    except psycopg2.OperationalError as exc:
        print(f"\nPostgreSQL: skipped, {url} is not reachable ({exc})".rstrip())
        yield None
        return
    yield lambda: psycopg2.connect(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deliveries", type=int, default=10_000)
    parser.add_argument("--postgres", default=POSTGRES_URL, help="the PostgreSQL to run on")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="then verify each store: folds every receipt, slow with a long history",
    )
    args = parser.parse_args()
    uid = uuid.uuid4().hex[:8]
    table = contract(f"events_{uid}")
    ledger, receipts = core(table, args.deliveries)
    with tempfile.TemporaryDirectory(prefix="dogana-bench-ledger-") as tmp:
        directory = Path(tmp)
        database = directory / "receiver.sqlite"
        sqlite = lambda: sqlite3.connect(database, timeout=30)  # noqa: E731
        through_receiver("SQLite", sqlite, SQLITE, ledger, receipts, directory, args.verify)
        with postgres(args.postgres) as connect:
            if connect is not None:
                through_receiver(
                    "PostgreSQL", connect, POSTGRES, ledger, receipts, directory, args.verify
                )


if __name__ == "__main__":
    main()
