"""The operator's commands on a live receiver: what it holds, and keeping it tidy.

    dogana status RECEIVER     every table: state, dates, age, rows, receipts, activation
    dogana sweep RECEIVER      drop the staging tables that nothing will use
    dogana forget RECEIVER TABLE   remove a table that never published (a mistake's leftover)

A receiver is an Airflow connection id (found as `airflow connections get` finds it) or a
database URL (sqlite:///, postgresql://, mysql://).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from dogana_provider.cli.common import (
    OK,
    Command,
    Refused,
    UsageError,
    open_receiver,
    parse_duration,
    receiver_argument,
    receiver_call,
)
from dogana_provider.receiver.receiver import NotForgettable
from dogana_provider.report import lineage
from dogana_provider.report.activation import activation_lines
from dogana_provider.report.receipts import receipt_line
from dogana_provider.report.status import read_status
from dogana_provider.report.table import age, plural, span, text_table, when

STATUS_EXAMPLES = """
examples:
  # every table of the receiver behind the Airflow connection dogana_default
  dogana status dogana_default

  # one table of a SQLite warehouse: its regions and its last 10 receipts, as JSON
  dogana status sqlite:///data/warehouse.db --table shipments --receipts 10 --json

  # the claims of one table of a PostgreSQL receiver, and the fold of its stored receipts
  dogana claims --receiver postgresql://loader@db/warehouse --table orders --now now --limit 36h
  dogana fold --receiver dogana_default --table orders
"""

SWEEP_EXAMPLES = """
examples:
  # what a gate sweeps before deciding: recorded, killed, and unpublished for a day
  dogana sweep dogana_default
  # decisions unpublished for an hour too, on a receiver given by URL
  dogana sweep sqlite:///data/warehouse.db --older-than 1h
"""

FORGET_EXAMPLES = """
examples:
  # a table registered under a misspelt name, whose extract failed: gone from status
  dogana forget dogana_default custommers
"""


def add_commands(command: Command) -> None:
    """status, sweep and forget."""
    status = command(
        "status",
        "every table of a live receiver: state, dates, age, rows, last receipt",
        """
        Read a live receiver, by Airflow connection id or database URL (sqlite:///PATH,
        postgresql://..., mysql://...), in one committed state, as the ClaimsSensor reads it:
        every registered table with its state, complete_as_of, deletions_as_of and exact_as_of,
        its age (how long ago it was complete), the rows published, its publications, its
        activation (pending, active until X, expired at X, or not required: dogana activate)
        and its last receipt. A table with a window column is stated over the span delivered so far.
        --table shows one table's regions, its last receipts, its sources and the lineage of its
        last publications (dogana lineage --output asks for more). A password in a URL is never
        printed.
        """,
        STATUS_EXAMPLES,
    )
    receiver_argument(status)
    status.add_argument("--table", metavar="T", help="one table: its regions and last receipts")
    status.add_argument(
        "--receipts",
        type=int,
        metavar="N",
        help="how many of the last receipts to show (default 1, or 5 with --table)",
    )
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(run=cmd_status)

    sweep = command(
        "sweep",
        "drop the staging tables of a live receiver that nothing will use",
        """
        Drop the staging tables a receiver (an Airflow connection id or a database URL) holds
        for no one, as every GateOperator does before deciding: a recorded decision's (a crash
        came before its drop), a killed load's (MariaDB keeps a half-loaded table; its loader's
        lock is gone), and a decision's not published within --older-than. Never one a running
        gate is loading. Safe to repeat and to run beside gates and publishers, as long as
        --older-than is longer than a decision waits for its publish.
        """,
        SWEEP_EXAMPLES,
    )
    receiver_argument(sweep)
    sweep.add_argument(
        "--older-than",
        default="1d",
        metavar="D",
        help="an unpublished decision's age before it is swept (default 1d, as the gate)",
    )
    sweep.set_defaults(run=cmd_sweep)

    forget = command(
        "forget",
        "remove a table that never published from a live receiver",
        """
        Remove a registered table that has never published from a receiver (an Airflow
        connection id or a database URL): what a mistake leaves behind when a plan registered
        the table and its extract then failed (a wrong source connection, a misspelt source
        table, a key column the source lacks), and that status, the UI and the freshness report
        would otherwise show as unknown for ever. Its rejected receipts and ended holds go with
        it, in one transaction; its activation record stays. A table that has published is
        refused, and kept: its receipts prove what its readers were given. So is one a
        delivery is held for: discard the hold first.
        """,
        FORGET_EXAMPLES,
    )
    receiver_argument(forget)
    forget.add_argument("table", metavar="TABLE", help="the registered table to remove")
    forget.set_defaults(run=cmd_forget)


# dogana status ----------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    count = args.receipts if args.receipts is not None else (5 if args.table else 1)
    if count < 1:
        raise UsageError(f"--receipts: {count} is not a positive number of receipts")
    now = datetime.now(UTC)
    with open_receiver(args.receiver) as (hook, name):
        status = receiver_call(
            lambda: read_status(
                hook,
                now,
                tables=[args.table] if args.table else None,
                receipts=count,
                name=name,
                lineage=count if args.table else 0,
            ),
            name,
        )
    if args.json:
        print(json.dumps(status.to_dict(), indent=2))
    elif args.table:
        print(_table_status(status))
    else:
        print(_receiver_status(status))
    return OK


def _receiver_status(status: Any) -> str:
    lines = [
        f"receiver {status.receiver} ({status.dialect}) at {when(status.at)}: "
        f"{plural(len(status.tables), 'table')}"
    ]
    header = ["table", "state", "complete as of", "deletions as of", "exact as of", "age"]
    header += ["rows", "publications", "expectations", "activation", "last receipt"]
    rows = [
        [
            table.table,
            table.claims.state,
            when(table.claims.complete_as_of),
            when(table.claims.deletions_as_of),
            when(table.claims.exact_as_of),
            age(table.age),
            "-" if table.rows is None else table.rows,
            table.publications,
            table.expectations.short,
            table.activation.line(),
            receipt_line(table.receipts[0], "status") if table.receipts else "-",
        ]
        for table in status.tables
    ]
    lines.append(text_table(header, rows))
    lines += [
        f"  {table.table}: {check.name} {check.detail}"
        for table in status.tables
        for check in table.expectations.violations
    ]
    lines += [
        f"  {table.table}: held {hold.hold_id} since {when(hold.held_at)}, waiting for a person "
        f"(dogana hold show {status.receiver} {hold.hold_id})"
        for table in status.tables
        for hold in table.held
    ]
    return "\n".join(lines)


def _table_status(status: Any) -> str:
    (table,) = status.tables
    claims = table.claims
    stated_over = "the delivered span of its window" if table.windowed else "the whole table"
    lines = [
        f"table {table.table} in receiver {status.receiver} ({status.dialect}) "
        f"at {when(status.at)}: {claims.state} over {stated_over}",
        f"  complete as of   {when(claims.complete_as_of)} (age {age(table.age)})",
        f"  deletions as of  {when(claims.deletions_as_of)}",
        f"  exact as of      {when(claims.exact_as_of)}",
        f"  rows published   {'-' if table.rows is None else table.rows}",
        f"  publications     {table.publications}, last {table.ledger.publication_id or '-'}",
        f"  expectations     {', '.join(table.declared.names) or 'none_declared'}",
        f"  last publication {table.expectations.short}",
        *(f"    {c.name} {c.detail}" for c in table.expectations.violations),
        f"  held             {', '.join(h.hold_id for h in table.held) or '-'}",
        f"  activation       {table.activation.line()}",
        *activation_lines(table.activation),
        "",
        "regions",
    ]
    regions = [
        (span(r.region), r.state, when(r.complete_as_of), when(r.deletions_as_of))
        for r in claims.regions
    ]
    header = ("region", "state", "complete as of", "deletions as of")
    lines += [text_table(header, regions, indent="  "), "", "sources, the most recent first"]
    lines.append(lineage.sources(table.sources or (), indent="  "))
    lines += ["", "last publications' lineage, newest first"]
    lines.append(lineage.fed_by(table.runs or (), indent="  "))
    lines += ["", "last receipts, newest first"]
    receipts = [
        (
            when(r.received_at),
            r.outcome,
            r.manifest.shape,
            when(r.manifest.produced_at),
            r.manifest.rows,
            r.manifest.tombstones,
            ", ".join(c.name for c in r.failed) or "-",
            r.source or "-",
        )
        for r in table.receipts
    ]
    columns = ("received at", "outcome", "shape", "produced at", "rows", "tombstones", "failed")
    lines.append(text_table((*columns, "source"), receipts, indent="  "))
    return "\n".join(lines)


# dogana sweep -----------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    older_than = parse_duration(args.older_than, "--older-than")
    with open_receiver(args.receiver) as (hook, name):
        swept = hook.receiver.sweep(older_than)
    for table in swept:
        print(f"dropped {table}")
    print(f"receiver {name}: {plural(len(swept), 'staging table')} swept")
    return OK


# dogana forget ----------------------------------------------------------------------------------


def cmd_forget(args: argparse.Namespace) -> int:
    with open_receiver(args.receiver) as (hook, name):
        try:
            removed = receiver_call(lambda: hook.receiver.forget(args.table), name)
        except NotForgettable as exc:
            raise Refused(f"receiver {name}: {exc}") from None
    receipts = plural(removed, "rejected receipt")
    print(f"receiver {name}: table {args.table} forgotten, with its {receipts}")
    return OK
