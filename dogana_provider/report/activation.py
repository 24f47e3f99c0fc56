"""What a person reads about a table's activation: its record under ``dogana status --table``,
and, when a plan fails because a table is not active, the ``dogana activate`` command that
activates it, filled in with what the table's record already holds.

A task prints these too (PlanDeliveryOperator), so they live here and not in the command line.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from dogana_provider.receiver.activation import SourceRecord, SourceState
from dogana_provider.report.table import when


def activation_lines(state: SourceState) -> list[str]:
    """A table's record under its activation line in `dogana status --table`, and what keeps
    it from publishing."""
    record = state.record
    lines = []
    if record is not None:
        lines += [
            f"    owner {record.owner or '-'}, recorded by {record.registered_by or '-'}",
            f"    authorized by {record.granted_by or '-'} at {when(record.granted_at)}, "
            f"expires {when(record.expires_at)}",
            f"    licence {record.licence or '-'}, purposes {', '.join(record.purposes) or '-'}",
            f"    provenance {record.provenance or '-'}",
        ]
    if not state.publishes:
        lines.append(f"    {state.detail()}")
    return lines


def activate_command(receiver: str, state: SourceState) -> str:
    """The `dogana activate` command that activates a table, with what its record already
    holds and a placeholder for the rest, for a person to complete and run."""
    record = state.record or SourceRecord(state.table)

    def kept(value: str | None, placeholder: str) -> str:
        return shlex.quote(value) if value else placeholder

    parts = [
        f"dogana activate {shlex.quote(receiver)} {state.table}",
        f"--owner {kept(record.owner, 'OWNER')}",
        "--authorized-by PERSON --expires 365d",
        f"--licence {kept(record.licence, 'LICENCE')}",
        *(f"--purpose {kept(purpose, 'PURPOSE')}" for purpose in record.purposes or ("",)),
        f"--provenance {kept(record.provenance, 'HOW_THE_DATA_IS_OBTAINED')}",
        "--by YOUR_NAME",
    ]
    return " ".join(parts)


def inactive_message(receiver_conn_id: str, refused: Sequence[SourceState]) -> str:
    """Why the plan fails for tables the receiver may not publish, and how to activate each."""
    lines = [
        f"receiver {receiver_conn_id!r} requires activation, and would publish nothing of "
        "this delivery:"
    ]
    for state in refused:
        lines += [
            f"  {state.detail()}",
            "  a named person activates it (or triggers a DAG of ActivateSourceOperator, such "
            "as dogana_activate_source, with the same values):",
            f"    {activate_command(receiver_conn_id, state)}",
        ]
    return "\n".join(lines)
