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

connector_of(config) builds a connector from its configuration mapping, by its "kind". A
connector's module is imported when its kind is first built or its name first read from this
package: a task delivering SQL snapshots never loads the log readers, the HTTP client or the JSON
Lines reader.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from dogana_provider.connectors.http import HttpJsonConnector, SourceUnavailable
    from dogana_provider.connectors.jsonl import JsonLinesConnector
    from dogana_provider.connectors.log_capture import LogGroup
    from dogana_provider.connectors.mariadb_binlog import MariadbBinlogConnector
    from dogana_provider.connectors.mariadb_group import MariadbBinlogGroup
    from dogana_provider.connectors.pg_group import PgLogicalGroup
    from dogana_provider.connectors.pg_logical import PgLogicalConnector
    from dogana_provider.connectors.sql import SqlConnector

MODULES: dict[str, str] = {
    "JsonLinesConnector": "jsonl",
    "HttpJsonConnector": "http",
    "SourceUnavailable": "http",
    "SqlConnector": "sql",
    "PgLogicalConnector": "pg_logical",
    "MariadbBinlogConnector": "mariadb_binlog",
    "LogGroup": "log_capture",
    "PgLogicalGroup": "pg_group",
    "MariadbBinlogGroup": "mariadb_group",
}
"""The module of this package each of its connectors' names is defined in, imported on its
first use."""

CONNECTORS: dict[str, str] = {
    "jsonl": "JsonLinesConnector",
    "http": "HttpJsonConnector",
    "sql": "SqlConnector",
    "pg_logical": "PgLogicalConnector",
    "mariadb_binlog": "MariadbBinlogConnector",
}
"""Each connector's class by its kind, the "kind" of its configuration (and the class's own)."""

GROUP_CONNECTORS: dict[str, str] = {
    "pg_logical": "PgLogicalGroup",
    "mariadb_binlog": "MariadbBinlogGroup",
}
"""The connectors that read a group's tables in one read, at one instant, by kind."""


def __getattr__(name: str) -> Any:
    """A connector's name, from its module (MODULES), imported now."""
    if name not in MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{MODULES[name]}"), name)
    globals()[name] = value
    return value


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
    connector: type[Connector] = __getattr__(CONNECTORS[kind])
    return connector(options)


def group_connector_of(config: Mapping[str, Any]) -> LogGroup[Any]:
    """A group's connector from its configuration ({"kind": "pg_logical", "tables": [...]})."""
    kind = config.get("kind")
    if kind not in GROUP_CONNECTORS:
        raise ConnectorError(
            f"kind: {kind!r} reads one table at a time; a group is read in one read of its "
            f"tables, by {', '.join(sorted(GROUP_CONNECTORS))}"
        )
    group: type[LogGroup[Any]] = __getattr__(GROUP_CONNECTORS[kind])
    return group(config)


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
