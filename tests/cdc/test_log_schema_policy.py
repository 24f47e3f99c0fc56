"""A log pipeline's table under its schema policy: a column retyped in the source is judged by
the held version's policy before the connector reads a row, as a SQL snapshot's is. Under
data_type evolve, a decimal widened in the log is refused as relation_changed until the columns
are declared anew and the printed full read is run, which publishes the wider column with a new
schema version; under the default (data_type freeze) that full read is refused before reading,
naming the column and the policy."""

from __future__ import annotations

import json
import shlex
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import COLUMNS, MariaTable, PgTable, log_contract, write_group_dag

from dogana_provider.dialects import declared_types
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.receiver.transactions import transaction
from dogana_provider.schema.versions import SchemaVersion, SchemaVersions

pytestmark = pytest.mark.airflow

WIDER = {**COLUMNS, "amount": "decimal(14,2)"}
WIDEN = {
    "postgres": "ALTER COLUMN amount TYPE numeric(14,2)",
    "mariadb": "MODIFY amount DECIMAL(14,2)",
}


def versions(hook: DoganaHook, table: str) -> list[SchemaVersion]:
    receiver = hook.receiver
    held = SchemaVersions(receiver.dialect, receiver.store.prefix)
    with transaction(receiver.connect, receiver.dialect, write=False) as connection:
        return held.history(connection, table)


def kept(hook: DoganaHook, table: str) -> Any:
    """What is published of the table: rows, ledger, receipts, schema versions, column types."""
    receiver = hook.receiver
    with receiver.read(table) as snapshot:
        rows = sorted(snapshot.rows)
    with transaction(receiver.connect, receiver.dialect, write=False) as connection:
        types = declared_types(connection, receiver.dialect, table)
    receipts = [r.to_dict() for r in receiver.receipts(table)]
    return rows, receiver.ledger(table), receipts, versions(hook, table), types


def amounts(hook: DoganaHook, source: PgTable | MariaTable) -> tuple[list[Any], list[Any]]:
    """The published amounts and the source's, by id, at the cent."""

    def cents(rows: Any) -> list[tuple[int, Decimal]]:
        return [(int(i), Decimal(str(a)).quantize(Decimal("0.01"))) for i, a in rows]

    with hook.committed() as connection:
        found = connection.execute(f'SELECT id, amount FROM "{source.table}" ORDER BY id')
        published = cents(found.fetchall())
    return published, cents(source.execute(f"SELECT id, amount FROM {source.quoted} ORDER BY id"))


def widened(
    source: PgTable | MariaTable,
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    policy: Any,
) -> tuple[Any, DoganaHook, str]:
    """A table delivered once from its log under policy, then amount widened in the source
    amid changes: the DAG's module, the receiver, and the full read's conf."""
    contracts = [log_contract(source.table)]
    module, receiver_id = write_group_dag(
        airflow_home, tmp_path, monkeypatch, source.config(columns=COLUMNS), contracts, policy
    )
    rows = ", ".join(f"({i}, {i}.25, {source.now}, 'n', true)" for i in range(1, 6))
    source.execute(f"INSERT INTO {source.quoted} VALUES {rows}")
    assert set(states(module.dag.test()).values()) == {"success"}
    source.execute(f"UPDATE {source.quoted} SET amount = amount + 1 WHERE id = 1")
    kind = "postgres" if isinstance(source, PgTable) else "mariadb"
    source.execute(f"ALTER TABLE {source.quoted} {WIDEN[kind]}")
    source.execute(f"UPDATE {source.quoted} SET amount = 123456789012.34 WHERE id = 2")
    conf = json.dumps({"dogana_shape": {source.table: "snapshot"}})
    return module, DoganaHook(receiver_id), conf


def test_under_data_type_evolve_a_widened_decimal_in_the_log_is_published_by_the_printed_full_read(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
    capfd: pytest.CaptureFixture[str],
) -> None:
    source, policy = log_source, {"data_type": "evolve"}
    module, hook, conf = widened(source, airflow_home, tmp_path, monkeypatch, policy)
    before = kept(hook, source.table)
    assert [v.version for v in before[3]] == [1]
    capfd.readouterr()
    assert states(module.dag.test())[f"{source.table}.extract"] == "failed"
    logged = capfd.readouterr().out
    assert "relation_changed" in logged and "amount retyped" in logged
    printed = f"airflow dags trigger {module.dag.dag_id} --conf {shlex.quote(conf)}"
    assert f"to run the full read: {printed}" in logged
    assert kept(hook, source.table) == before

    # The columns declared as they are now, and the printed command's run.
    module, _ = write_group_dag(
        airflow_home,
        tmp_path,
        monkeypatch,
        source.config(columns=WIDER),
        [log_contract(source.table)],
        policy,
    )
    reset = module.dag.test(run_conf=json.loads(shlex.split(printed)[5]))
    assert set(states(reset).values()) == {"success"}
    assert xcom(reset, f"{source.table}.extract")["manifest"]["shape"] == "snapshot"
    held = versions(hook, source.table)
    assert [v.version for v in held] == [1, 2]
    assert {c.name: c.type for c in held[-1].columns}["amount"] == "decimal(14,2)"
    assert "amount widened" in " ".join(str(j) for j in held[-1].judged)
    published, now = amounts(hook, source)
    assert published == now and (2, Decimal("123456789012.34")) in published

    # The log goes on from the full read.
    source.execute(f"UPDATE {source.quoted} SET amount = 987654321098.76 WHERE id = 3")
    later = module.dag.test()
    assert set(states(later).values()) == {"success"}
    assert xcom(later, f"{source.table}.extract")["manifest"]["shape"] == "log"
    published, now = amounts(hook, source)
    assert published == now
    assert [v.version for v in versions(hook, source.table)] == [1, 2]


def test_by_default_a_widened_decimal_is_refused_before_the_full_read_reads_naming_the_policy(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
    capfd: pytest.CaptureFixture[str],
) -> None:
    source = log_source
    module, hook, conf = widened(source, airflow_home, tmp_path, monkeypatch, None)
    before = kept(hook, source.table)
    module, _ = write_group_dag(
        airflow_home,
        tmp_path,
        monkeypatch,
        source.config(columns=WIDER),
        [log_contract(source.table)],
    )
    capfd.readouterr()
    run = states(module.dag.test(run_conf=json.loads(conf)))
    logged = capfd.readouterr().out
    task = f"{source.table}.%s"
    assert run[task % "extract"] == "failed" and run[task % "gate"] != "failed"
    assert run[task % "publish"] != "success"
    assert "amount widened: decimal(12,2) -> decimal(14,2): refused (data_type freeze)" in logged
    assert "so nothing was read" in logged and "relation_changed" not in logged
    assert kept(hook, source.table) == before
