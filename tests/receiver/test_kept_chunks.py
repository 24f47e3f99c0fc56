"""What a process keeps of stored ledgers (receiver/store.py's Kept): chunks by digest, within
a size that counts the regions a chunk decoded as well as its bytes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from dogana_core.contract import Contract
from dogana_core.ledger import Ledger
from dogana_core.region import Chunk
from dogana_core.shape import Shape
from dogana_core.stored import named
from dogana_provider.receiver.store import Kept

DAILY = Contract(
    "events",
    ("id",),
    {"day": Shape.complete(window=True)},
    window_column="day",
    types={"id": "int", "day": "date"},
)


def stored_chunks(days: int) -> dict[str, Chunk]:
    """A daily ledger's chunks as a reader builds them from bytes: none decoded yet."""
    ledger = Ledger.new(DAILY)
    for n in range(days):
        day = date(2000, 1, 1) + timedelta(days=2 * n)
        at = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(days=2 * n + 1)
        ledger = ledger.apply(DAILY.manifest("day", at, window=(day, day)))
    return {
        name: Chunk.stored(chunk.canonical, chunk.count, chunk.head)
        for name, chunk in named(ledger).items()
    }


def test_a_kept_chunk_decoded_since_is_charged_its_regions_too() -> None:
    chunks = stored_chunks(200)  # 401 regions: seven chunks, the last one short
    sizes = {name: len(chunk.canonical) for name, chunk in chunks.items()}
    (old, *_, young) = chunks
    # Room for every chunk's bytes, and for one decoded chunk more than that.
    kept = Kept(sum(sizes.values()) + (Kept.DECODED - 1) * sizes[young])
    kept.keep(chunks.items())
    assert set(kept.get(chunks)) == set(chunks)
    tuple(chunks[young].regions)  # a reader decodes it
    kept.get([young])
    assert set(kept.get(chunks)) == set(chunks)  # still within the size
    tuple(chunks[old].regions)
    kept.get([old])  # charged for its regions now: the least recently used goes
    assert len(kept.get(chunks)) < len(chunks)


def test_forgetting_starts_as_a_new_process_does() -> None:
    chunks = stored_chunks(10)
    kept = Kept(2**20)
    kept.keep(chunks.items())
    kept.clear()
    assert kept.get(chunks) == {}
