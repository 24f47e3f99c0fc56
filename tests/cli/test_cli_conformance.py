"""`dogana conformance SOURCE`: the conformance suite against a source a user configured."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from api_servers import COLUMNS, api_server
from cli_fixtures import DOGANA, dogana
from cryptography.fernet import Fernet
from test_cli_help import examples

from dogana_provider.cli.main import main


def help_comments(command: str, cwd: Path) -> list[str]:
    """The comments of `dogana COMMAND --help`'s examples, each example's joined in one line."""
    text = dogana(command, "--help", cwd=cwd).out
    section = text.split("\nexamples:\n", 1)[1].split("\nexit status:", 1)[0]
    return [
        " ".join(line.strip().removeprefix("# ") for line in block.splitlines())
        for block in section.split("\n\n")
    ]


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


def test_a_generic_connection_is_refused_saying_how_to_add_a_jsonl_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What `airflow connections add --conn-type jsonl` stores: Airflow knows no jsonl type.
    monkeypatch.setenv("AIRFLOW_CONN_ORDERS_DROP", json.dumps({"conn_type": "generic"}))
    assert main(["conformance", "orders_drop"]) == 2
    err = capsys.readouterr().err
    assert "conn_type 'generic' is not a connector's" in err
    assert """--conn-json '{"conn_type": "jsonl", "extra": {...}}'""" in err


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


@pytest.mark.airflow  # orders_drop is a connection in the metadata database
@pytest.mark.postgres  # one example reads a PostgreSQL table
def test_the_conformance_help_examples_run_as_written(
    tmp_path: Path, airflow_home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each example of `dogana conformance --help`, run by bash with the installed script in a
    folder holding what it names, passes every check.

    Three parts of them cannot exist here and are replaced, nothing else: s3://drops/ by a
    file:// URL (no S3 and no s3fs here; fsspec's memory:// lives inside one process, and the
    command is a process of its own); the PostgreSQL URL's reader@db/shop by the test server
    and a database of the test's own; and https://api.example.com by the test API's address
    (tests/api_server.py, serving /v1/order-changes as the example's shop does).
    """
    import psycopg

    data = tmp_path / "data"
    data.mkdir()
    orders(data / "orders.jsonl", 5)
    (tmp_path / "drops").mkdir()
    orders(tmp_path / "drops" / "orders.jsonl", 5)
    with sqlite3.connect(tmp_path / "shop.sqlite") as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)")
        connection.executemany("INSERT INTO orders VALUES (?, ?)", [(n, "x") for n in range(4)])
    database = f"shop_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {database}")
    shop_url = urlunsplit(urlsplit(postgres_url)._replace(path=f"/{database}"))
    with psycopg.connect(shop_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE orders (id integer PRIMARY KEY, note text)")
        connection.execute("INSERT INTO orders SELECT n, 'x' FROM generate_series(1, 4) n")
    # The connection as the help's comment adds it (the path relative, as the command runs
    # here), with one fernet key for every process: the metadata database keeps the extra
    # encrypted, and unit test mode would make each process a key of its own.
    monkeypatch.setenv("AIRFLOW__CORE__FERNET_KEY", Fernet.generate_key().decode())
    [added] = [line for line in help_comments("conformance", tmp_path) if "--conn-json" in line]
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run(
        [*airflow, *shlex.split(added.split("`airflow ", 1)[1].split("`")[0])],
        cwd=tmp_path,
        check=True,
    )
    try:
        with api_server(monkeypatch) as api:
            replaced = {
                "s3://drops/": (tmp_path / "drops").as_uri() + "/",
                "postgresql://reader@db/shop": shop_url,
                "https://api.example.com": api.url,
            }
            env = {**os.environ, "PATH": f"{DOGANA.parent}{os.pathsep}{os.environ['PATH']}"}
            lines = examples("conformance", tmp_path)
            assert len(lines) == 6
            for line in lines:
                for printed, here in replaced.items():
                    line = line.replace(printed, here)
                done = subprocess.run(
                    ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                    timeout=300,
                )  # fmt: skip
                assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
                passed = (
                    json.loads(done.stdout)["passed"]
                    if "--json" in line
                    else done.stdout.rstrip().endswith("all 17 checks passed")
                )
                assert passed, f"{line}\n{done.stdout}"
    finally:
        subprocess.run([*airflow, "connections", "delete", "orders_drop"], check=True)
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
