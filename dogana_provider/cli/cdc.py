"""The operator's commands on log-based change capture: the source's slots or binlog.

    dogana cdc status SOURCE [--slot NAME] [--json]    PostgreSQL: each logical slot, how far
                                                        behind, how much WAL it holds back
    dogana cdc status SOURCE [--position N | --receiver R --table T] [--json]
                                                        MariaDB: the binlog's end and retention,
                                                        and how far a pipeline's position is behind
    dogana cdc drop-slot SOURCE --slot NAME             drop a slot whose pipeline is gone

SOURCE is an Airflow connection id or a URL (postgresql://, mysql://). A PostgreSQL slot holds
every byte of WAL after its restart point until its pipeline confirms it, so a slot whose
pipeline stopped fills the source's disk: status shows each slot's lag and the WAL it retains,
and drop-slot releases it (the pipeline, if it runs again, is refused by slot_dropped and needs
a full read). MariaDB keeps no slot: a pipeline's position lives in the receiver's ledger only,
and the server keeps its binlogs for binlog_expire_logs_seconds whoever reads them; a pipeline
stopped longer than that is refused (binlog_purged) and needs a full read. There is nothing to
drop.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import Any
from urllib.parse import urlsplit

from dogana_provider.cli.common import (
    OK,
    Command,
    Refused,
    UsageError,
    connection_of_id,
    connection_of_url,
    open_receiver,
    stdout_to_stderr,
)
from dogana_provider.report.table import text_table

URL_CONN_ID = "dogana_cli_source"
LOG_SCHEMES = ("postgresql", "postgres", "mysql", "mariadb")
BINLOG = "mariadb_binlog"  # the connector kind whose source keeps no slot

CDC_EXAMPLES = """
examples:
  # every logical slot of the source behind the connection shop_db
  dogana cdc status shop_db

  # one pipeline's slot, as JSON
  dogana cdc status postgresql://postgres@db/shop --slot dogana_orders --json

  # drop the slot of a pipeline that is gone, releasing the WAL it holds
  dogana cdc drop-slot shop_db --slot dogana_orders

  # MariaDB: the binlog's end and retention, and how far the orders pipeline is behind
  dogana cdc status maria_shop --receiver warehouse --table orders
  dogana cdc status mysql://reader@db/shop --position 4294967623 --json
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
        session is reading it, and the drop-slot command of each slot no session reads (a
        live pipeline's too, between its reads: drop only one whose pipeline is gone).
        drop-slot drops one, releasing its WAL; the pipeline it served needs a full read to
        start again.

        A MariaDB source's binlog has no slot, so nothing to drop: status prints the binlog's
        end, the files the server keeps and for how long (binlog_expire_logs_seconds), and,
        given a pipeline's position (--position, or the one a receiver's ledger holds for
        --table), how far it is behind: bytes when in the same file, files between, and seconds
        since the first transaction after it committed.
        """,
        CDC_EXAMPLES,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="each logical slot: lag and WAL retained")
    drop = actions.add_parser("drop-slot", help="drop a slot, releasing the WAL it holds")
    for action in (status, drop):
        action.add_argument("source", metavar="SOURCE", help="an Airflow connection id or a URL")
    status.add_argument("--slot", metavar="NAME", help="only this slot (PostgreSQL)")
    status.add_argument(
        "--position", type=int, metavar="N", help="a pipeline's binlog position (MariaDB)"
    )
    status.add_argument(
        "--receiver", metavar="CONN", help="the receiver whose ledger holds --table's position"
    )
    status.add_argument("--table", metavar="TABLE", help="the table whose position to compare")
    status.add_argument("--json", action="store_true", help="print the slots as JSON")
    drop.add_argument("--slot", metavar="NAME", required=True, help="the slot to drop")
    status.set_defaults(run=cmd_status)
    drop.set_defaults(run=cmd_drop_slot)


def cmd_status(args: argparse.Namespace) -> int:
    conn_id, hook, kind = _source(args.source)
    if kind == BINLOG:
        return _binlog_status(args, conn_id, hook)
    return _slot_status(args)


def _slot_status(args: argparse.Namespace) -> int:
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
    idle = [s["slot"] for s in found if not s["active"]]
    if idle:
        # The source as given, unless its URL carries a password: that is not printed again.
        source = args.source if urlsplit(args.source).password is None else "SOURCE"
        print(
            "a slot no session reads keeps its WAL until its pipeline reads again; "
            "one whose pipeline is gone, drop:"
        )
        for slot in idle:
            print(f"  dogana cdc drop-slot {shlex.quote(source)} --slot {slot}")
    return OK


def _binlog_status(args: argparse.Namespace, conn_id: str, hook: Any) -> int:
    from dogana_provider.connectors.mariadb_binlog import binlog_status, position_text, unfit

    position = args.position
    if position is None and (args.receiver or args.table):
        if not (args.receiver and args.table):
            raise UsageError("--receiver and --table go together: the ledger holding a position")
        with open_receiver(args.receiver) as (hook, _):
            held = hook.receiver.ledger(args.table).generation
        if not isinstance(held, int):
            raise Refused(f"{args.table}: the receiver's ledger holds no binlog position")
        position = held
    with stdout_to_stderr():
        state = binlog_status(hook, conn_id, position)
    if args.json:
        print(json.dumps(state, indent=2, default=str))
        return OK
    if state["head"] is None:
        raise Refused(f"{args.source}: the binlog is off (log_bin); log capture needs it")
    print(
        f"{args.source}: binlog at {position_text(state['head'])} ({state['head_file']}), "
        f"{len(state['files'])} files kept, {sum(state['files'].values())} bytes, for "
        f"binlog_expire_logs_seconds={state['binlog_expire_logs_seconds']}"
    )
    problem = unfit(state)
    if problem is not None:
        print(f"unfit for log capture: {problem}")
    if position is not None:
        behind = "-" if state["lag_bytes"] is None else state["lag_bytes"]
        seconds = "-" if state["lag_seconds"] is None else f"{state['lag_seconds']:.1f}"
        rows = [[state["position_text"], behind, state["lag_files"], seconds, state["purged"]]]
        print(text_table(["position", "lag bytes", "lag files", "lag seconds", "purged"], rows))
    print("MariaDB keeps no slot for a pipeline: nothing holds the binlog, nothing to drop.")
    return OK


def cmd_drop_slot(args: argparse.Namespace) -> int:
    from dogana_provider.connectors.pg_logical import drop_slot

    _, _, kind = _source(args.source)
    if kind == BINLOG:
        raise Refused(
            f"{args.source}: MariaDB keeps no slot, so there is none to drop; a pipeline's "
            "position lives in its receiver's ledger, and the server keeps binlogs for "
            "binlog_expire_logs_seconds whoever reads them"
        )

    if not _with_source(args.source, lambda connection: drop_slot(connection, args.slot)):
        raise Refused(f"{args.source}: no slot {args.slot} to drop")
    print(f"{args.source}: slot {args.slot} dropped; the WAL it held is released")
    return OK


def _source(source: str) -> tuple[str, Any, str | None]:
    """The source's connection id (a URL made one), its hook, and the kind of connector that
    reads its log, as its dialect says."""
    conn_id = source
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    if "://" in source:
        if urlsplit(source).scheme.split("+")[0].lower() not in LOG_SCHEMES:
            raise UsageError(
                f"{source}: log capture reads PostgreSQL or MariaDB (postgresql://, mysql://)"
            )
        os.environ[f"AIRFLOW_CONN_{URL_CONN_ID.upper()}"] = connection_of_url(source)[0]
        conn_id = URL_CONN_ID
    with stdout_to_stderr():
        if conn_id == source:
            # As the receiver's commands find theirs: the environment, a secrets backend, or
            # the metadata database, where a terminal's Task SDK lookup does not reach.
            os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = connection_of_id(conn_id)
        from dogana_provider.dialects import dialect_for
        from dogana_provider.hooks.sql import sql_hook

        hook = sql_hook(conn_id, "source")
    return conn_id, hook, dialect_for(hook).log_connector


def _with_source(source: str, call: Any) -> Any:
    """call(connection) on an autocommit session of the source."""
    _, hook, _ = _source(source)
    with stdout_to_stderr():
        connection = hook.get_conn()
        connection.autocommit = True
        try:
            return call(connection)
        finally:
            connection.close()
