"""A feed read that stops after its first batch until it is killed: tests kill -9 it mid-read.

python killed_read.py FILE TOKEN OUTPUT
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime

from jsonl_files import config, orders_contract

from dogana_core.planner import ExtractionRequest
from dogana_provider.connectors import JsonLinesConnector
from dogana_provider.connectors.extract import extract


class Stalling(JsonLinesConnector):
    """Reads as the connector does, and stalls once its first batch is handed on."""

    def read(self, stream, *, since=None, limit=None):
        reading = super().read(stream, since=since, limit=limit)
        batches = iter(reading)

        class Stalled(type(reading)):
            def __iter__(self):
                yield next(batches)
                print("first batch written", flush=True)
                time.sleep(600)
                yield from batches

        reading.__class__ = Stalled
        return reading


def main() -> None:
    path, token, output = sys.argv[1:]
    until = datetime.now(UTC)
    request = ExtractionRequest("orders", "feed", until, since=token, issue_position=True)
    connector = Stalling(config(path, batch_bytes=256))
    extract(connector, "orders", orders_contract(), request, output)


if __name__ == "__main__":
    main()
