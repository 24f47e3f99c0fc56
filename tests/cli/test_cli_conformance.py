"""`dogana conformance SOURCE`: the conformance suite against a source a user configured."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from api_servers import COLUMNS, api_server

from dogana_provider.cli.main import main


def orders(path: Path, count: int) -> Path:
    path.write_text("".join(f'{{"order_id": {n}, "amount": {n}.5}}\n' for n in range(count)))
    return path


def test_conformance_prints_every_check_and_exits_0_when_all_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = orders(tmp_path / "orders.jsonl", 5)
    status = main(
        [
            "conformance",
            str(source),
            "--option",
            'key=["order_id"]',
            "--option",
            "whole_history=true",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith(f"jsonl connector, stream orders: {source}\n")
    assert "pass     read_honours_limit" in out and "all 17 checks passed" in out


def test_conformance_exits_1_naming_the_check_a_source_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = orders(tmp_path / "few.jsonl", 2)
    status = main(["conformance", str(source), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1 and report["passed"] is False
    failed = {c["name"]: c["detail"] for c in report["checks"] if not c["passed"]}
    assert "at least 3" in failed["read_yields_arrow_batches"]


def test_conformance_reads_a_jsonl_connection_by_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = orders(tmp_path / "drop.jsonl", 4)
    extra = {"path": str(source), "key": ["order_id"], "whole_history": True}
    monkeypatch.setenv(
        "AIRFLOW_CONN_ORDERS_DROP", json.dumps({"conn_type": "jsonl", "extra": extra})
    )
    assert main(["conformance", "orders_drop", "--stream", "drop"]) == 0
    assert "all 17 checks passed" in capsys.readouterr().out


def test_conformance_refuses_a_url_it_has_no_connector_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["conformance", "ftp://example.invalid/x.csv"]) == 2
    assert "names a JSON Lines file (.jsonl or .ndjson), an HTTP API" in capsys.readouterr().err


def test_conformance_reads_an_http_api_by_its_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with api_server(monkeypatch) as api:
        argv = ["conformance", f"{api.url}/feed", "--option", f"columns={json.dumps(COLUMNS)}"]
        for option in (
            'key=["order_id"]',
            "feed=true",
            "deleted_field=deleted",
            "instant_field=as_of",
            'pagination={"type": "cursor", "size": 3, "cursor_field": "seq"}',
        ):
            argv += ["--option", option]
        status = main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"http connector, stream feed: {api.url}/feed" in out
    assert "all 17 checks passed" in out


def test_conformance_reads_a_sqlite_table_by_its_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
        connection.executemany("INSERT INTO orders VALUES (?, ?)", [(n, "x") for n in range(4)])
    argv = ["conformance", f"sqlite:///{database}", "--stream", "orders"]
    assert main([*argv, "--option", 'key={"orders": ["id"]}']) == 0
    assert "sql connector, stream orders" in capsys.readouterr().out
