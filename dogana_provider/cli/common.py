"""What every family of `dogana` commands uses: the exit statuses and the two ways a command
ends early (Refused, UsageError), how a family adds its commands to the parser (Command), the
values the command line names, and the receiver behind a connection id or a URL. It imports
none of the families; main.py puts them together.

Exit status: 0 on success, 1 when dogana refuses (a failed check, an invalid contract or
manifest, an unreadable file, receipts that do not fold, an unknown table), 2 on a usage error
(a bad option or value, a missing input file, an output that exists without --force, a receiver
that cannot be opened). Every message names the file, the field and the rule.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from dogana_core.errors import InvalidContract
from dogana_core.values import LogicalType, Scalar
from dogana_core.wire import decode_date, decode_datetime
from dogana_provider.dialects import DIALECTS, UnknownDatabase, dialect_for
from dogana_provider.hooks.sql import MissingExtra
from dogana_provider.receiver.receiver import UnknownTable
from dogana_provider.report import durations

OK, REFUSED, USAGE = 0, 1, 2
T = TypeVar("T")

EXIT_STATUS = "exit status: 0 success, 1 dogana refuses, 2 usage error"


class Refused(Exception):
    """dogana refuses: exit 1."""


class UsageError(Exception):
    """The command cannot run as given: exit 2."""


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors exit 2, as every usage error of dogana does."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: usage error: {message}\n")


Command = Callable[[str, str, str, str], argparse.ArgumentParser]
"""command(name, help, description, examples): a new subcommand's parser. Each family's
add_commands(command) adds its commands through it, so that all read alike: the description
dedented, then the examples and the exit statuses."""


# Values from the command line ------------------------------------------------------------------


def parse_datetime(text: str, option: str) -> datetime:
    """RFC 3339 with Z or an offset, at most six fractional digits; "now" is the current time."""
    if text == "now":
        return datetime.now(UTC)
    try:
        return decode_datetime({"$datetime": text}, option)
    except InvalidContract as exc:
        raise UsageError(f"{exc} (write e.g. 2026-10-19T02:00:00Z)") from None


def parse_duration(text: str, option: str) -> timedelta:
    """A duration as report.durations reads it (36h, 7d, PT36H, seconds, none) given as option."""
    try:
        return durations.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def parse_value(text: str, kind: LogicalType | str, option: str) -> Scalar:
    """A command-line value of a contract's logical type: int, str, date or datetime."""
    try:
        if kind == LogicalType.INT:
            if not re.fullmatch(r"[+-]?[0-9]+", text):
                raise ValueError
            return int(text)
        if kind == LogicalType.DATE:
            return decode_date({"$date": text}, option)
        if kind == LogicalType.DATETIME:
            return parse_datetime(text, option)
        if kind == LogicalType.STR:
            return text
    except (InvalidContract, ValueError):
        raise UsageError(f"{option}: {text!r} is not a {kind}") from None
    raise UsageError(f"{option}: values of type {kind} cannot be given on the command line")


# The receiver behind a connection id or a URL -------------------------------------------------


def one_source(args: argparse.Namespace, files: str | None, what: str) -> bool:
    """True to read from --receiver (with --table); False to read files. Both or neither: usage."""
    if args.receiver is None:
        if files is None:
            raise UsageError(f"give {what}, or --receiver and --table")
        if args.table is not None:
            raise UsageError("--table needs --receiver")
        return False
    if files is not None:
        raise UsageError(f"give {what} or --receiver, not both")
    if args.table is None:
        raise UsageError("--receiver needs --table, the table to read")
    return True


@contextmanager
def open_receiver(receiver: str) -> Iterator[tuple[Any, str]]:
    """A DoganaHook on an Airflow connection id, or on a database URL, and its printable name.

    Either way the connection becomes one of this process only (an AIRFLOW_CONN_ variable), so
    that it is read by the very hook the operators use: a URL as given, a connection id as
    `airflow connections get` finds it (connection_of_id). Its password is never printed: a
    URL is shown masked, a connection by its id. A connection whose database's provider is not
    installed is a usage error naming the extra to install, and the receiver as the person
    gave it.
    """
    # Airflow logs to stdout, which belongs to the command's output (--json above all): while
    # Airflow is imported and the receiver read, its lines go to stderr, and only its warnings.
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    with stdout_to_stderr():
        if "://" in receiver:
            conn_id, (connection, name) = URL_CONN_ID, connection_of_url(receiver)
        else:
            conn_id, connection, name = receiver, connection_of_id(receiver), repr(receiver)
        variable = f"AIRFLOW_CONN_{conn_id.upper()}"
        saved = os.environ.get(variable)
        os.environ[variable] = connection
        # Airflow is imported only here: a sender's commands on files never wait for it.
        from dogana_provider.hooks.dogana import DoganaHook

        try:
            yield DoganaHook(conn_id), name
        except MissingExtra as exc:
            raise UsageError(named(str(exc), name)) from None
        finally:
            if saved is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = saved


def connection_of_id(conn_id: str) -> str:
    """An Airflow connection (as AIRFLOW_CONN_ takes it, JSON) found as `airflow connections
    get` finds it: this process's AIRFLOW_CONN_ variables, the secrets backends configured, and
    the metadata database.

    A task finds connections through its worker's execution API; a terminal has none, and the
    Task SDK's own lookup outside a task reads no metadata database. So this asks Airflow's core
    Connection, in the server context the `airflow connections` commands declare.
    """
    os.environ["_AIRFLOW_PROCESS_CONTEXT"] = "server"
    # Imported once the context is declared, which Airflow reads as it loads its backends.
    from airflow.models.connection import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        found = Connection.get_connection_from_secrets(conn_id)
    except AirflowNotFoundException:
        raise UsageError(
            f"{conn_id!r}: no such Airflow connection here, neither in the environment "
            f"(AIRFLOW_CONN_{conn_id.upper()}), a configured secrets backend, nor the metadata "
            "database of this AIRFLOW_HOME or [database] sql_alchemy_conn (`airflow "
            "connections list` lists those there); or give the receiver as a database URL"
        ) from None
    return found.as_json()


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 onto 2: Airflow's log handlers hold stdout's stream, not sys.stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


URL_CONN_ID = "dogana_cli_receiver"


def connection_of_url(url: str) -> tuple[str, str]:
    """An Airflow connection (as AIRFLOW_CONN_ takes it) for a URL, and the URL to print.

    The URL's scheme names its database as dialect_for reads names (a SQLAlchemy driver suffix
    allowed), and becomes that dialect's own name, the scheme Airflow knows it by.
    """
    parts = urlsplit(url)
    try:
        dialect = dialect_for(parts.scheme)
    except UnknownDatabase:
        raise UsageError(f"{masked(url)}: a receiver URL starts with {_url_starts()}") from None
    if dialect.local_file:
        # SQLAlchemy's spelling: sqlite:///relative/path or sqlite:////absolute/path.
        path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if parts.netloc or not path:
            raise UsageError(f"{url}: write a SQLite receiver as sqlite:///PATH")
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such file (the receiver's SQLite database)")
        return json.dumps({"conn_type": str(dialect), "host": str(Path(path).resolve())}), url
    return urlunsplit((str(dialect), *parts[1:])), masked(url)


def _url_starts() -> str:
    """How a receiver URL begins, for each database dogana runs on: "sqlite:///, ... or ..."."""
    starts = [
        f"{dialect}:///" if dialect.local_file else f"{dialect}://"
        for dialect in dict.fromkeys(DIALECTS.values())
    ]
    return f"{', '.join(starts[:-1])} or {starts[-1]}"


def masked(url: str) -> str:
    """The URL with its password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def receiver_call(read: Callable[[], T], name: str) -> T:
    """Run a read of the receiver; an unregistered table refuses, naming the receiver."""
    try:
        return read()
    except UnknownTable as exc:
        raise Refused(named(str(exc).strip("'\""), name)) from None


def named(message: str, name: str) -> str:
    """A message about the receiver, naming it as the person gave it, not as this process's
    connection of a URL."""
    return message.replace(repr(URL_CONN_ID), name)


def receiver_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "receiver", metavar="RECEIVER", help="an Airflow connection id, or a database URL"
    )


def by_argument(parser: argparse.ArgumentParser, help_: str) -> None:
    parser.add_argument("--by", required=True, metavar="NAME", help=f"{help_}: a named person")
