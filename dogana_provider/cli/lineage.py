"""The `dogana lineage` command: what fed a receiver's table, and what a source produced.

    dogana lineage RECEIVER --output TABLE [--since WHEN] [--limit N] [--json]
    dogana lineage RECEIVER --input SOURCE [--source-conn ID] [--since WHEN] [--limit N] [--json]

Answered from the receiver's own lineage edges (receiver/lineage_store.py), one per publication,
written in the commit that recorded its receipt: the source connection and table, the DAG, run
and task that read it, the publication and its manifest, when. A question names its output or
its input and is bounded by --since and --limit; one naming neither is a usage error, since
every edge at once is an export, not a query.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from dogana_provider.cli.common import (
    OK,
    Command,
    UsageError,
    open_receiver,
    parse_datetime,
    receiver_argument,
    receiver_call,
)
from dogana_provider.receiver.lineage_store import LIMIT, MOST, Edge
from dogana_provider.report import durations
from dogana_provider.report import lineage as report
from dogana_provider.report.table import plural, when

EXAMPLES = """
examples:
  # what fed table orders of the receiver behind dogana_default: the last 20 publications
  dogana lineage dogana_default --output orders

  # what the source table shop.orders produced in the last 7 days, on any connection
  dogana lineage dogana_default --input shop.orders --since 7d

  # the same, from connection shop_db only, since an instant, at most 5, as JSON
  dogana lineage sqlite:///warehouse.db --input shop.orders --source-conn shop_db \\
      --since 2026-12-01T00:00:00Z --limit 5 --json
"""

UNFILTERED = (
    "give --output TABLE (what fed it) or --input SOURCE (what it produced): every edge at once "
    "is an export, not a query"
)


def add_commands(command: Command) -> None:
    """lineage."""
    lineage = command(
        "lineage",
        "what fed a receiver's table, or what a source produced",
        """
        Answer from a live receiver (an Airflow connection id or a database URL) which
        publications fed a table (--output) or which a source fed (--input: the source's table
        as the extract read it, or query:DIGEST for a table_sql), newest first: the source
        connection and table, the DAG, run and task that read it, the rows, the read's
        produced_at, the publication and its manifest. Each publication wrote its edge in the
        commit that recorded its receipt, once, whatever retries and replays came after; a
        refused delivery wrote none. OpenLineage events, where configured, stay the system of
        record; this is the receiver's own answer. Every edge at once is an export, not a
        query: name --output or --input.
        """,
        EXAMPLES,
    )
    receiver_argument(lineage)
    lineage.add_argument("--output", metavar="TABLE", help="what fed this receiver's table")
    lineage.add_argument("--input", metavar="SOURCE", help="what this source table produced")
    lineage.add_argument(
        "--source-conn", metavar="ID", help="with --input: only the source on this connection"
    )
    lineage.add_argument(
        "--since",
        metavar="WHEN",
        help="only publications at or after WHEN: an instant (2026-12-01T00:00:00Z) or an age "
        "(36h, 7d)",
    )
    lineage.add_argument(
        "--limit",
        type=int,
        default=LIMIT,
        metavar="N",
        help=f"at most N publications, newest first (default {LIMIT}, at most {MOST})",
    )
    lineage.add_argument("--json", action="store_true", help="print the edges as JSON")
    lineage.set_defaults(run=cmd_lineage)


def cmd_lineage(args: argparse.Namespace) -> int:
    if args.output is None and args.input is None:
        raise UsageError(UNFILTERED)
    if args.source_conn is not None and args.input is None:
        raise UsageError("--source-conn narrows --input: give --input SOURCE too")
    if not 1 <= args.limit <= MOST:
        raise UsageError(f"--limit: {args.limit}; give 1 to {MOST} (more is an export)")
    now = datetime.now(UTC)
    since = None if args.since is None else since_of(args.since, now)
    with open_receiver(args.receiver) as (hook, name):
        if args.output is not None:
            receiver_call(lambda: hook.ledgers([args.output]), name)  # a registered table
        edges = receiver_call(
            lambda: hook.receiver.lineage(
                output=args.output,
                source=args.input,
                source_conn_id=args.source_conn,
                since=since,
                limit=args.limit,
            ),
            name,
        )
    if args.json:
        print(json.dumps(answer(name, args, since, edges), indent=2))
        return OK
    print(heading(name, args, since, edges))
    if edges:
        print(report.fed_by(edges) if args.input is None else report.produced(edges))
    return OK


def since_of(text: str, now: datetime) -> datetime:
    """--since: an RFC 3339 instant, or an age before now (36h, 7d, PT36H)."""
    try:
        return now - durations.parse_duration(text)
    except (ValueError, OverflowError):
        return parse_datetime(text, "--since")


def heading(name: str, args: argparse.Namespace, since: datetime | None, edges: list[Edge]) -> str:
    if args.input is None:
        asked = f"what fed {args.output}"
    else:
        on = "" if args.source_conn is None else f" on {args.source_conn}"
        into = "" if args.output is None else f" into {args.output}"
        asked = f"what {args.input}{on} produced{into}"
    bound = "" if since is None else f" since {when(since)}"
    found = plural(len(edges), "publication")
    more = f", the newest {args.limit}" if len(edges) == args.limit else ""
    return f"receiver {name}: {asked}{bound}: {found}{more}, newest first"


def answer(
    name: str, args: argparse.Namespace, since: datetime | None, edges: list[Edge]
) -> dict[str, object]:
    return {
        "receiver": name,
        "output": args.output,
        "input": args.input,
        "source_conn_id": args.source_conn,
        "since": None if since is None else since.isoformat(),
        "limit": args.limit,
        "edges": [edge.to_dict() for edge in edges],
    }
