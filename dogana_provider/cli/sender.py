"""The sender's commands: what a sender in any language runs on its files before it delivers
them, and what a reader asks of a ledger.

    dogana manifest FILE ...   count a delivered file and write its manifest sidecar
    dogana check FILE ...      verify a file against its manifest and contract, check by check
    dogana claims LEDGER ...   what a ledger claims, region by region, at a time and a limit
    dogana fold CONTRACT RECEIPTS...   the ledger the accepted receipts fold into

claims and fold read a table of a live receiver instead of files with --receiver and --table.

`check` does on a file what the receiver does before it decides, and gives its verdict on all
it can see without the table's ledger and published rows: the core "manifest" and
"receiver_time" checks (at --now), then the file's rows staged in a temporary SQLite database and
every row check of checks/rows.py, the same functions the receiver runs. What only the receiver
can run (transition, and the checks needing the published table) is printed as skip, with why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from dogana_core.claims import Claims
from dogana_core.contract import Contract
from dogana_core.errors import DoganaError, InvalidContract
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.shape import Checkpoint
from dogana_core.values import LogicalType
from dogana_core.wire import Wire, parse_json
from dogana_provider.checks.rows import plan, verify
from dogana_provider.cli.common import (
    OK,
    REFUSED,
    Command,
    Refused,
    UsageError,
    one_source,
    open_receiver,
    parse_datetime,
    parse_duration,
    parse_value,
    receiver_call,
)
from dogana_provider.delivery.files import (
    DeliveredFile,
    UnreadableFile,
    count_rows,
    file_column_hash,
)
from dogana_provider.dialects import SQLITE
from dogana_provider.report.durations import spell_duration
from dogana_provider.report.table import plural, span, text_table, wire_instant
from dogana_provider.staging import bound_columns, stage_file

W = TypeVar("W", bound=Wire)

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


def add_commands(command: Command) -> None:
    """manifest, check, claims and fold."""
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


def add_receiver(parser: argparse.ArgumentParser, help_: str) -> None:
    parser.add_argument(
        "--receiver", metavar="RECEIVER", help=f"{help_}: a connection id or a database URL"
    )
    parser.add_argument("--table", metavar="T", help="the table to read from --receiver")


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
        f"{plural(manifest.rows, 'row')}, {plural(manifest.tombstones, 'tombstone')}, "
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
    limit = spell_duration(claims.limit)
    exact = claims.exact_as_of
    lines = [
        f"table {ledger.contract.table} at {wire_instant(claims.now)}, limit {limit}: "
        f"{claims.state}",
        f"  complete_as_of  {wire_instant(claims.complete_as_of)}",
        f"  deletions_as_of {wire_instant(claims.deletions_as_of)}",
        f"  exact_as_of     {wire_instant(exact)}",
        "",
    ]
    rows = [
        (
            span(r.region),
            wire_instant(r.complete_as_of),
            wire_instant(r.deletions_as_of),
            str(r.state),
        )
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
        (span(region), wire_instant(region.complete_as_of), wire_instant(region.deletions_as_of))
        for region in ledger.regions
    ]
    lines.append(text_table(("region", "complete_as_of", "deletions_as_of"), rows, indent="  "))
    print("\n".join(lines))
    return OK
