"""A log read that stalls after its first batch until it is killed: tests kill -9 it mid-read.

python killed_extract.py CONFIG_JSON CONTRACT_JSON SINCE OUTPUT
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from dogana_core import Contract
from dogana_core.planner import ExtractionRequest
from dogana_provider.connectors import PgLogicalConnector
from dogana_provider.connectors.extract import extract

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, run as a script

from stalled_reads import stalling

Stalling = stalling(PgLogicalConnector)


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
