"""A feed read that stops after its first batch until it is killed: tests kill -9 it mid-read.

python killed_read.py FILE TOKEN OUTPUT
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from jsonl_files import config, orders_contract

from dogana_core.planner import ExtractionRequest
from dogana_provider.connectors import JsonLinesConnector
from dogana_provider.connectors.extract import extract

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, run as a script

from stalled_reads import stalling

Stalling = stalling(JsonLinesConnector)


def main() -> None:
    path, token, output = sys.argv[1:]
    until = datetime.now(UTC)
    request = ExtractionRequest("orders", "feed", until, since=token, issue_position=True)
    connector = Stalling(config(path, batch_bytes=256))
    extract(connector, "orders", orders_contract(), request, output)


if __name__ == "__main__":
    main()
