"""How one Ledger.apply costs as the ledger grows: 10,000 successive daily window deliveries.

Each delivery is a complete read of one day, proven at the end of that day, so every day stays
its own region and the ledger grows by one region per delivery. The cost of an apply should
depend on the regions it touches (one window, its two neighbours), not on the thousands it does
not; the ratios printed at the end compare the cost per apply at 100, 1,000 and 10,000 regions.
The gate's cost is printed too: a receipt names the identity of the ledger it leaves, a SHA-256
over every region, so it grows with the ledger by definition (chunks cache their bytes).

    PYTHONPATH=. python bench/ledger.py
"""

from __future__ import annotations

import gc
import time
from datetime import UTC, date, datetime, timedelta

from dogana_core.contract import Contract
from dogana_core.gate import Gate
from dogana_core.ledger import Ledger
from dogana_core.shape import Shape

DELIVERIES = 10_000
SAMPLE = 200
REPEATS = 15
CHECKPOINTS = (100, 1_000, 10_000)

contract = Contract(
    "events",
    ("id",),
    {"day": Shape.complete(window=True)},
    window_column="day",
    types={"id": "int", "day": "date"},
)
first = date(2000, 1, 1)


def manifest(n: int):  # type: ignore[no-untyped-def]
    day = first + timedelta(days=n)
    produced_at = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    return contract.manifest("day", produced_at, window=(day, day), rows=100)


def timed(ledger: Ledger, batch: list) -> float:  # type: ignore[type-arg]
    # As timeit does: a cyclic collection of the whole heap would be charged to the apply
    # that happens to trigger it.
    gc.disable()
    try:
        start = time.perf_counter()
        for m in batch:
            ledger.apply(m)
        return time.perf_counter() - start
    finally:
        gc.enable()


def decided(ledger: Ledger, batch: list, now: datetime) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    for m in batch:
        Gate.evaluate(ledger, m, now=now)
    return time.perf_counter() - start


def main() -> None:
    ledger = Ledger.new(contract)
    manifests = [manifest(n) for n in range(DELIVERIES + SAMPLE)]
    for m in manifests:
        m.identity  # noqa: B018 - computed up front: a sender computes it, not the ledger
    per_apply: dict[int, float] = {}
    per_gate: dict[int, float] = {}
    cold: dict[int, float] = {}
    n = 0
    for checkpoint in CHECKPOINTS:
        while len(ledger.regions) < checkpoint:
            ledger = ledger.apply(manifests[n])
            n += 1
        # SAMPLE applies, each on the ledger of `checkpoint` regions (never kept), best of REPEATS.
        batch = manifests[n : n + SAMPLE]
        per_apply[checkpoint] = min(timed(ledger, batch) for _ in range(REPEATS)) / SAMPLE
        now = batch[-1].produced_at
        start = time.perf_counter()
        ledger.identity  # noqa: B018 - a freshly read ledger encodes every region once
        cold[checkpoint] = time.perf_counter() - start
        per_gate[checkpoint] = min(decided(ledger, batch[:20], now) for _ in range(REPEATS)) / 20
    while n < DELIVERIES:
        ledger = ledger.apply(manifests[n])
        n += 1
    start = time.perf_counter()
    claims = ledger.claims(manifests[n - 1].produced_at, limit=timedelta(days=30))
    whole = time.perf_counter() - start
    window = (first + timedelta(days=n - 7), first + timedelta(days=n - 1))
    start = time.perf_counter()
    week = ledger.claims(manifests[n - 1].produced_at, limit=timedelta(days=30), window=window)
    recent = time.perf_counter() - start

    print(f"{n} daily window deliveries applied; the ledger holds {len(ledger.regions)} regions")
    print(f"{'regions':>8} {'us/apply':>10} {'us/Gate.evaluate':>17} {'ms/identity, cold':>18}")
    for k in CHECKPOINTS:
        print(
            f"{k:>8} {per_apply[k] * 1e6:>10.1f} {per_gate[k] * 1e6:>17.1f} {cold[k] * 1e3:>18.2f}"
        )
    base = per_apply[CHECKPOINTS[0]]
    print(
        f"apply cost ratio 1,000/100: {per_apply[1_000] / base:.2f}, "
        f"10,000/100: {per_apply[10_000] / base:.2f}"
    )
    print(
        f"claims over the whole table: {whole * 1e3:.1f} ms for {len(claims.regions)} regions "
        f"(state {claims.state}); over the last week: {recent * 1e6:.0f} us for "
        f"{len(week.regions)} regions (state {week.state})"
    )


if __name__ == "__main__":
    main()
