"""The contract of a keyed table whose source soft-deletes, shared by the operator tests
(tests/operators), the task-group tests (tests/dags) and bench/changes.py.

Importable from any test folder: pytest puts tests/ on sys.path when it loads tests/conftest.py.
"""

from __future__ import annotations

from dogana_core import Contract, Shape


def orders_contract(table: str, full_cost: int = 10) -> Contract:
    """Keyed; a full read (costing full_cost), or changes by updated_at with tombstones from a
    soft-delete flag."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(cost=full_cost),
            "changes": Shape.changes(checkpoint="timestamp", tombstones=True),
        },
        cursor_column="updated_at",
        deleted_column="deleted",
        types={"id": "int", "updated_at": "datetime", "deleted": "bool"},
    )
