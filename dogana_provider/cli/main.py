"""The `dogana` command: for senders in any language and for operators at a terminal.

    dogana manifest FILE ...   count a delivered file and write its manifest sidecar
    dogana check FILE ...      verify a file against its manifest and contract, check by check
    dogana claims LEDGER ...   what a ledger claims, region by region, at a time and a limit
    dogana fold CONTRACT RECEIPTS...   the ledger the accepted receipts fold into
    dogana status RECEIVER     every table of a live receiver: state, dates, age, rows, receipts,
                               activation
    dogana sweep RECEIVER      drop the staging tables of a live receiver that nothing will use
    dogana require-activation, activate, deactivate
                               a live receiver's sources (sources_cli.py)
    dogana holds RECEIVER      the deliveries a live receiver holds for a person (holds_cli.py)
    dogana hold ACTION RECEIVER ID     show, release or discard one held delivery

claims and fold read a table of a live receiver instead of files with --receiver and --table;
a receiver is an Airflow connection id or a database URL (sqlite:///, postgresql://, mysql://).

Exit status: 0 on success, 1 when dogana refuses (a failed check, an invalid contract or
manifest, an unreadable file, receipts that do not fold), 2 on a usage error (a bad option or
value, a missing input file, an output that exists without --force). Every message names the
file, the field and the rule.

`check` does on a file what the receiver does before it decides, and gives its verdict on all
it can see without the table's ledger and published rows: the core "manifest" and
"receiver_time" checks (at --now), then the file's rows staged in a temporary SQLite database and
every row check of checks.py, the same functions the receiver runs. What only the receiver can
run (transition, and the checks needing the published table) is printed as skip, with why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.contract import Contract
from dogana_core.errors import DoganaError, InvalidContract
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.region import Region
from dogana_core.shape import Checkpoint
from dogana_core.values import LogicalType, Scalar
from dogana_core.wire import Wire, decode_date, decode_datetime, parse_json
from dogana_provider.checks.rows import plan, verify
from dogana_provider.delivery.files import (
    DeliveredFile,
    UnreadableFile,
    count_rows,
    file_column_hash,
)
from dogana_provider.dialects import SQLITE
from dogana_provider.report.table import age, text_table, when
from dogana_provider.staging import bound_columns, stage_file

OK, REFUSED, USAGE = 0, 1, 2
W = TypeVar("W", bound=Wire)
T = TypeVar("T")


class Refused(Exception):
    """dogana refuses: exit 1."""


class UsageError(Exception):
    """The command cannot run as given: exit 2."""


# Values from the command line ---------------------------------------------------------------------


def parse_datetime(text: str, option: str) -> datetime:
    """RFC 3339 with Z or an offset, at most six fractional digits; "now" is the current time."""
    if text == "now":
        return datetime.now(UTC)
    try:
        return decode_datetime({"$datetime": text}, option)
    except InvalidContract as exc:
        raise UsageError(f"{exc} (write e.g. 2026-10-19T02:00:00Z)") from None


_COMPACT = re.compile(
    r"(?:(?P<w>\d+)w)?(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d{1,6})?)s)?"
)
_ISO = re.compile(
    r"P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d{1,6})?)S)?)?"
)
_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]{1,6})?")
_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str, option: str) -> timedelta:
    """36h, 7d, 90m, 1d12h, 45s; ISO 8601 (PT36H, P7D); plain seconds (129600, 0.5); or none.

    none (or max) is no limit: nothing expires. Exact to the microsecond, never rounded; years
    and months are refused, since their length varies.
    """
    spelled = text.strip()
    if spelled in ("none", "max"):
        return NO_LIMIT
    match = _COMPACT.fullmatch(spelled) or _ISO.fullmatch(spelled.upper())
    units = {unit: value for unit, value in match.groupdict().items() if value} if match else {}
    try:
        if _PLAIN.fullmatch(spelled):
            seconds = Decimal(spelled)
        elif units:
            seconds = sum(
                (Decimal(value) * _SECONDS[unit] for unit, value in units.items()), Decimal(0)
            )
        else:
            raise ValueError(spelled)
        return timedelta(microseconds=int(seconds * 1_000_000))
    except (ValueError, OverflowError):
        raise UsageError(
            f"{option}: {text!r} is not a duration (write 36h, 7d, 90m, 1d12h, PT36H, seconds "
            "such as 129600 with at most six decimals, or none)"
        ) from None


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


# Files ------------------------------------------------------------------------------------------


def existing(path: str, what: str) -> Path:
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such file ({what})")
    return Path(path)


def read_wire(kind: type[W], path: str, what: str) -> W:
    """A wire document from a file: a missing file is a usage error, an invalid one a refusal."""
    text = existing(path, what).read_bytes()
    try:
        return kind.from_json(text)
    except InvalidContract as exc:
        raise Refused(f"{path}: {exc}") from None


def read_receipts(path: str) -> list[Receipt]:
    """One Receipt, or a JSON array of receipts in publication order."""
    data = existing(path, "receipts").read_bytes()
    try:
        parsed = parse_json(data)
        if isinstance(parsed, list):
            return [Receipt.from_dict(item, path=f"[{i}]") for i, item in enumerate(parsed)]
        return [Receipt.from_dict(parsed)]
    except (InvalidContract, ValueError) as exc:
        raise Refused(f"{path}: {exc}") from None


def write_new(path: Path, text: str, *, force: bool) -> None:
    """Write text to path; an existing file is kept unless force (then replaced atomically)."""
    if not force:
        try:
            with open(path, "x", encoding="utf-8") as out:
                out.write(text)
        except FileExistsError:
            raise UsageError(f"{path}: exists; pass --force to overwrite it") from None
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


# dogana manifest --------------------------------------------------------------------------------


def cmd_manifest(args: argparse.Namespace) -> int:
    contract = read_wire(Contract, args.contract, "--contract")
    path = existing(args.file, "the delivered file")
    out = Path(args.output) if args.output else Path(f"{args.file}.json")
    if out.exists() and not args.force:
        raise UsageError(f"{out}: exists; pass --force to overwrite it")
    try:
        shape = contract.shape(args.shape)
    except InvalidContract as exc:
        raise Refused(
            f"{args.contract}: --shape: {exc}; shapes: {', '.join(n for n, _ in contract.shapes)}"
        ) from None
    fields: dict[str, Any] = {}
    if args.window is not None:
        if contract.window_type is None:
            raise Refused(f"{args.contract}: --window: table {contract.table} has no window column")
        fields["window"] = tuple(
            parse_value(v, contract.window_type, f"--window {end}")
            for v, end in zip(args.window, ("LOW", "HIGH"), strict=True)
        )
    if args.since is not None:
        fields["since"] = parse_value(args.since, _checkpoint_type(shape.checkpoint), "--since")
    if args.generation is not None:
        kind = LogicalType.INT if contract.position_type is int else LogicalType.STR
        fields["generation"] = parse_value(args.generation, kind, "--generation")
    produced_at = parse_datetime(args.produced_at, "--produced-at")

    with DeliveredFile(path, contract) as delivered:
        try:
            columns = delivered.columns
            counts = count_rows(delivered)
            digest = delivered.sha256()
        except UnreadableFile as exc:
            raise Refused(str(exc)) from None
    deleted = contract.deleted_column
    if counts.null_deleted:
        raise Refused(
            f"{path}: column {deleted}: {counts.null_deleted} "
            f"{'row has' if counts.null_deleted == 1 else 'rows have'} a null deleted value; "
            "a row is live (false) or a tombstone (true), never null"
        )
    if contract.schema_hash is not None:
        try:
            actual = file_column_hash(path, columns, deleted)
        except UnreadableFile as exc:
            raise Refused(str(exc)) from None
        if actual != contract.schema_hash:
            pairs = ", ".join(f"{c.name} {c.logical}" for c in columns if c.name != deleted)
            raise Refused(
                f"{path}: the file's columns ({pairs}) hash to {actual}, not the contract's "
                f"schema_hash {contract.schema_hash} ({args.contract})"
            )
    try:
        manifest = contract.manifest(
            args.shape,
            produced_at,
            rows=counts.live,
            tombstones=counts.tombstones,
            content_hash=digest,
            **fields,
        )
    except InvalidContract as exc:
        raise Refused(f"{path}: {exc}") from None
    write_new(out, manifest.to_json() + "\n", force=args.force)
    print(
        f"wrote {out}: table {manifest.table}, shape {manifest.shape}, "
        f"{_plural(manifest.rows, 'row')}, {_plural(manifest.tombstones, 'tombstone')}, "
        f"sha256 {digest}"
    )
    return OK


def _checkpoint_type(checkpoint: Checkpoint) -> LogicalType:
    if checkpoint is Checkpoint.TIMESTAMP:
        return LogicalType.DATETIME
    if checkpoint is Checkpoint.SEQUENCE:
        return LogicalType.INT
    # A generation is an opaque string; a complete shape has no since, which Manifest.check says.
    return LogicalType.STR


# dogana check -----------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    contract = read_wire(Contract, args.contract, "--contract")
    path = existing(args.file, "the delivered file")
    manifest_path = args.manifest or f"{args.file}.json"
    if not Path(manifest_path).is_file():
        raise UsageError(
            f"{manifest_path}: no such file (the manifest; write one with `dogana manifest` "
            "or name it with --manifest)"
        )
    manifest = read_wire(Manifest, manifest_path, "--manifest")
    now = parse_datetime(args.now, "--now")
    # The receiver's preflight, less what needs the table's ledger: that is the receiver's.
    fits, on_time, _ = Gate.preflight(Ledger.new(contract), manifest, now=now)
    checks = [fits, on_time]
    not_run = [("transition", "needs the table's ledger: the receiver runs it")]
    if fits.passed:
        _, skipped = plan(contract, manifest)
        not_run += [(str(n.name), n.reason) for n in skipped]
        checks += _row_checks(path, contract, manifest)
    passed = all(check.passed for check in checks)
    if args.json:
        print(
            json.dumps(
                {
                    "file": str(path),
                    "manifest": manifest_path,
                    "passed": passed,
                    "checks": [check.to_dict() for check in checks],
                    "not_run": [{"name": name, "reason": reason} for name, reason in not_run],
                },
                indent=2,
            )
        )
        return OK if passed else REFUSED
    print(
        f"{path} against {manifest_path} "
        f"(contract {args.contract}: table {contract.table}, shape {manifest.shape})"
    )
    width = max(len(name) for name in [*(c.name for c in checks), *(n for n, _ in not_run)])
    for check in checks:
        print(f"  {'pass' if check.passed else 'FAIL'}  {check.name:<{width}}  {check.detail}")
    for name, reason in not_run:
        print(f"  skip  {name:<{width}}  {reason}")
    failed = [check.name for check in checks if not check.passed]
    if failed:
        if not checks[0].passed:
            print("refused: the manifest does not fit the contract, so no row was read")
        else:
            print(f"refused: {len(failed)} of {len(checks)} checks failed: {', '.join(failed)}")
        return REFUSED
    print(f"ok: the file matches its manifest ({len(checks)} checks passed)")
    return OK


def _row_checks(path: Path, contract: Contract, manifest: Manifest) -> list[Check]:
    """Stage the contract's columns in a temporary SQLite file and run every row check."""
    with tempfile.TemporaryDirectory(prefix="dogana-check-") as scratch:
        connection = sqlite3.connect(Path(scratch) / "staging.sqlite")
        try:
            # A scratch database: losing it in a crash costs nothing, so skip the journal.
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            staged = stage_file(
                connection, SQLITE, "staged", path, contract, columns=bound_columns(contract)
            )
            return verify(connection, SQLITE, staged, contract, manifest)
        finally:
            connection.close()


# dogana claims ----------------------------------------------------------------------------------


def cmd_claims(args: argparse.Namespace) -> int:
    if one_source(args, args.ledger, "LEDGER.json"):
        with open_receiver(args.receiver) as (hook, name):
            ledger = receiver_call(lambda: hook.ledgers([args.table])[args.table], name)
        args.ledger = f"table {args.table} in receiver {name}"
    else:
        ledger = read_wire(Ledger, args.ledger, "the ledger")
    now = parse_datetime(args.now, "--now")
    limit = parse_duration(args.limit, "--limit")
    window = None
    if args.window is not None:
        window_type = ledger.contract.window_type
        if window_type is None:
            raise Refused(
                f"{args.ledger}: --window: table {ledger.contract.table} has no window column"
            )
        low, high = (parse_value(v, window_type, "--window") for v in args.window)
        if low > high:  # type: ignore[operator]  # both of the window column's one type
            raise Refused(
                f"{args.ledger}: --window: low {args.window[0]} is after high {args.window[1]}; "
                "a window runs from LOW to HIGH, both included"
            )
        window = (low, high)
    try:
        claims = ledger.claims(now, limit=limit, window=window)
    except InvalidContract as exc:
        raise Refused(f"{args.ledger}: {exc}") from None
    if args.json:
        print(claims.to_json())
        return OK
    print(_claims_table(ledger, claims))
    return OK


def _claims_table(ledger: Ledger, claims: Claims) -> str:
    limit = "none" if claims.limit == NO_LIMIT else _spell_duration(claims.limit)
    exact = claims.exact_as_of
    lines = [
        f"table {ledger.contract.table} at {_when(claims.now)}, limit {limit}: {claims.state}",
        f"  complete_as_of  {_when(claims.complete_as_of)}",
        f"  deletions_as_of {_when(claims.deletions_as_of)}",
        f"  exact_as_of     {_when(exact)}",
        "",
    ]
    rows = [
        (_span(r.region), _when(r.complete_as_of), _when(r.deletions_as_of), str(r.state))
        for r in claims.regions
    ]
    lines.append(
        text_table(("region", "complete_as_of", "deletions_as_of", "state"), rows, indent="  ")
    )
    return "\n".join(lines)


# dogana fold ------------------------------------------------------------------------------------


def cmd_fold(args: argparse.Namespace) -> int:
    receipts: list[Receipt] = []
    origins: list[str] = []  # the file (and index in it) each receipt came from
    if one_source(args, args.contract, "CONTRACT.json RECEIPTS.json..."):
        if args.receipts:
            raise UsageError("give --receiver and --table, or a contract and receipt files")
        with open_receiver(args.receiver) as (hook, name):
            contract = receiver_call(lambda: hook.ledgers([args.table])[args.table].contract, name)
            receipts = receiver_call(lambda: hook.receiver.receipts(args.table), name)
        args.contract = f"table {args.table} in receiver {name}"
        origins = [f"{args.contract}: receipt {i + 1}" for i in range(len(receipts))]
    else:
        if not args.receipts:
            raise UsageError("give the receipts to fold after the contract, oldest first")
        contract = read_wire(Contract, args.contract, "the contract")
        for path in args.receipts:
            read = read_receipts(path)
            receipts += read
            origins += [path] if len(read) == 1 else [f"{path}[{i}]" for i in range(len(read))]
    try:
        ledger = Ledger.from_receipts(contract, receipts)
    except DoganaError as exc:
        # from_receipts names receipts by their index in the fold; name the file instead.
        message = re.sub(r"^receipts\[(\d+)\]", lambda m: origins[int(m[1])], str(exc))
        raise Refused(message if message != str(exc) else f"{args.contract}: {exc}") from None
    if args.json:
        print(ledger.to_json())
        return OK
    accepted = sum(1 for r in receipts if r.accepted)
    lines = [
        f"table {contract.table}: {len(receipts)} receipts, {accepted} accepted, "
        f"{len(receipts) - accepted} rejected",
        f"  publication_id {ledger.publication_id or 'none (nothing accepted)'}",
        f"  generation     {ledger.generation if ledger.generation is not None else 'none'}",
        f"  identity       {ledger.identity}",
        "",
    ]
    rows = [
        (_span(region), _when(region.complete_as_of), _when(region.deletions_as_of))
        for region in ledger.regions
    ]
    lines.append(text_table(("region", "complete_as_of", "deletions_as_of"), rows, indent="  "))
    print("\n".join(lines))
    return OK


# dogana status ----------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    count = args.receipts if args.receipts is not None else (5 if args.table else 1)
    if count < 1:
        raise UsageError(f"--receipts: {count} is not a positive number of receipts")
    now = datetime.now(UTC)
    with open_receiver(args.receiver) as (hook, name):
        from dogana_provider.report.status import read_status

        status = receiver_call(
            lambda: read_status(
                hook, now, tables=[args.table] if args.table else None, receipts=count, name=name
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
        f"{_plural(len(status.tables), 'table')}"
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
            _receipt_line(table.receipts[0]) if table.receipts else "-",
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
    from dogana_provider.cli.activation import activation_lines

    (table,) = status.tables
    claims = table.claims
    span = "the delivered span of its window" if table.windowed else "the whole table"
    lines = [
        f"table {table.table} in receiver {status.receiver} ({status.dialect}) "
        f"at {when(status.at)}: {claims.state} over {span}",
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
        (_span(r.region), r.state, when(r.complete_as_of), when(r.deletions_as_of))
        for r in claims.regions
    ]
    header = ("region", "state", "complete as of", "deletions as of")
    lines += [text_table(header, regions, indent="  "), "", "last receipts, newest first"]
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


def _receipt_line(receipt: Receipt) -> str:
    failed = ", ".join(check.name for check in receipt.failed)
    line = f"{receipt.outcome} {when(receipt.received_at)} {receipt.manifest.shape}"
    return f"{line} (failed: {failed})" if failed else line


# dogana sweep -----------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    older_than = parse_duration(args.older_than, "--older-than")
    with open_receiver(args.receiver) as (hook, name):
        swept = hook.receiver.sweep(older_than)
    for table in swept:
        print(f"dropped {table}")
    print(f"receiver {name}: {_plural(len(swept), 'staging table')} swept")
    return OK


# The receiver behind a connection id or a URL ----------------------------------------------------


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

    A URL becomes a connection of this process only (an AIRFLOW_CONN_ variable), so that it is
    read by the very hook the operators use. Its password is never printed: the name shown has
    it masked.
    """
    # Airflow logs to stdout, which belongs to the command's output (--json above all): while
    # Airflow is imported and the receiver read, its lines go to stderr, and only its warnings.
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    with stdout_to_stderr():
        if "://" not in receiver:
            from dogana_provider.hooks.dogana import DoganaHook

            yield DoganaHook(receiver), repr(receiver)
            return
        connection, name = connection_of_url(receiver)
        variable = f"AIRFLOW_CONN_{URL_CONN_ID.upper()}"
        saved = os.environ.get(variable)
        os.environ[variable] = connection
        try:
            from dogana_provider.hooks.dogana import DoganaHook

            yield DoganaHook(URL_CONN_ID), name
        finally:
            if saved is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = saved


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
_URL_SCHEMES = {"sqlite", "postgresql", "postgres", "mysql", "mariadb"}


def connection_of_url(url: str) -> tuple[str, str]:
    """An Airflow connection (as AIRFLOW_CONN_ takes it) for a URL, and the URL to print."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0].lower()
    if scheme not in _URL_SCHEMES:
        raise UsageError(
            f"{masked(url)}: a receiver URL starts with sqlite:///, postgresql:// or mysql://"
        )
    if scheme == "sqlite":
        # SQLAlchemy's spelling: sqlite:///relative/path or sqlite:////absolute/path.
        path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if parts.netloc or not path:
            raise UsageError(f"{url}: write a SQLite receiver as sqlite:///PATH")
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such file (the receiver's SQLite database)")
        return json.dumps({"conn_type": "sqlite", "host": str(Path(path).resolve())}), url
    scheme = {"postgres": "postgresql", "mariadb": "mysql"}.get(scheme, scheme)
    return urlunsplit((scheme, *parts[1:])), masked(url)


def masked(url: str) -> str:
    """The URL with its password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def receiver_call(read: Callable[[], T], name: str) -> T:
    """Run a read of the receiver; an unregistered table refuses, naming the receiver."""
    from dogana_provider.receiver.receiver import UnknownTable

    try:
        return read()
    except UnknownTable as exc:
        raise Refused(str(exc).strip("'\"").replace(repr(URL_CONN_ID), name)) from None


# Printing ---------------------------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _span(region: Region) -> str:
    """A region as the half-open interval it is: [low, high), unbounded ends as -inf and +inf."""

    def end(value: Any, unbounded: str) -> str:
        if value is None:
            return unbounded
        if isinstance(value, datetime):
            return _when(value)
        return repr(value) if isinstance(value, str) else str(value)

    opening = "(" if region.low is None else "["
    return f"{opening}{end(region.low, '-inf')}, {end(region.high, '+inf')})"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _spell_duration(value: timedelta) -> str:
    seconds = value.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# The parser -------------------------------------------------------------------------------------

MANIFEST_EXAMPLES = """
examples:
  # a nightly complete read of the whole table, produced at 02:00 UTC
  dogana manifest orders.parquet --contract orders.contract.json --shape nightly \\
      --produced-at 2026-10-19T02:00:00Z

  # one month of the window column, as CSV, the manifest written elsewhere
  dogana manifest orders-2026-09.csv --contract orders.contract.json --shape month \\
      --produced-at 2026-10-19T02:00:00Z --window 2026-09-01 2026-09-30 \\
      -o orders-2026-09.manifest.json

  # rows changed since the last read, with tombstones; overwrite an earlier sidecar
  dogana manifest orders-changes.parquet --contract orders.contract.json --shape changes \\
      --produced-at 2026-10-19T02:00:00Z --since 2026-10-18T02:00:00Z --force
"""

CHECK_EXAMPLES = """
examples:
  # verify a file against its sidecar manifest (orders.parquet.json)
  dogana check orders.parquet --contract orders.contract.json

  # a manifest kept elsewhere; machine-readable output
  dogana check orders-2026-09.csv --contract orders.contract.json \\
      --manifest orders-2026-09.manifest.json --json
"""

CLAIMS_EXAMPLES = """
examples:
  # what the ledger claims now, for a reader who accepts data up to 36 hours old
  dogana claims orders.ledger.json --now now --limit 36h

  # one month, at a given instant, for machines
  dogana claims orders.ledger.json --now 2026-10-19T06:00:00Z --limit 7d \\
      --window 2026-09-01 2026-09-30 --json
"""

FOLD_EXAMPLES = """
examples:
  # the ledger the receipts fold into, in publication order
  dogana fold orders.contract.json receipt-1.json receipt-2.json

  # save it, then ask what it claims
  dogana fold orders.contract.json receipt-1.json receipt-2.json --json > orders.ledger.json
  dogana claims orders.ledger.json --now now --limit 36h
"""

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

EXIT_STATUS = "exit status: 0 success, 1 dogana refuses, 2 usage error"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: usage error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dogana",
        description="Manifests, checks and claims for dogana deliveries (wire format version 4).",
        epilog=EXIT_STATUS,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    def command(name: str, help_: str, description: str, examples: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help_,
            description=textwrap.dedent(description).strip(),
            epilog=examples.strip() + "\n\n" + EXIT_STATUS,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    manifest = command(
        "manifest",
        "count a delivered file and write its manifest",
        """
        Count a delivered Parquet or CSV file and write its manifest, the sidecar FILE.json.
        Rows and tombstones are counted from the file (the contract's deleted column; a null
        deleted value is refused) and the SHA-256 of its bytes is computed while reading them:
        nothing the file can show is taken from the command line. The manifest is checked
        against the contract before it is written. Run `dogana check` on the pair before
        sending it.
        """,
        MANIFEST_EXAMPLES,
    )
    manifest.add_argument("file", metavar="FILE", help="the delivered file (.parquet or .csv)")
    manifest.add_argument(
        "--contract", required=True, metavar="C.json", help="the table's contract"
    )
    manifest.add_argument(
        "--shape", required=True, metavar="NAME", help="the contract's shape this read has"
    )
    manifest.add_argument(
        "--produced-at",
        required=True,
        metavar="T",
        help="the instant of the source the read shows, RFC 3339 with an offset",
    )
    manifest.add_argument(
        "--window", nargs=2, metavar=("LOW", "HIGH"), help="the closed window a window shape covers"
    )
    manifest.add_argument(
        "--since",
        metavar="V",
        help="where a changes read starts: a datetime, generation or sequence",
    )
    manifest.add_argument("--generation", metavar="V", help="the position the read issues")
    manifest.add_argument(
        "-o", "--output", metavar="PATH", help="where to write (default FILE.json)"
    )
    manifest.add_argument("--force", action="store_true", help="overwrite an existing manifest")
    manifest.set_defaults(run=cmd_manifest)

    check = command(
        "check",
        "verify a file against its manifest and contract",
        """
        Verify a delivered file as the receiver does before deciding: the manifest against the
        contract and the receiver's time (--now), then the file against the manifest, one named
        check per fact the manifest implies (column names, row and tombstone counts, deleted
        values, column and content hashes, keys, window and cursor values). Each check prints
        pass or FAIL and why; checks that do not apply, or that only the receiver can run (it
        holds the ledger and the published table), print skip. The rows are staged in a
        temporary SQLite file, so memory stays flat.
        """,
        CHECK_EXAMPLES,
    )
    check.add_argument("file", metavar="FILE", help="the delivered file (.parquet or .csv)")
    check.add_argument("--contract", required=True, metavar="C.json", help="the table's contract")
    check.add_argument("--manifest", metavar="M.json", help="the manifest (default FILE.json)")
    check.add_argument(
        "--now",
        default="now",
        metavar="T",
        help="the receiver's time for receiver_time, RFC 3339 (default now)",
    )
    check.add_argument("--json", action="store_true", help="print the checks as JSON")
    check.set_defaults(run=cmd_check)

    claims = command(
        "claims",
        "what a ledger claims at a time, with a freshness limit",
        """
        State every region of a ledger at the reader's time NOW: unknown, expired (complete_as_of
        older than LIMIT), patched (deletions_as_of earlier than complete_as_of) or complete,
        with the table's worst state and its two dates. LIMIT is a duration: 36h, 7d, 90m,
        1d12h, PT36H, seconds, or none.
        """,
        CLAIMS_EXAMPLES,
    )
    claims.add_argument(
        "ledger",
        nargs="?",
        metavar="LEDGER.json",
        help="a Ledger (for instance from dogana fold --json); or --receiver and --table",
    )
    add_receiver(claims, "read the table's ledger from this receiver instead of a file")
    claims.add_argument(
        "--now", required=True, metavar="T", help="the reader's time, RFC 3339, or now"
    )
    claims.add_argument("--limit", required=True, metavar="D", help="how old is too old")
    claims.add_argument(
        "--window", nargs=2, metavar=("LOW", "HIGH"), help="only this closed window"
    )
    claims.add_argument("--json", action="store_true", help="print the Claims as JSON")
    claims.set_defaults(run=cmd_claims)

    fold = command(
        "fold",
        "fold receipts into the ledger they prove",
        """
        Rebuild a table's ledger from its receipts, in publication order (Ledger.from_receipts):
        rejections are skipped, and a missing, reordered or foreign receipt is refused. Each
        RECEIPTS file holds one Receipt or a JSON array of them.
        """,
        FOLD_EXAMPLES,
    )
    fold.add_argument(
        "contract", nargs="?", metavar="CONTRACT.json", help="the contract now in force"
    )
    fold.add_argument("receipts", nargs="*", metavar="RECEIPTS.json", help="receipts, oldest first")
    add_receiver(fold, "fold the table's contract and stored receipts from this receiver")
    fold.add_argument("--json", action="store_true", help="print the Ledger as JSON")
    fold.set_defaults(run=cmd_fold)

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
        --table shows one table's regions and its last receipts. A password in a URL is never
        printed.
        """,
        STATUS_EXAMPLES,
    )
    status.add_argument(
        "receiver", metavar="RECEIVER", help="an Airflow connection id, or a database URL"
    )
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
    sweep.add_argument(
        "receiver", metavar="RECEIVER", help="an Airflow connection id, or a database URL"
    )
    sweep.add_argument(
        "--older-than",
        default="1d",
        metavar="D",
        help="an unpublished decision's age before it is swept (default 1d, as the gate)",
    )
    sweep.set_defaults(run=cmd_sweep)

    from dogana_provider.cli import activation as sources_cli  # it imports this module's helpers

    sources_cli.add_commands(command)
    from dogana_provider.cli import holds as holds_cli  # it imports this module's helpers

    holds_cli.add_commands(command, _Parser)
    return parser


def add_receiver(parser: argparse.ArgumentParser, help_: str) -> None:
    parser.add_argument(
        "--receiver", metavar="RECEIVER", help=f"{help_}: a connection id or a database URL"
    )
    parser.add_argument("--table", metavar="T", help="the table to read from --receiver")


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
