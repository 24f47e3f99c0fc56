"""What the log connectors (pg_logical.py, mariadb_binlog.py) say alike: how a table's columns
differ from the declared ones, and what a refusal tells the person to run.

A log read that cannot prove what it would claim refuses by name (RefusedRead) and leaves what
is published as it was; every such refusal ends with full_read(table), the one way back: a
delivery of the contract's complete shape, which starts the log again from a new snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def columns_difference(
    table: str, first: str, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> str | None:
    """Columns (name, then what types it) before and after, their differences named; None when
    they are the same."""
    if before == after:
        return None
    old, new = {c[0]: c[1:] for c in before}, {c[0]: c[1:] for c in after}
    differences = [f"{n} added" for n in new if n not in old]
    differences += [f"{n} removed" for n in old if n not in new]
    differences += [f"{n} retyped" for n in new if n in old and old[n] != new[n]]
    return (
        f"{table}'s columns {first} ({', '.join(old)}) are not its columns now "
        f"({', '.join(new)}): {', '.join(differences) or 'their order changed'}"
    )


def undeclared(
    table: str, declared: Mapping[str, str] | None, now: list[tuple[str, str]]
) -> str | None:
    """How a table's columns now (name, logical type) differ from the declared ones (the
    connector's "columns" option), or None when they do not, or none are declared."""
    if declared is None:
        return None
    return columns_difference(table, "declared", list(declared.items()), list(now))


def full_read(table: str) -> str:
    """What a refusal tells the person to run."""
    return (
        f"a full read resets the chain: run one delivery of {table}'s complete shape "
        "(PlanDeliveryOperator's shape=, or the DAG triggered with that shape)"
    )
