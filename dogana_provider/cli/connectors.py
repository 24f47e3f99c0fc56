"""The command that checks a source a user configured against the connector contract.

    dogana conformance SOURCE [--stream NAME] [--option KEY=JSON ...] [--json]

SOURCE is an Airflow connection id or a URL. A URL ending in .jsonl or .ndjson (a local path,
file://, or any fsspec URL such as s3://) is a JSON Lines file; an http:// or https:// URL is an
HTTP JSON API, its path the endpoint (this process's own http connection holds the rest); a
database URL (sqlite:///PATH, postgresql://, mysql://) or a connection of conn_type sqlite,
postgres or mysql is a SQL source, its stream the table --stream names. A
connection whose conn_type is "jsonl" names its file as its host (or its extra's "path") and
its options in its extra; one whose conn_type is "http" is an API, its options given here (an
http connection's extra is its headers). Every --option adds or overrides one option of the
connector's configuration, its value read as JSON where it parses (["order_id"], true, 4096)
and as text otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any
from urllib.parse import urlsplit

from dogana_provider.cli.common import (
    OK,
    REFUSED,
    Command,
    UsageError,
    connection_of_id,
    connection_of_url,
    stdout_to_stderr,
)
from dogana_provider.report.table import text_table

CONFORMANCE_EXAMPLES = """
examples:
  # a JSON Lines file on local disk, its key and its whole history declared
  dogana conformance data/orders.jsonl --option key='["order_id"]' --option whole_history=true

  # the same file in a bucket the delivery folder reaches, one stream, as JSON
  dogana conformance s3://drops/orders.jsonl --stream orders --json

  # the source behind an Airflow connection of conn_type jsonl, its extra holding the options,
  # as `airflow connections add orders_drop --conn-json '{"conn_type": "jsonl", "extra":
  # {"path": "data/orders.jsonl", "key": ["order_id"], "whole_history": true}}'` adds it
  dogana conformance orders_drop

  # a table of a SQLite file, read in one snapshot in key order
  dogana conformance sqlite:///shop.sqlite --stream orders --option key='{"orders": ["id"]}'

  # the same table in a PostgreSQL database
  dogana conformance postgresql://reader@db/shop --stream orders --option key='{"orders": ["id"]}'

  # a change log an API pages by cursor, its rows' seq the fallback position, two columns
  # read from their fields in the nested record
  dogana conformance https://api.example.com/v1/order-changes \\
    --option columns='{"seq": "int", "order_id": "int", "customer_id": "int", "deleted": "bool"}' \\
    --option paths='{"order_id": "order.id", "customer_id": "order.customer.id"}' \\
    --option key='["order_id"]' --option feed=true --option deleted_field=deleted \\
    --option pagination='{"type": "cursor", "cursor_field": "seq"}'
"""

URL_CONN_ID = "dogana_cli_source"
DATABASE_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")

FILE_SUFFIXES = (".jsonl", ".ndjson")


def add_commands(command: Command) -> None:
    """conformance."""
    parser = command(
        "conformance",
        "check a configured source against the connector contract",
        """
        Run the connector conformance suite against a source: validate, connect, discover,
        health, read with exact limits, checkpoint and resume, bounded backfill, disconnect,
        and what each read proves. Every check passes or fails; none is skipped, so a source
        that cannot honestly serve a check fails it, and the command exits 1. The source is
        only read, never written; its stream needs at least three rows.
        """,
        CONFORMANCE_EXAMPLES,
    )
    parser.add_argument("source", metavar="SOURCE", help="an Airflow connection id or a URL")
    parser.add_argument("--stream", metavar="NAME", help="the stream to check (default: first)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="an option of the connector's configuration (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=cmd_conformance)


def cmd_conformance(args: argparse.Namespace) -> int:
    config = source_config(args.source)
    config.update(options(args.option))
    if config["kind"] == "sql" and "tables" not in config and args.stream:
        config["tables"] = [args.stream]
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    parts = urlsplit(args.source)
    variable = f"AIRFLOW_CONN_{URL_CONN_ID.upper()}"
    if parts.scheme in ("http", "https"):
        # This process's own connection: HttpHook reads its base URL from one.
        os.environ[variable] = f"{parts.scheme}://{parts.netloc}"
    elif config["kind"] == "sql" and config.get("conn_id") == URL_CONN_ID:
        os.environ[variable] = connection_of_url(args.source)[0]
    with stdout_to_stderr():
        from dogana_provider.connectors import ConnectorError, connector_of
        from dogana_provider.connectors.conformance import conformance

        try:
            connector = connector_of(config)
        except ConnectorError as exc:
            raise UsageError(str(exc)) from None
        report = conformance(connector, args.stream)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"{connector.kind} connector, stream {report.stream}: {args.source}")
        rows = [("pass" if c.passed else "FAIL", c.name, c.detail) for c in report.checks]
        print(text_table(("verdict", "check", "detail"), rows))
        failed = len(report.failed)
        print(
            f"{len(report.checks) - failed} passed, {failed} failed"
            if failed
            else f"all {len(report.checks)} checks passed"
        )
    return OK if report.passed else REFUSED


def source_config(source: str) -> dict[str, Any]:
    """The connector configuration a URL or an Airflow connection names."""
    if source.lower().endswith(FILE_SUFFIXES):
        return {"kind": "jsonl", "path": source}
    parts = urlsplit(source)
    if parts.scheme in ("http", "https"):
        endpoint = parts.path + (f"?{parts.query}" if parts.query else "")
        return {"kind": "http", "conn_id": URL_CONN_ID, "endpoint": endpoint or "/"}
    if parts.scheme.split("+")[0].lower() in DATABASE_SCHEMES:
        connection_of_url(source)  # a URL it cannot open is a usage error, named now
        return {"kind": "sql", "conn_id": URL_CONN_ID}
    if "://" in source:
        raise UsageError(
            f"{source}: a source URL names a JSON Lines file (.jsonl or .ndjson), an HTTP "
            "API (http://, https://) or a database (sqlite:///, postgresql://, mysql://); "
            "other sources by an Airflow connection id"
        )
    with stdout_to_stderr():
        connection = json.loads(connection_of_id(source))
    kind = connection.get("conn_type")
    extra = connection.get("extra") or {}
    if isinstance(extra, str):
        extra = json.loads(extra) if extra.strip() else {}
    if kind == "jsonl":
        path = extra.pop("path", None) or connection.get("host")
        return {"kind": "jsonl", "path": path, **extra}
    if kind == "http":
        return {"kind": "http", "conn_id": source}
    if kind in ("sqlite", "postgres", "mysql"):
        return {"kind": "sql", "conn_id": source}
    hint = ""
    if kind == "generic":
        # What `airflow connections add --conn-type jsonl` stores: no provider registers jsonl.
        hint = (
            "; `airflow connections add --conn-type jsonl` stores generic, as no provider "
            """registers jsonl: add it with --conn-json '{"conn_type": "jsonl", "extra": {...}}'"""
        )
    raise UsageError(
        f"{source!r}: conn_type {kind!r} is not a connector's "
        f"(jsonl, http, sqlite, postgres, mysql){hint}"
    )


def options(pairs: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {pair!r}: write KEY=VALUE")
        try:
            found[key] = json.loads(text)
        except ValueError:
            found[key] = text
    return found
