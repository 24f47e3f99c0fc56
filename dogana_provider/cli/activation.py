"""The `dogana` commands for a receiver's sources (receiver/activation.py), and the command a
refusal names to fix it:

    dogana require-activation RECEIVER on|off --by NAME
    dogana activate RECEIVER TABLE --owner NAME --authorized-by NAME --expires T|D
                    --licence L --purpose P [--purpose P ...] --provenance TEXT --by NAME
    dogana deactivate RECEIVER TABLE --by NAME --reason TEXT

`dogana status RECEIVER` shows each table's activation beside its claims (receiver.py). A
receiver is an Airflow connection id or a database URL, as for status (common.open_receiver).
Each command writes one transaction and its line in the receiver's log, with --by as who. The
command a refused plan prints to activate a table is report/activation.py's activate_command.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dogana_core.claims import NO_LIMIT
from dogana_core.errors import InvalidContract
from dogana_provider.cli.common import (
    OK,
    Command,
    Refused,
    UsageError,
    by_argument,
    open_receiver,
    parse_datetime,
    parse_duration,
    receiver_argument,
)
from dogana_provider.receiver.activation import ActivationRefused
from dogana_provider.report.table import when

REQUIRE_EXAMPLES = """
examples:
  # from now on, the receiver publishes only tables a named person activated
  dogana require-activation sqlite:///warehouse.db on --by "Ada Lovelace"
"""

ACTIVATE_EXAMPLES = """
examples:
  # orders may be published for a year, for billing and finance reporting
  dogana activate sqlite:///warehouse.db orders --owner "Grace Hopper" \\
      --authorized-by "Katherine Johnson" --expires 365d --licence internal-use-only \\
      --purpose billing --purpose "finance reporting" \\
      --provenance "nightly read of the ERP replica, table public.orders" --by "Ada Lovelace"

  # renewed until an instant, granted at another; every table's activation beside its claims
  dogana activate sqlite:///warehouse.db orders --owner "Grace Hopper" \\
      --authorized-by "Katherine Johnson" --granted-at 2026-10-01T09:00:00Z \\
      --expires 2099-12-31T00:00:00Z --licence internal-use-only --purpose billing \\
      --provenance "nightly read of the ERP replica, table public.orders" --by "Ada Lovelace"
  dogana status sqlite:///warehouse.db
"""

DEACTIVATE_EXAMPLES = """
examples:
  # nothing more is published for orders until it is activated again
  dogana deactivate sqlite:///warehouse.db orders --by "Ada Lovelace" \\
      --reason "the ERP licence ended"
"""


def add_commands(command: Command) -> None:
    """require-activation, activate and deactivate."""
    require = command(
        "require-activation",
        "switch a receiver's require_activation setting on or off",
        """
        Switch the setting, stored in the receiver, that gates publication on activation. On,
        the receiver publishes nothing for a table that is not active (dogana activate): its
        deliveries are rejected, their receipts' source_active check saying what is missing,
        and the plan task fails saying how to activate it. Off (the default) publishes every
        table; switching it off needs --by to name a person, not an account.
        """,
        REQUIRE_EXAMPLES,
    )
    receiver_argument(require)
    require.add_argument("state", choices=("on", "off"), help="on or off")
    by_argument(require, "who switches it")
    require.set_defaults(run=cmd_require)

    activate = command(
        "activate",
        "activate a table: its rows may be published",
        """
        Record what a table's activation requires, and make it active until --expires: an
        owner accountable for it (a named person other than --by), an authorization granted
        by a named person (not an account such as svc_*, system or automation: a source never
        authorizes itself), a licence and at least one purpose, and provenance, how the data
        is obtained. Anything missing is named, and nothing is recorded. The table may be
        registered later. Once the authorization expires the table stops publishing again,
        until it is activated anew. --expires is an instant (RFC 3339) or a duration from now
        (365d, 12w, PT2160H).
        """,
        ACTIVATE_EXAMPLES,
    )
    receiver_argument(activate)
    activate.add_argument("table", metavar="TABLE", help="the receiver's table")
    activate.add_argument("--owner", required=True, metavar="NAME", help="who is accountable")
    activate.add_argument(
        "--authorized-by", required=True, metavar="NAME", help="the person granting it"
    )
    activate.add_argument(
        "--granted-at", metavar="T", help="when the authorization was granted (default now)"
    )
    activate.add_argument(
        "--expires", required=True, metavar="T|D", help="when it expires: an instant or duration"
    )
    activate.add_argument("--licence", required=True, metavar="L", help="the rows' licence")
    activate.add_argument(
        "--purpose",
        dest="purposes",
        action="append",
        required=True,
        metavar="P",
        help="a purpose the rows may be used for (repeat for more)",
    )
    activate.add_argument(
        "--provenance", required=True, metavar="TEXT", help="how the data is obtained"
    )
    by_argument(activate, "who records the activation")
    activate.set_defaults(run=cmd_activate)

    deactivate = command(
        "deactivate",
        "make a table pending again: nothing more is published",
        """
        Make an active table pending: the receiver publishes none of its rows until it is
        activated again. Its record is kept; the deactivation is logged with --by and
        --reason.
        """,
        DEACTIVATE_EXAMPLES,
    )
    receiver_argument(deactivate)
    deactivate.add_argument("table", metavar="TABLE", help="the receiver's table")
    by_argument(deactivate, "who deactivates it")
    deactivate.add_argument("--reason", required=True, metavar="TEXT", help="why")
    deactivate.set_defaults(run=cmd_deactivate)


# The commands -----------------------------------------------------------------------------------


def cmd_require(args: argparse.Namespace) -> int:
    with open_receiver(args.receiver) as (hook, name):
        refusing(lambda: hook.receiver.sources.require(args.state == "on", by=args.by))
    print(f"receiver {name}: require_activation {args.state}, set by {args.by.strip()}")
    return OK


def cmd_activate(args: argparse.Namespace) -> int:
    granted_at = (
        None if args.granted_at is None else parse_datetime(args.granted_at, "--granted-at")
    )
    expires_at = expiry(args.expires)
    with open_receiver(args.receiver) as (hook, name):
        state = refusing(
            lambda: hook.receiver.sources.activate(
                args.table,
                owner=args.owner,
                authorized_by=args.authorized_by,
                granted_at=granted_at,
                expires_at=expires_at,
                licence=args.licence,
                purposes=args.purposes,
                provenance=args.provenance,
                by=args.by,
            )
        )
        required = hook.receiver.sources.required()
    record = state.record
    assert record is not None
    print(
        f"table {args.table} in receiver {name}: {state.line()}, owner {record.owner}, "
        f"authorized by {record.granted_by} at {when(record.granted_at)}, licence "
        f"{record.licence}, purposes {', '.join(record.purposes)}"
    )
    if not required:
        print(
            f"note: receiver {name} does not require activation, so every table publishes; "
            f"dogana require-activation {shlex.quote(args.receiver)} on --by NAME switches it on"
        )
    return OK


def cmd_deactivate(args: argparse.Namespace) -> int:
    with open_receiver(args.receiver) as (hook, name):
        state = refusing(
            lambda: hook.receiver.sources.deactivate(args.table, by=args.by, reason=args.reason)
        )
    print(f"table {args.table} in receiver {name}: {state.line()}, deactivated by {args.by}")
    return OK


def expiry(text: str) -> datetime:
    """--expires: an RFC 3339 instant, or a duration from now; never none."""
    try:
        return parse_datetime(text, "--expires")
    except UsageError:
        pass
    try:
        duration = parse_duration(text, "--expires")
    except UsageError:
        raise UsageError(
            f"--expires: {text!r} is neither an instant (2027-10-01T00:00:00Z) nor a duration "
            "from now (365d, 12w, PT2160H)"
        ) from None
    if duration == NO_LIMIT:
        raise UsageError("--expires: an authorization expires; give an instant or a duration")
    return datetime.now(UTC) + duration


def refusing(write: Callable[[], Any]) -> Any:
    """Run a write; what activation refuses (a missing part, a bad table name) exits 1."""
    try:
        return write()
    except (ActivationRefused, InvalidContract) as exc:
        raise Refused(str(exc)) from None
