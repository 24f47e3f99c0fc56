"""What a person reads about a held delivery, at a terminal (`dogana holds`, `dogana hold show`)
and in the gate task's log: the same lines in both places, tables through table.py's text_table.

A hold is shown with what decides its fate: each held expectation with what the decision
observed, the rows violating it (up to a limit) and how many there are, and the exact commands
that release or discard it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dogana_core.gate import Outcome, Receipt
from dogana_core.ledger import GENESIS
from dogana_provider.receiver.holds import Violations
from dogana_provider.receiver.store import Hold
from dogana_provider.report.table import age, plural, text_table, when


def holds_table(holds: Sequence[Hold], now: datetime) -> str:
    """One line per hold: its id, tables, when it was held and for how long, its rows and the
    expectations it violated."""
    header = ("hold", "tables", "held at", "held for", "rows", "violated")
    rows = [
        (
            hold.hold_id,
            ", ".join(held.table for held in hold.tables),
            when(hold.held_at),
            age(now - hold.held_at),
            sum(held.manifest.rows for held in hold.tables),
            ", ".join(check.name for held in hold.tables for check in held.held_checks),
        )
        for hold in holds
    ]
    return text_table(header, rows)


def held_names(hold: Hold) -> str:
    """The held expectations of a hold, each with its table: what a person must judge."""
    return ", ".join(
        f"{check.name} on {held.table}" for held in hold.tables for check in held.held_checks
    )


def hold_lines(hold: Hold, violations: Sequence[Violations], *, receiver: str) -> list[str]:
    """A hold in full: each table as decided and each held expectation, with its violating
    rows when they are given; then how to end it, or how it ended."""
    tables = ", ".join(held.table for held in hold.tables)
    lines = [f"hold {hold.hold_id} of {tables} in receiver {receiver}: {hold.state}"]
    if hold.held:
        lines.append(f"  held since {when(hold.held_at)} UTC: nothing of it is published")
    else:
        lines.append(f"  held at {when(hold.held_at)} UTC")
    for held in hold.tables:
        manifest = held.manifest
        lines.append(
            f"  {held.table}: manifest {manifest.identity[:12]} (shape {manifest.shape!r}, "
            f"{manifest.rows} rows, {manifest.tombstones} tombstones, produced at "
            f"{when(manifest.produced_at)} UTC), decided on {_base(held.base_publication_id)}"
        )
    shown = {(found.table, found.check.name) for found in violations}
    for found in violations:
        lines += ["", *violation_lines(found)]
    for held in hold.tables:
        for check in held.held_checks:
            if (held.table, check.name) not in shown:
                lines += ["", f"{held.table}: {check.name}: {check.detail}"]
    lines.append("")
    if hold.held:
        lines += end_commands(hold.hold_id, receiver)
    else:
        why = f" ({hold.reason})" if hold.reason else ""
        lines.append(
            f"{hold.state} by {hold.decided_by} at {when(hold.decided_at)} UTC{why}, recorded "
            f"as {hold.outcome}; its staged rows are gone"
        )
    return lines


def violation_lines(found: Violations) -> list[str]:
    """One held expectation's violating rows: how many, and the first of them as a table."""
    name, rows = f"{found.table}: {found.check.name}", found.rows
    lines = [f"{name}: {found.check.detail}"]
    if rows.count is None:
        return [*lines, f"  no rows to show: {rows.reason}"]
    shown = f", the first {len(rows.rows)} below" if len(rows.rows) < rows.count else ""
    verb = "violates" if rows.count == 1 else "violate"
    lines.append(f"  {plural(rows.count, 'row')} {verb} it{shown}")
    if rows.rows:
        lines.append(text_table(rows.columns, [_cells(row) for row in rows.rows], indent="  "))
    return lines


def end_commands(hold_id: str, receiver: str) -> list[str]:
    """The exact commands a person runs to end a hold."""
    return [
        "release it (published as it would have been, or decided again if the table moved on):",
        f'  dogana hold release {receiver} {hold_id} --by "YOUR NAME"',
        "or discard it (a rejection recorded, its staged rows dropped):",
        f'  dogana hold discard {receiver} {hold_id} --by "YOUR NAME" --reason "WHY"',
    ]


def outcome_line(receipt: Receipt) -> str:
    """What ending a hold recorded for one table."""
    manifest = receipt.manifest
    if receipt.outcome is Outcome.ACCEPTED:
        return (
            f"{receipt.table}: published manifest {manifest.identity[:12]} ({manifest.rows} "
            f"rows) as {receipt.publication_id[:12]}"
        )
    if receipt.outcome is Outcome.REPLAYED:
        return f"{receipt.table}: manifest {manifest.identity[:12]} was already published"
    failed = "; ".join(f"{check.name}: {check.detail}" for check in receipt.failed)
    return f"{receipt.table}: manifest {manifest.identity[:12]} rejected (recorded): {failed}"


def _base(publication_id: str) -> str:
    if publication_id == GENESIS:
        return "a table with no publication yet"
    return f"publication {publication_id[:12]}"


def _cells(row: Sequence[Any]) -> list[str]:
    return ["NULL" if cell is None else str(cell) for cell in row]
