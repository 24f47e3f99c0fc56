"""`dogana cdc status` on a MariaDB source shows the binlog's end and retention, and how far a
pipeline's position is behind it; `dogana cdc drop-slot` says there is no slot to drop."""

from __future__ import annotations

import json

import pytest
from cdc_pipeline import COLUMNS, MariaTable

from dogana_provider.cli.main import main
from dogana_provider.connectors import MariadbBinlogConnector

pytestmark = pytest.mark.mariadb


def test_status_shows_the_binlog_lag_and_retention_and_there_is_no_slot_to_drop(
    binlog_source: MariaTable, capsys: pytest.CaptureFixture[str]
) -> None:
    config = binlog_source.config(columns=COLUMNS)
    config.pop("kind")
    reading = MariadbBinlogConnector(config).read(binlog_source.table)
    list(reading)
    position = reading.proof().position
    values = ", ".join(f"({i}, {i}, NOW(6), 'x', 1)" for i in range(1, 101))
    binlog_source.execute(f"INSERT INTO `{binlog_source.table}` VALUES {values}")
    head = binlog_source.execute("SHOW MASTER STATUS").fetchone()
    capsys.readouterr()

    source = binlog_source.conn_id
    assert main(["cdc", "status", source, "--position", str(position), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["binlog_format"] == "ROW" and int(state["binlog_expire_logs_seconds"]) >= 0
    assert state["position"] == position and not state["purged"]
    if state["lag_files"] == 0:  # another test may rotate the binlog meanwhile
        assert state["lag_bytes"] >= head[1] - (position & (2**32 - 1)) > 0
    assert state["lag_seconds"] >= 0, "the first change after the position committed by now"

    assert main(["cdc", "status", source, "--position", str(position)]) == 0
    out = capsys.readouterr().out
    assert "binlog_expire_logs_seconds" in out and "lag bytes" in out and "no slot" in out

    assert main(["cdc", "drop-slot", source, "--slot", "anything"]) == 1
    assert "MariaDB keeps no slot" in capsys.readouterr().err
