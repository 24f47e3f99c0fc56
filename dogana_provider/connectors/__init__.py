"""Sources beyond one SQL snapshot, behind one contract (contract.py) every connector keeps.

    contract.py      the nine operations, Stream, Proof (the dogana shape a read proves), errors
    conformance.py   the conformance suite: a plain function returning named checks, no skip
    jsonl.py         JSON Lines files (local or any fsspec URL) by exact byte offsets
    http.py          HTTP JSON APIs through Airflow's HttpHook, by cursor, page or offset
    sql.py           SQLite, PostgreSQL and MySQL/MariaDB tables, each read in one snapshot
    pg_logical.py    a PostgreSQL table's changes from its log (logical decoding, pgoutput)
    pgoutput.py      pgoutput's binary messages, decoded
    mariadb_binlog.py  a MariaDB table's changes from its row-based binary log
    log_capture.py   what the log connectors say alike: column differences, the full read,
                     a group of tables read together at one log position
    pg_group.py      a group of PostgreSQL tables from one slot
    mariadb_group.py   a group of MariaDB tables from one pass over the binlog
    extract.py       a read written as a delivery, its manifest stamped from the read's proof

connector_of(config) builds a connector from its configuration mapping, by its "kind".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dogana_provider.connectors.contract import (
    Connector,
    ConnectorError,
    Health,
    InvalidConfiguration,
    Proof,
    Reading,
    RefusedRead,
    ReleasedPosition,
    Stream,
    StreamColumn,
    UnknownStream,
)
from dogana_provider.connectors.http import HttpJsonConnector, SourceUnavailable
from dogana_provider.connectors.jsonl import JsonLinesConnector
from dogana_provider.connectors.log_capture import LogGroup
from dogana_provider.connectors.mariadb_binlog import MariadbBinlogConnector
from dogana_provider.connectors.mariadb_group import MariadbBinlogGroup
from dogana_provider.connectors.pg_group import PgLogicalGroup
from dogana_provider.connectors.pg_logical import PgLogicalConnector
from dogana_provider.connectors.sql import SqlConnector

CONNECTORS: dict[str, type[Connector]] = {
    JsonLinesConnector.kind: JsonLinesConnector,
    HttpJsonConnector.kind: HttpJsonConnector,
    SqlConnector.kind: SqlConnector,
    PgLogicalConnector.kind: PgLogicalConnector,
    MariadbBinlogConnector.kind: MariadbBinlogConnector,
}
"""Each connector by its kind, the "kind" of its configuration."""


def connector_of(config: Mapping[str, Any] | Connector) -> Connector:
    """A connector from its configuration ({"kind": "jsonl", "path": ...}), or itself."""
    if isinstance(config, Connector):
        return config
    options = dict(config)
    kind = options.pop("kind", None)
    if kind not in CONNECTORS:
        raise ConnectorError(
            f"kind: {kind!r} is not a connector's kind (they are {', '.join(sorted(CONNECTORS))})"
        )
    return CONNECTORS[kind](options)


GROUP_CONNECTORS: dict[str, type[LogGroup[Any]]] = {
    PgLogicalGroup.kind: PgLogicalGroup,
    MariadbBinlogGroup.kind: MariadbBinlogGroup,
}
"""The connectors that read a group's tables in one read, at one instant."""


def group_connector_of(config: Mapping[str, Any]) -> LogGroup[Any]:
    """A group's connector from its configuration ({"kind": "pg_logical", "tables": [...]})."""
    kind = config.get("kind")
    if kind not in GROUP_CONNECTORS:
        raise ConnectorError(
            f"kind: {kind!r} reads one table at a time; a group is read in one read of its "
            f"tables, by {', '.join(sorted(GROUP_CONNECTORS))}"
        )
    return GROUP_CONNECTORS[kind](config)


__all__ = [
    "CONNECTORS",
    "Connector",
    "ConnectorError",
    "Health",
    "HttpJsonConnector",
    "InvalidConfiguration",
    "JsonLinesConnector",
    "LogGroup",
    "MariadbBinlogConnector",
    "MariadbBinlogGroup",
    "PgLogicalConnector",
    "PgLogicalGroup",
    "Proof",
    "Reading",
    "RefusedRead",
    "ReleasedPosition",
    "SourceUnavailable",
    "SqlConnector",
    "Stream",
    "StreamColumn",
    "UnknownStream",
    "connector_of",
    "group_connector_of",
]
