"""`dogana cdc status` shows a pipeline's slot, how far behind and how much WAL it holds;
`dogana cdc drop-slot` releases it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cdc_pipeline import PgTable, drop_slot, sweep_stale_slots

from dogana_provider.cli.main import main
from dogana_provider.connectors import PgLogicalConnector

pytestmark = pytest.mark.postgres


def test_status_shows_the_slots_lag_and_retained_wal_and_drop_slot_releases_it(
    source: PgTable, capsys: pytest.CaptureFixture[str]
) -> None:
    config = source.config()
    config.pop("kind")
    reader = PgLogicalConnector(config)
    with reader:
        list(reader.read(source.table))
    source.execute(
        f"INSERT INTO \"{source.table}\" SELECT i, i, now(), 'x', true "
        "FROM generate_series(1, 100) AS i"
    )
    capsys.readouterr()
    assert main(["cdc", "status", source.conn_id, "--slot", source.slot, "--json"]) == 0
    [slot] = json.loads(capsys.readouterr().out)
    assert slot["slot"] == source.slot and slot["plugin"] == "pgoutput"
    assert slot["lag_bytes"] > 0, "the changes are not confirmed until published"
    assert slot["wal_retained_bytes"] >= slot["lag_bytes"]
    assert slot["lag_seconds"] > 0, "the oldest unconfirmed change committed before now"

    assert main(["cdc", "status", source.conn_id]) == 0
    assert source.slot in capsys.readouterr().out

    assert main(["cdc", "drop-slot", source.conn_id, "--slot", source.slot]) == 0
    assert source.confirmed() is None
    assert main(["cdc", "drop-slot", source.conn_id, "--slot", source.slot]) == 1
    assert "no slot" in capsys.readouterr().err


def test_a_slot_a_killed_test_run_left_is_swept_and_a_running_ones_is_kept(
    postgres_url: str,
) -> None:
    import psycopg

    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    dead = f"dogana_cdc_{finished.stdout.strip()}_0badf00d"
    alive = f"dogana_cdc_{os.getpid()}_0badf00e"
    with psycopg.connect(postgres_url, autocommit=True) as db:
        for slot in (dead, alive):
            db.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        try:
            assert dead in sweep_stale_slots(db)
            left = {r[0] for r in db.execute("SELECT slot_name FROM pg_replication_slots")}
            assert dead not in left and alive in left
        finally:
            for slot in (dead, alive):
                drop_slot(db, slot)


def test_status_prints_the_drop_slot_command_for_an_idle_slot_which_drops_it_as_printed(
    source: PgTable, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    config = source.config()
    config.pop("kind")
    with PgLogicalConnector(config) as reader:
        list(reader.read(source.table))
    capsys.readouterr()
    assert main(["cdc", "status", source.conn_id, "--slot", source.slot]) == 0
    printed = [
        line.strip()
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("dogana cdc drop-slot")
    ]
    assert printed == [f"dogana cdc drop-slot {source.conn_id} --slot {source.slot}"]
    words = shlex.split(printed[0])
    assert main(words[1:]) == 0
    assert source.confirmed() is None
