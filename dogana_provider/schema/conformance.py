"""Per-row conformance at the gate: a source that drifted without its catalog saying so is caught
on the row, and the table's schema policy decides what happens to it.

The check before the read (source_check.py) compares catalogs; rows can still disagree with the
version: a pushed delivery was never discovered, and a column made nullable under discard_row is
read while its version keeps it not null. So the gate counts, in the staged live rows, the nulls
in every column the delivery's version declares not null (the version it brings, else the held
one; key columns are key_not_null's), and the held version's columns mode decides:

    freeze                   the check fails: the delivery is refused, naming each column
    discard_row              the check passes, counting the rows; they are left out of the
                             publication, in its transaction (leave_out)
    evolve, discard_value    the check passes, counting the rows; they are published as they are

Its result is one Check, SCHEMA_CONFORMANCE, in the receipt, only for a table that has a
version with such a column. A complete read that left rows out publishes fewer rows than its
manifest declares: left_out reads the count back from the receipt, for Receiver.verify.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from dogana_core.contract import Contract
from dogana_core.gate import Check, Receipt
from dogana_provider.checks.rows import live_condition
from dogana_provider.dialects import Dialect, execute, fetch_one
from dogana_provider.report.table import plural
from dogana_provider.schema.policy import Mode
from dogana_provider.schema.versions import SchemaVersion, SchemaVersions
from dogana_provider.staging import Staged

SCHEMA_CONFORMANCE = "schema_conformance"
_LEFT_OUT = re.compile(r"^left out (\d+) rows? ")


def declared_not_null(
    connection: Any, versions: SchemaVersions, staged: Staged, contract: Contract, identity: str
) -> tuple[SchemaVersion | None, list[str]]:
    """The held version, and the staged non-key columns the delivery's version (its proposal,
    else the held one) declares not null."""
    held = versions.held(connection, contract.table)
    if held is None:
        return None, []
    brought = versions.proposal(connection, contract.table, identity) or held
    have = {name for name, _ in staged.columns}
    names = [
        c.name
        for c in brought.columns
        if not c.nullable and c.name in have and c.name not in contract.key
    ]
    return held, names


def check(
    connection: Any,
    dialect: Dialect,
    versions: SchemaVersions,
    staged: Staged,
    contract: Contract,
    identity: str,
) -> Check | None:
    """The staged rows' conformance to the version's not-null columns; None when none applies."""
    held, names = declared_not_null(connection, versions, staged, contract, identity)
    if held is None or not names or staged.unreadable is not None:
        return None
    counts = _nulls(connection, dialect, staged, contract, names)
    total, by_column = counts[0], dict(zip(names, counts[1:], strict=True))
    mode = held.policy.columns
    spelled = "; ".join(
        f"{name}: {plural(count, 'row')} null" for name, count in by_column.items() if count
    )
    if not total:
        return Check(
            SCHEMA_CONFORMANCE,
            True,
            f"no live row is null in the {plural(len(names), 'column')} version "
            f"{held.version} declares not null ({', '.join(names)})",
        )
    if mode is Mode.FREEZE:
        return Check(
            SCHEMA_CONFORMANCE,
            False,
            f"{plural(total, 'live row')} null where version {held.version} declares not null "
            f"({spelled}); refused (columns freeze)",
        )
    if mode is Mode.DISCARD_ROW:
        return Check(
            SCHEMA_CONFORMANCE,
            True,
            f"left out {plural(total, 'row')} null where version {held.version} declares not "
            f"null ({spelled}) (columns discard_row)",
        )
    return Check(
        SCHEMA_CONFORMANCE,
        True,
        f"published {plural(total, 'row')} null where version {held.version} declares not "
        f"null ({spelled}) (columns {mode})",
    )


def leave_out(
    connection: Any,
    dialect: Dialect,
    versions: SchemaVersions,
    staged: Staged,
    contract: Contract,
    receipt: Receipt,
) -> None:
    """In the publication's transaction: delete from the staged rows those its conformance check
    left out (discard_row), before they are published."""
    if not left_out(receipt):
        return
    _, names = declared_not_null(connection, versions, staged, contract, receipt.manifest.identity)
    live, params = live_condition(dialect, staged, contract)
    nulls = " OR ".join(f"{dialect.quote(name)} IS NULL" for name in names)
    execute(
        connection,
        f"DELETE FROM {dialect.quote(staged.table)} WHERE {live} AND ({nulls})",
        tuple(params),
    )


def left_out(receipt: Receipt) -> int:
    """How many rows an accepted receipt's conformance check left out of its publication."""
    details = {found.name: found.detail for found in receipt.checks}
    matched = _LEFT_OUT.match(details.get(SCHEMA_CONFORMANCE, ""))
    return int(matched[1]) if matched else 0


def _nulls(
    connection: Any, dialect: Dialect, staged: Staged, contract: Contract, names: Sequence[str]
) -> list[int]:
    """Live rows null in any of names, then in each of them, in one scan."""
    live, params = live_condition(dialect, staged, contract)
    quoted = [dialect.quote(name) for name in names]
    any_null = " OR ".join(f"{q} IS NULL" for q in quoted)
    sums = [f"SUM(CASE WHEN {any_null} THEN 1 ELSE 0 END)"]
    sums += [f"SUM(CASE WHEN {q} IS NULL THEN 1 ELSE 0 END)" for q in quoted]
    row = fetch_one(
        connection,
        f"SELECT {', '.join(sums)} FROM {dialect.quote(staged.table)} WHERE {live}",
        tuple(params),
    )
    return [int(value or 0) for value in (row or ())] or [0] * (len(names) + 1)
