"""The operator's commands on log-based change capture: the source's replication slots.

    dogana cdc status SOURCE [--slot NAME] [--json]    each logical slot: how far behind, how
                                                        much WAL it holds back
    dogana cdc drop-slot SOURCE --slot NAME             drop a slot whose pipeline is gone

SOURCE is the PostgreSQL source: an Airflow connection id or a postgresql:// URL. A slot holds
every byte of WAL after its restart point until its pipeline confirms it, so a slot whose
pipeline stopped fills the source's disk: status shows each slot's lag and the WAL it retains,
and drop-slot releases it (the pipeline, if it runs again, is refused by slot_dropped and needs
a full read).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any
from urllib.parse import urlsplit

from dogana_provider.cli.common import (
    OK,
    Command,
    Refused,
    UsageError,
    connection_of_url,
    stdout_to_stderr,
)
from dogana_provider.report.table import text_table

URL_CONN_ID = "dogana_cli_source"

CDC_EXAMPLES = """
examples:
  # every logical slot of the source behind the connection shop_db
  dogana cdc status shop_db

  # one pipeline's slot, as JSON
  dogana cdc status postgresql://postgres@db/shop --slot dogana_orders --json

  # drop the slot of a pipeline that is gone, releasing the WAL it holds
  dogana cdc drop-slot shop_db --slot dogana_orders
"""


def add_commands(command: Command) -> None:
    """cdc status, cdc drop-slot."""
    parser = command(
        "cdc",
        "a log-capture source's replication slots: status, drop-slot",
        """
        Log-based change capture reads a PostgreSQL table's changes through a logical
        replication slot per pipeline. status prints each logical slot of the source (or the one
        --slot names): its confirmed position, the WAL's head, the bytes it has not confirmed
        (lag), how long ago its oldest unconfirmed change committed (for the slots this
        connector makes), the bytes of WAL it keeps from removal (retained), and whether a
        session is reading it. drop-slot drops one, releasing its WAL; the pipeline it served
        needs a full read to start again.
        """,
        CDC_EXAMPLES,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="each logical slot: lag and WAL retained")
    drop = actions.add_parser("drop-slot", help="drop a slot, releasing the WAL it holds")
    for action in (status, drop):
        action.add_argument("source", metavar="SOURCE", help="an Airflow connection id or a URL")
    status.add_argument("--slot", metavar="NAME", help="only this slot")
    status.add_argument("--json", action="store_true", help="print the slots as JSON")
    drop.add_argument("--slot", metavar="NAME", required=True, help="the slot to drop")
    status.set_defaults(run=cmd_status)
    drop.set_defaults(run=cmd_drop_slot)


def cmd_status(args: argparse.Namespace) -> int:
    from dogana_provider.connectors.pg_logical import slots

    found = _with_source(
        args.source, lambda connection: slots(connection, args.slot, lag_in_seconds=True)
    )
    if args.slot and not found:
        raise Refused(f"{args.source}: no logical slot {args.slot}")
    if args.json:
        print(json.dumps(found, indent=2))
        return OK
    if not found:
        print(f"{args.source}: no logical replication slot")
        return OK
    rows = [
        [
            s["slot"],
            s["plugin"],
            s["confirmed_lsn"],
            s["head_lsn"],
            s["lag_bytes"],
            "-" if s["lag_seconds"] is None else f"{s['lag_seconds']:.1f}",
            s["wal_retained_bytes"],
            s["wal_status"],
            "yes" if s["active"] else "no",
        ]
        for s in found
    ]
    print(
        text_table(
            [
                "slot",
                "plugin",
                "confirmed",
                "head",
                "lag bytes",
                "lag seconds",
                "WAL retained",
                "WAL",
                "active",
            ],
            rows,
        )
    )
    return OK


def cmd_drop_slot(args: argparse.Namespace) -> int:
    from dogana_provider.connectors.pg_logical import drop_slot

    if not _with_source(args.source, lambda connection: drop_slot(connection, args.slot)):
        raise Refused(f"{args.source}: no slot {args.slot} to drop")
    print(f"{args.source}: slot {args.slot} dropped; the WAL it held is released")
    return OK


def _with_source(source: str, call: Any) -> Any:
    """call(connection) on an autocommit session of the source."""
    conn_id = source
    if "://" in source:
        if urlsplit(source).scheme.split("+")[0].lower() not in ("postgresql", "postgres"):
            raise UsageError(f"{source}: log capture reads PostgreSQL (postgresql://)")
        os.environ[f"AIRFLOW_CONN_{URL_CONN_ID.upper()}"] = connection_of_url(source)[0]
        conn_id = URL_CONN_ID
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    with stdout_to_stderr():
        from dogana_provider.hooks.sql import sql_hook

        connection = sql_hook(conn_id, "source").get_conn()
        connection.autocommit = True
        try:
            return call(connection)
        finally:
            connection.close()
