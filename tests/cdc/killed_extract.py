"""A log read that stalls after its first batch until it is killed: tests kill -9 it mid-read.

python killed_extract.py CONFIG_JSON CONTRACT_JSON SINCE OUTPUT
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime

from dogana_core import Contract
from dogana_core.planner import ExtractionRequest
from dogana_provider.connectors import PgLogicalConnector
from dogana_provider.connectors.extract import extract


class Stalling(PgLogicalConnector):
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
    config, contract, since, output = sys.argv[1:]
    options = json.loads(config)
    options.pop("kind")
    contract = Contract.from_json(contract)
    request = ExtractionRequest(
        contract.table, "log", datetime.now(UTC), since=int(since), issue_position=True
    )
    extract(Stalling(options), contract.table, contract, request, output)


if __name__ == "__main__":
    main()
