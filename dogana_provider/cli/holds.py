"""The `dogana holds` and `dogana hold` commands: held deliveries, for the person who ends them.

    dogana holds RECEIVER [--table T]               the deliveries a receiver holds
    dogana hold show RECEIVER ID [--limit N]        one hold: its held expectations, the rows
                                                    violating each (up to N) and their count
    dogana hold release RECEIVER ID --by NAME       publish it, released by NAME
    dogana hold discard RECEIVER ID --by NAME [--reason TEXT]   refuse it, a rejection recorded

RECEIVER is an Airflow connection id or a database URL, as for `dogana status`
(common.open_receiver). Ending a hold names a person explicitly: --by is required and never
defaulted. A hold that is unknown or already ended refuses (exit 1) and changes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dogana_provider.cli.common import (
    OK,
    Command,
    Parser,
    Refused,
    UsageError,
    open_receiver,
    receiver_argument,
)
from dogana_provider.receiver.holds import NotHeld, person
from dogana_provider.report.holds import hold_lines, holds_table, outcome_line
from dogana_provider.report.table import plural

LIMIT = 20  # violating rows shown per expectation unless --limit says otherwise

HOLDS_EXAMPLES = """
examples:
  # every delivery the receiver behind dogana_default holds
  dogana holds dogana_default

  # those holding one table of a SQLite warehouse
  dogana holds sqlite:///warehouse.db --table orders
"""

HOLD_EXAMPLES = """
examples:
  # the first hold of table orders: its held expectations and up to 5 violating rows of each
  dogana hold show sqlite:///warehouse.db orders-1 --limit 5

  # publish it, as it would have been published (decided again if the table moved on)
  dogana hold release sqlite:///warehouse.db orders-1 --by "Ada Lovelace"

  # refuse the next one instead: a rejection is recorded, its staged rows dropped
  dogana hold discard sqlite:///warehouse.db orders-2 --by "Ada Lovelace" \\
      --reason "negative amounts: the sender reissues the file"
"""


def add_commands(command: Command) -> None:
    """holds, and hold with its actions show, release and discard."""
    listing = command(
        "holds",
        "the deliveries a live receiver holds for a person to release or discard",
        """
        List the deliveries a receiver (an Airflow connection id or a database URL) holds: an
        expectation declared with on_violation hold was violated, so nothing of the delivery
        is published, and its staged rows wait, never swept, until a person releases or
        discards it (dogana hold). Each with its id, its table(s), when it was held and the
        expectations it violated.
        """,
        HOLDS_EXAMPLES,
    )
    receiver_argument(listing)
    listing.add_argument("--table", metavar="T", help="only the holds of this table")
    listing.set_defaults(run=cmd_holds)

    hold = command(
        "hold",
        "show, release or discard one held delivery",
        """
        One held delivery of a receiver (an Airflow connection id or a database URL), by the
        id `dogana holds` lists. show prints its held expectations, the rows violating each (up
        to --limit) and their count. release publishes it as it would have been published, or
        decides it again if its table moved on meanwhile (a refusal is recorded as a
        rejection). discard refuses it: a rejection naming the held expectations is recorded
        and its staged rows dropped. Both record who (--by, a person's name, required) and
        when; a hold ends once.
        """,
        HOLD_EXAMPLES,
    )
    actions = hold.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=Parser
    )
    show = actions.add_parser("show", help="the held expectations and their violating rows")
    release = actions.add_parser("release", help="publish it, released by a person")
    discard = actions.add_parser("discard", help="refuse it, a rejection recorded")
    for parser in (show, release, discard):
        receiver_argument(parser)
        parser.add_argument("hold", metavar="ID", help="the hold, as `dogana holds` lists it")
    show.add_argument(
        "--limit",
        type=int,
        default=LIMIT,
        metavar="N",
        help=f"violating rows shown per expectation (default {LIMIT})",
    )
    for parser in (release, discard):
        parser.add_argument(
            "--by", required=True, metavar="NAME", help="the person who ends the hold"
        )
    discard.add_argument("--reason", default="", metavar="TEXT", help="why it is discarded")
    show.set_defaults(run=cmd_hold_show)
    release.set_defaults(run=cmd_hold_release)
    discard.set_defaults(run=cmd_hold_discard)


def cmd_holds(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    with open_receiver(args.receiver) as (hook, name):
        found = hook.receiver.holds(args.table)
    where = f" of table {args.table}" if args.table else ""
    print(f"receiver {name}: {plural(len(found), 'held delivery', 'held deliveries')}{where}")
    if found:
        print(holds_table(found, now))
    return OK


def cmd_hold_show(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise UsageError(f"--limit: {args.limit} is not a number of rows")
    with open_receiver(args.receiver) as (hook, name):
        receiver = hook.receiver
        hold = _known(lambda: receiver.find_hold(args.hold))
        violations = receiver.violations(hold, args.limit) if hold.held else []
    print("\n".join(hold_lines(hold, violations, receiver=name)))
    return OK


def cmd_hold_release(args: argparse.Namespace) -> int:
    by = _person(args.by)
    with open_receiver(args.receiver) as (hook, name):
        receipts = _known(lambda: hook.receiver.release(args.hold, by=by))
    for receipt in receipts:
        print(outcome_line(receipt))
    print(f"receiver {name}: hold {args.hold} released by {by}")
    return OK


def cmd_hold_discard(args: argparse.Namespace) -> int:
    by = _person(args.by)
    with open_receiver(args.receiver) as (hook, name):
        receipts = _known(lambda: hook.receiver.discard(args.hold, by=by, reason=args.reason))
    for receipt in receipts:
        print(outcome_line(receipt))
    print(f"receiver {name}: hold {args.hold} discarded by {by}")
    return OK


def _person(by: str) -> str:
    try:
        return person(by)
    except ValueError as exc:
        raise UsageError(f"--by: {str(exc).removeprefix('by: ')}") from None


def _known(call: Callable[[], Any]) -> Any:
    """Run a call on a hold; an unknown or ended hold refuses (exit 1), changing nothing."""
    try:
        return call()
    except NotHeld as exc:
        raise Refused(str(exc).strip("'\"")) from None
