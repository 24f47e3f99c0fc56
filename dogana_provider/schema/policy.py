"""A table's schema policy: which changes to its source's columns a delivery may bring.

The vocabulary is dlt's schema contract: a mode for each of three entities,

    tables       the table's first schema version (a table the receiver holds none for)
    columns      a column added or dropped, and a column's nullability loosened or tightened
    data_type    a column's type widened, narrowed or changed to another

and four modes,

    evolve         the change is allowed and recorded as the table's next schema version
    freeze         the change fails the run before a row is read
    discard_value  the changed column is not read: its values are left out (NULL in new rows)
    discard_row    rows that do not conform are left out; a change to a whole column would
                   leave out every row, so at discovery it fails the run as freeze does, and
                   it acts on rows at the gate (schema/conformance.py)

A policy is written as one mode for columns and data_type ("freeze": tables keeps evolve, since
a table's first version changes no shape) or a mapping of some of them
({"columns": "evolve", "data_type": "freeze"}, the others at their default). Schema registries'
compatibility directions map onto it in docs/schema-policy.md.

DEFAULT is what dogana did before a policy could be declared, and what applies when none is:
a new column is added to the published table, nullable; a dropped one arrives as NULL in new
rows; a retyped column is refused. That is tables evolve, columns evolve, data_type freeze.

Widening (a decimal's precision raised, its scale kept) is the one type change a published
column can take in place; int and bigint, varchar(n) and text are one dogana type each (the
published table is created BIGINT and TEXT), so they are no change at all here. A narrowed
column (a decimal's precision lowered) is read as the wider type the published table holds,
which holds every value it can carry. No mode puts another type's values into a published
column: under evolve a retyped column still fails the run, naming the column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dogana_provider.sources.discover import SourceColumn

DECIMAL = "decimal("


class InvalidPolicy(ValueError):
    """A schema policy that does not parse: the field and the rule."""


class Mode(StrEnum):
    EVOLVE = "evolve"
    FREEZE = "freeze"
    DISCARD_VALUE = "discard_value"
    DISCARD_ROW = "discard_row"


class Entity(StrEnum):
    TABLES = "tables"
    COLUMNS = "columns"
    DATA_TYPE = "data_type"


class Kind(StrEnum):
    """What happened to one column between two versions of the source's shape."""

    FIRST = "first_version"
    ADDED = "added"
    DROPPED = "dropped"
    WIDENED = "widened"
    NARROWED = "narrowed"
    RETYPED = "retyped"
    NULLABLE = "nullability_loosened"
    NOT_NULL = "nullability_tightened"
    POLICY = "policy_changed"


ENTITY_OF: dict[Kind, Entity] = {
    Kind.FIRST: Entity.TABLES,
    Kind.ADDED: Entity.COLUMNS,
    Kind.DROPPED: Entity.COLUMNS,
    Kind.NULLABLE: Entity.COLUMNS,
    Kind.NOT_NULL: Entity.COLUMNS,
    Kind.WIDENED: Entity.DATA_TYPE,
    Kind.NARROWED: Entity.DATA_TYPE,
    Kind.RETYPED: Entity.DATA_TYPE,
}


class Outcome(StrEnum):
    """What a policy makes of one change."""

    RECORDED = "recorded"
    """allowed: the next schema version records it"""
    APPLIED = "applied"
    """allowed, and the published column is widened in the publication's transaction"""
    READ_AS_HELD = "read_as_held"
    """allowed: the column is read as the wider type the published table holds"""
    DISCARDED = "discarded"
    """the column is not read; the version stays as it was"""
    PER_ROW = "checked_per_row"
    """allowed; the version keeps the column not null, and the gate leaves out the rows
    with null there (schema/conformance.py)"""
    REFUSED = "refused"
    """the run fails before a row is read"""


@dataclass(frozen=True)
class SchemaPolicy:
    """One mode per entity; see the module docstring."""

    tables: Mode = Mode.EVOLVE
    columns: Mode = Mode.EVOLVE
    data_type: Mode = Mode.FREEZE

    def __post_init__(self) -> None:
        for entity in Entity:
            value = getattr(self, entity.value)
            try:
                mode = Mode(value)
            except ValueError:
                raise InvalidPolicy(
                    f"schema_policy.{entity}: {value!r} is not one of "
                    f"{', '.join(mode.value for mode in Mode)}"
                ) from None
            object.__setattr__(self, entity.value, mode)
        if self.tables not in (Mode.EVOLVE, Mode.FREEZE):
            raise InvalidPolicy(
                f"schema_policy.tables: {self.tables} has no meaning for a table dogana loads "
                "whole; evolve records its first version, freeze refuses a table without one"
            )

    def mode(self, entity: Entity) -> Mode:
        return Mode(getattr(self, entity.value))

    def to_dict(self) -> dict[str, str]:
        return {entity.value: str(self.mode(entity)) for entity in Entity}

    @classmethod
    def of(cls, value: Any, where: str = "schema_policy") -> SchemaPolicy:
        """A policy from itself, one mode's name (for every entity) or a mapping of modes."""
        if isinstance(value, SchemaPolicy):
            return value
        if value is None:
            return DEFAULT
        if isinstance(value, str):
            try:
                mode = Mode(value)
            except ValueError:
                raise InvalidPolicy(
                    f"{where}: {value!r} is not one of {', '.join(m.value for m in Mode)}"
                ) from None
            # The first version is no change to a table's shape: tables is named on its own.
            return cls(columns=mode, data_type=mode)
        if isinstance(value, Mapping):
            unknown = sorted(set(map(str, value)) - {entity.value for entity in Entity})
            if unknown:
                raise InvalidPolicy(
                    f"{where}: {', '.join(unknown)}: not tables, columns or data_type"
                )
            try:
                modes: dict[str, Any] = {str(key): str(mode) for key, mode in value.items()}
                return cls(**modes)
            except InvalidPolicy as error:
                raise InvalidPolicy(f"{where}: {error}") from None
        raise InvalidPolicy(f"{where}: a mode's name or a mapping of tables, columns, data_type")

    def __str__(self) -> str:
        return ", ".join(f"{entity} {self.mode(entity)}" for entity in Entity)


def policies(value: Any, tables: Sequence[str], where: str) -> dict[str, dict[str, str]]:
    """Each table's policy as JSON, by table, from one policy for every table or a mapping
    from table to policy; InvalidPolicy naming where and the rule."""
    entities = {entity.value for entity in Entity}
    by_table = isinstance(value, Mapping) and not set(map(str, value)) <= entities
    if not by_table:
        one = SchemaPolicy.of(value, where).to_dict()
        return {table: dict(one) for table in tables}
    unknown = [str(table) for table in value if table not in tables]
    if unknown:
        raise InvalidPolicy(f"{where}: {', '.join(unknown)}: not a table ({', '.join(tables)})")
    return {
        str(table): SchemaPolicy.of(item, f"{where}.{table}").to_dict()
        for table, item in value.items()
    }


DEFAULT = SchemaPolicy()
"""Today's behaviour: tables evolve, columns evolve (added nullable), data_type freeze."""


@dataclass(frozen=True)
class Change:
    """One column's change between the held version and the source now."""

    kind: Kind
    column: str
    before: SourceColumn | None = None
    after: SourceColumn | None = None

    def __str__(self) -> str:
        before, after = self.before, self.after
        if self.kind is Kind.POLICY:
            return f"policy now {self.column}"
        if self.kind is Kind.ADDED and after is not None:
            return f"{self.column} added ({_spelled(after)})"
        if self.kind is Kind.DROPPED and before is not None:
            return f"{self.column} dropped (was {_spelled(before)})"
        if self.kind is Kind.FIRST:
            return f"first version of {self.column}"
        if before is not None and after is not None:
            if self.kind in (Kind.NULLABLE, Kind.NOT_NULL):
                was = "nullable" if before.nullable else "not null"
                now = "nullable" if after.nullable else "not null"
                return f"{self.column} {was} -> {now}"
            return f"{self.column} {self.kind}: {before.type} -> {after.type}"
        return f"{self.column} {self.kind}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "column": self.column,
            "before": None if self.before is None else column_dict(self.before),
            "after": None if self.after is None else column_dict(self.after),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Change:
        return cls(
            Kind(data["kind"]),
            str(data["column"]),
            None if data.get("before") is None else column_of(data["before"]),
            None if data.get("after") is None else column_of(data["after"]),
        )


@dataclass(frozen=True)
class Judged:
    """A change and what the governing policy makes of it."""

    change: Change
    outcome: Outcome
    mode: Mode

    def __str__(self) -> str:
        if self.change.kind is Kind.POLICY:
            return f"{self.change}: recorded, governing the changes after this version"
        entity = ENTITY_OF.get(self.change.kind)
        why = f"{entity} {self.mode}" if entity else str(self.mode)
        return f"{self.change}: {self.outcome} ({why})"


def column_dict(column: SourceColumn) -> dict[str, Any]:
    return {
        "name": column.name,
        "type": column.type,
        "nullable": column.nullable,
        "native": column.native,
    }


def column_of(data: Mapping[str, Any]) -> SourceColumn:
    return SourceColumn(
        str(data["name"]), str(data["type"]), bool(data["nullable"]), str(data.get("native", ""))
    )


def _spelled(column: SourceColumn) -> str:
    return f"{column.type}{'' if column.nullable else ' not null'}"


# Comparing two shapes ----------------------------------------------------------------------------


def type_change(before: str, after: str) -> Kind | None:
    """How a column's dogana type changed: None (the same), widened, narrowed or retyped."""
    if before == after:
        return None
    if before.startswith(DECIMAL) and after.startswith(DECIMAL):
        p1, s1 = _precision_scale(before)
        p2, s2 = _precision_scale(after)
        if s1 == s2:
            return Kind.WIDENED if p2 > p1 else Kind.NARROWED
    return Kind.RETYPED


def _precision_scale(logical: str) -> tuple[int, int]:
    precision, scale = logical[len(DECIMAL) : -1].split(",")
    return int(precision), int(scale)


def compare(held: Sequence[SourceColumn], now: Sequence[SourceColumn]) -> list[Change]:
    """Every change from the held columns to the source's now, in the order a person reads
    them: the held columns' order, then the new columns'. A rename is a drop and an add."""
    was = {column.name: column for column in held}
    found = {column.name: column for column in now}
    changes: list[Change] = []
    for name, before in was.items():
        after = found.get(name)
        if after is None:
            changes.append(Change(Kind.DROPPED, name, before))
            continue
        kind = type_change(before.type, after.type)
        if kind is not None:
            changes.append(Change(kind, name, before, after))
        if before.nullable != after.nullable:
            loosened = Kind.NULLABLE if after.nullable else Kind.NOT_NULL
            changes.append(Change(loosened, name, before, after))
    changes += [
        Change(Kind.ADDED, name, None, after) for name, after in found.items() if name not in was
    ]
    return changes


# Judging them --------------------------------------------------------------------------------


def judge(policy: SchemaPolicy, change: Change) -> Judged:
    """What policy (the held version's: a producer cannot widen its own) makes of change."""
    entity = ENTITY_OF[change.kind]
    mode = policy.mode(entity)
    return Judged(change, _outcome(change.kind, mode), mode)


def _outcome(kind: Kind, mode: Mode) -> Outcome:
    if mode is Mode.FREEZE:
        return Outcome.REFUSED
    if kind is Kind.FIRST:
        return Outcome.RECORDED
    if mode is Mode.DISCARD_ROW:
        if kind is Kind.NOT_NULL:
            return Outcome.RECORDED
        if kind is Kind.NULLABLE:
            return Outcome.PER_ROW
        # Every row carries a whole column's change: leaving those rows out leaves out all.
        return Outcome.REFUSED
    if mode is Mode.DISCARD_VALUE:
        if kind in (Kind.DROPPED, Kind.NOT_NULL, Kind.NULLABLE):
            return Outcome.RECORDED  # no value to leave out: a null is the value left out
        return Outcome.DISCARDED
    # evolve
    if kind is Kind.WIDENED:
        return Outcome.APPLIED
    if kind is Kind.NARROWED:
        return Outcome.READ_AS_HELD
    if kind is Kind.RETYPED:
        return Outcome.REFUSED
    return Outcome.RECORDED
