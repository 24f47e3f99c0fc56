"""Connector.option: one accessor for every connector's options, the configuration's value or
the default it states; a name the connector does not declare is refused."""

from __future__ import annotations

import pytest

from dogana_provider.connectors import (
    HttpJsonConnector,
    JsonLinesConnector,
    MariadbBinlogConnector,
    PgLogicalConnector,
    SqlConnector,
)

LEFT_OUT = [
    (PgLogicalConnector, "deleted_column", "deleted"),
    (MariadbBinlogConnector, "fetch_rows", 10_000),
    (PgLogicalConnector, "table", ""),
    (JsonLinesConnector, "deleted_column", "deleted"),
    (JsonLinesConnector, "batch_bytes", 8 << 20),
    (HttpJsonConnector, "timeout", 30.0),
    (SqlConnector, "key", {}),
]


@pytest.mark.parametrize(("kind", "option", "default"), LEFT_OUT)
def test_an_option_the_configuration_leaves_out_reads_as_its_default(
    kind: type, option: str, default: object
) -> None:
    assert kind({}).option(option, default) == default
    assert kind({option: "given"}).option(option, default) == "given"


def test_each_connector_reads_its_named_options_through_option() -> None:
    log = PgLogicalConnector({"table": "orders", "deleted_column": "gone", "fetch_rows": 7})
    assert (log.table, log.deleted_column, log.fetch_rows) == ("orders", "gone", 7)
    assert PgLogicalConnector({}).fetch_rows == 10_000
    jsonl = JsonLinesConnector({"deleted_column": "gone", "batch_bytes": 5})
    assert (jsonl.deleted_column, jsonl.batch_bytes) == ("gone", 5)
    assert JsonLinesConnector({}).deleted_column == "deleted"
    assert HttpJsonConnector({"timeout": 4}).number("timeout", 30) == 4.0
    assert SqlConnector({"key": {"orders": ["id"]}}).key("orders") == ("id",)


@pytest.mark.parametrize("kind", [PgLogicalConnector, JsonLinesConnector, HttpJsonConnector])
def test_a_name_that_is_not_an_option_is_refused_not_read_as_absent(kind: type) -> None:
    with pytest.raises(KeyError, match="no option 'fetch_row'"):
        kind({"fetch_row": 5}).option("fetch_row", 10_000)
