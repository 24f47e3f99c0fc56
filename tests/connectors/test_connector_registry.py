"""The connectors' registry (connectors/__init__.py): each kind builds its own class, and a
connector's module is imported only when that connector is used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dogana_provider import connectors


@pytest.mark.parametrize(
    ("registry", "kind"),
    [("CONNECTORS", kind) for kind in connectors.CONNECTORS]
    + [("GROUP_CONNECTORS", kind) for kind in connectors.GROUP_CONNECTORS],
)
def test_each_registered_kind_names_a_class_of_that_kind(registry: str, kind: str) -> None:
    name = getattr(connectors, registry)[kind]
    assert getattr(connectors, name).kind == kind


def test_a_connector_of_a_kind_is_that_kinds_class() -> None:
    assert isinstance(connectors.connector_of({"kind": "jsonl"}), connectors.JsonLinesConnector)
    group = connectors.group_connector_of({"kind": "pg_logical", "tables": ["a", "b"]})
    assert isinstance(group, connectors.PgLogicalGroup)


def test_a_sql_delivery_imports_no_connector_module() -> None:
    """DeliverOperator (and ExtractOperator with it) reading SQL snapshots never loads the log
    readers, the HTTP or JSON Lines connectors: every task process would pay their import."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dogana_provider.operators.deliver; print(' '.join(sorted(sys.modules)))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    modules = {f"{connectors.__name__}.{module}" for module in connectors.MODULES.values()}
    # log_capture, the log connectors' shared words (a refusal naming a full read), is
    # ExtractOperator's too: it holds no driver or decoder.
    modules -= {f"{connectors.__name__}.log_capture"}
    assert sorted(modules & set(loaded)) == []
