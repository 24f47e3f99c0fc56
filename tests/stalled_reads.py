"""A connector whose read stalls once its first batch is handed on, until it is killed: the
scripts tests kill -9 mid-read (tests/cdc/killed_extract.py, tests/connectors/killed_read.py)
build theirs from it. The line "first batch written" tells the test the batch is out."""

from __future__ import annotations

import time
from typing import Any, TypeVar

from dogana_provider.connectors.contract import Connector

C = TypeVar("C", bound=type[Connector])

WRITTEN = "first batch written"


def stalling(connector: C) -> C:
    """A subclass of the connector class whose reads stall after their first batch."""

    class Stalling(connector):  # type: ignore[valid-type,misc]
        def read(self, stream: str, *, since: Any = None, limit: int | None = None) -> Any:
            reading = super().read(stream, since=since, limit=limit)
            batches = iter(reading)

            class Stalled(type(reading)):  # type: ignore[misc]
                def __iter__(self) -> Any:
                    yield next(batches)
                    print(WRITTEN, flush=True)
                    time.sleep(600)
                    yield from batches

            reading.__class__ = Stalled
            return reading

    return Stalling  # type: ignore[return-value]
