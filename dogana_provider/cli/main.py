"""The `dogana` command: for senders in any language and for operators at a terminal.

One module per family of commands, each adding its commands to the parser built here:

    sender.py      manifest, check, claims, fold: a sender's files and a ledger's claims
    receiver.py    status, sweep, forget: a live receiver's tables
    activation.py  require-activation, activate, deactivate: a live receiver's sources
    holds.py       holds, hold show|release|discard: deliveries held for a person
    lineage.py     lineage: what fed a receiver's table, what a source produced
    connectors.py  conformance: a configured source against the connector contract
    schema.py      schema: a table's schema versions
    cdc.py         cdc status|drop-slot: a log-capture source's replication slots

common.py holds what they share (exit statuses, values, the receiver behind a connection id or a
URL). `dogana COMMAND --help` tells each command's options and examples.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import NoReturn

from dogana_provider.cli import (
    activation,
    cdc,
    connectors,
    holds,
    lineage,
    receiver,
    schema,
    sender,
)
from dogana_provider.cli.common import EXIT_STATUS, OK, REFUSED, USAGE, Parser, Refused, UsageError

FAMILIES = (sender, receiver, activation, holds, lineage, connectors, schema, cdc)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dogana",
        description="Manifests, checks and claims for dogana deliveries (wire format version 4).",
        epilog=EXIT_STATUS,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )

    def command(name: str, help_: str, description: str, examples: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help_,
            description=textwrap.dedent(description).strip(),
            epilog=examples.strip() + "\n\n" + EXIT_STATUS,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    for family in FAMILIES:
        family.add_commands(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"dogana {args.command}"
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"{prog}: usage error: {exc}", file=sys.stderr)
        return USAGE
    except Refused as exc:
        print(f"{prog}: refused: {exc}", file=sys.stderr)
        return REFUSED
    except BrokenPipeError:
        return OK
    except OSError as exc:
        # A file that exists but cannot be read or written, a full disk: the command cannot run.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"{prog}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return USAGE


def entry() -> NoReturn:
    """The console script: main(), then leave without Python's teardown.

    pyarrow's thread pools can still hold a joinable thread when the interpreter tears down its
    C++ statics, which aborts a command that has already done its work ("terminate called without
    an active exception", apache/arrow#34314; seen here under load in CI). Output is flushed
    first, so _exit loses nothing; it only skips a teardown that has nothing left to do.
    """
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
