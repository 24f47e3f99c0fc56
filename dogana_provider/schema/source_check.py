"""The check before the first row is read: the source's columns now against the held version.

    expected = check_source(table, held, discovered, declared)   # or SchemaRefused

held is the table's latest published version (versions.py), discovered the source's columns
as a read will deliver them (sources/discover.py, with the types the contract and the DAG
author give), declared the policy the DAG declares now. Every change (policy.compare) is judged
by the HELD version's policy, never the declared one: a producer cannot widen its own policy
(P063). A declared policy that differs from the held one is recorded with the next version and
governs the change after it.

Any change the held policy refuses fails the whole read at once, the message naming every
column and what changed; nothing is read. Otherwise Expected says how to read and what to
record:

    left_out   columns not read (discard_value): NULL in the new rows, the version unchanged
    read_as    columns read as the type the published table holds (a narrowed decimal)
    columns    the version this delivery brings: the held one where a change is not recorded
    record     whether that differs from the held version (columns or policy), so that the
               delivery proposes a new version, published with it
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dogana_provider.report.table import plural
from dogana_provider.schema.policy import (
    Change,
    Judged,
    Kind,
    Mode,
    Outcome,
    SchemaPolicy,
    compare,
    judge,
)
from dogana_provider.schema.versions import SchemaVersion
from dogana_provider.sources.discover import SourceColumn


class SchemaRefused(Exception):
    """A change to a source's columns that the held version's policy forbids; nothing was read."""


@dataclass(frozen=True)
class Expected:
    """What a read of one table does under its policy; see the module docstring."""

    table: str
    columns: tuple[SourceColumn, ...]
    policy: SchemaPolicy
    judged: tuple[Judged, ...]
    record: bool
    left_out: tuple[str, ...] = ()
    read_as: Mapping[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for the task's log."""
        if not self.judged:
            count = plural(len(self.columns), "column")
            return f"{self.table}: the source's {count} match the held schema version"
        changes = "; ".join(str(j) for j in self.judged)
        what = "a new schema version" if self.record else "no new schema version"
        return f"{self.table}: {changes} -> {what}"


def delivered(
    discovered: Sequence[SourceColumn],
    types: Mapping[str, str],
    *,
    renames: Mapping[str, str] | None = None,
    never_published: Sequence[str] = (),
) -> list[SourceColumn]:
    """The columns a read delivers: the discovered ones under the names the file gives them
    (renames: a soft-delete flag to the deleted column), typed as the contract and the DAG
    author type them (types, by file name), without those never published (the deleted column)."""
    renames = renames or {}
    found = []
    for column in discovered:
        name = renames.get(column.name, column.name)
        if name in never_published:
            continue
        found.append(
            SourceColumn(name, types.get(name, column.type), column.nullable, column.native)
        )
    return found


def check_source(
    table: str,
    held: SchemaVersion | None,
    discovered: Sequence[SourceColumn],
    declared: SchemaPolicy,
) -> Expected:
    """What the held version's policy makes of the source's columns now; SchemaRefused when it
    forbids any change, naming every column and what changed."""
    if held is None:
        first = Judged(Change(Kind.FIRST, table), Outcome.RECORDED, declared.tables)
        if declared.tables is Mode.FREEZE:
            raise SchemaRefused(
                f"{table}: schema policy tables freeze, and the receiver holds no schema version "
                "of the table: nothing was read. Its first version is recorded by a run whose "
                "policy lets tables evolve"
            )
        return Expected(table, tuple(discovered), declared, (first,), record=True)
    judged = [judge(held.policy, change) for change in compare(held.columns, discovered)]
    refused = [j for j in judged if j.outcome is Outcome.REFUSED]
    if refused:
        raise SchemaRefused(
            f"{table}: the source's columns changed in a way the held schema version "
            f"{held.version}'s policy ({held.policy}) forbids, so nothing was read: "
            + "; ".join(str(j) for j in refused)
            + (
                ". Also changed: " + "; ".join(str(j) for j in judged if j not in refused)
                if len(refused) < len(judged)
                else ""
            )
            + ". A policy declared now governs only the changes after the next version"
        )
    now = {column.name: column for column in discovered}
    kept = {column.name: column for column in held.columns}
    left_out = [j.change.column for j in judged if j.outcome is Outcome.DISCARDED]
    read_as = {
        j.change.column: j.change.before.type
        for j in judged
        if j.outcome is Outcome.READ_AS_HELD and j.change.before is not None
    }
    unrecorded = {
        j.change.column
        for j in judged
        if j.outcome in (Outcome.DISCARDED, Outcome.READ_AS_HELD, Outcome.PER_ROW)
    }
    columns: list[SourceColumn] = []
    for name, column in now.items():
        if name not in unrecorded:
            columns.append(column)
        elif name in kept:
            columns.append(kept[name])
    # Order is no change: a column is the same wherever the source declares it.
    changed = {c.name: c for c in columns} != kept or declared != held.policy
    if declared != held.policy:
        judged.append(Judged(Change(Kind.POLICY, str(declared)), Outcome.RECORDED, declared.tables))
    return Expected(
        table,
        tuple(columns),
        declared,
        tuple(judged),
        record=changed,
        left_out=tuple(left_out),
        read_as=read_as,
    )
