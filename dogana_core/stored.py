"""The ledger as a receiver stores it, so that reading it does not decode every region.

A ledger's wire form (Ledger.to_json) spells out every region, and reading it decodes them all:
seconds at 20,000 regions, and a receiver reads its ledger for every decision. So it stores the
ledger as text of two lines instead:

    {"chunks":[[regions, bytes, first low end], ...],"generation":...,"publication_id":...,
     "stored":1}
    <the RFC 8785 bytes of every region's identity form, comma separated>

The second line is the regions part of the ledger's identity form, byte for byte, so a loaded
ledger's identity hashes it as it is; the index of chunks (RegionMap.stored) lets Ledger.apply
decode only the chunks a delivery touches. The contract is stored beside it (the receiver's
contract column) and passed in. This form never travels: the wire form stays Ledger.to_json.

Loading checks the first line whole and each chunk when it is decoded; a receiver's verify
decodes every region and compares the ledger and its identity with the fold of the receipts.
"""

from __future__ import annotations

import json

from dogana_core.contract import Contract
from dogana_core.errors import SerializationError
from dogana_core.ledger import Ledger
from dogana_core.region import RegionMap
from dogana_core.wire import Optional, Position, Text, parse_json

STORED = 1
"""The version of this form, written in its first line."""

_FIELDS = {"chunks", "generation", "publication_id", "stored"}


def stored_text(ledger: Ledger) -> str:
    """The stored text of a ledger: its chunk index and position, then its regions' bytes."""
    regions = ledger.regions
    assert isinstance(regions, RegionMap)
    index, body = regions.stored()
    header = {
        "chunks": index,
        "generation": Optional(Position()).encode(ledger.generation, False),
        "publication_id": ledger.publication_id,
        "stored": STORED,
    }
    # json.dumps escapes every control character, so the first line holds no newline.
    first = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{first}\n{body.decode('utf-8')}"


def from_stored(contract: Contract, text: str) -> Ledger:
    """The ledger stored_text wrote, under contract; SerializationError names what is wrong."""
    first, newline, body = text.partition("\n")
    if not newline:
        raise SerializationError("stored ledger", "expected two lines: an index, then regions")
    header = parse_json(first)
    if not isinstance(header, dict) or set(header) != _FIELDS:
        raise SerializationError(
            "stored ledger", f"the first line has the fields {', '.join(sorted(_FIELDS))}"
        )
    if header["stored"] != STORED:
        raise SerializationError(
            "stored ledger.stored", f"form {header['stored']!r} is not {STORED}"
        )
    regions = RegionMap.from_stored(header["chunks"], body.encode("utf-8"))
    generation = Optional(Position()).decode(header["generation"], "stored ledger.generation")
    publication_id = Optional(Text(nonempty=True)).decode(
        header["publication_id"], "stored ledger.publication_id"
    )
    return Ledger(contract, regions, generation, publication_id)
