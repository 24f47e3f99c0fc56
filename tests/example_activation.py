"""The documented setup of a receiver that requires activation, as the PostgreSQL examples run
(tests/dags, tests/deployment): require_activation switched on, then every table the example
DAGs deliver activated by a named person (docs/activation.md), as
`dogana require-activation` and `dogana activate` do.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "dags" / "examples"
STEWARD = "Ada Steward"
"""Who records the examples' activations (a named person other than their owner)."""


def example_tables() -> list[str]:
    """Every table the example DAGs deliver: the pipelines' and the contract folder's."""
    from dogana_provider.contract_files import read_contract_folder

    tables = {
        "orders",
        "invoices",
        "invoice_lines",
        "events",
        "shipments",
        "web_orders",
        "api_orders",
    }
    files, errors = read_contract_folder(EXAMPLES / "contracts")
    assert not errors, errors
    for found in files:
        tables.update(contract.table for contract in found.contracts)
    return sorted(tables)


def activation(**changes: Any) -> dict[str, Any]:
    """What `dogana activate` records for an example table, changed as given."""
    fields: dict[str, Any] = {
        "owner": "Grace Owner",
        "authorized_by": "Katherine Grantor",
        "expires_at": datetime.now(UTC) + timedelta(days=1),
        "licence": "internal-use-only",
        "purposes": ["testing the example DAGs"],
        "provenance": "the test's own source database, filled by the test",
        "by": STEWARD,
    }
    fields.update(changes)
    return fields


def require_and_activate(receiver: Any, tables: Iterable[str]) -> None:
    """Switch a receiver to require activation, and activate tables."""
    sources = receiver.sources
    sources.require(True, by=STEWARD)
    for table in tables:
        sources.activate(table, **activation())
