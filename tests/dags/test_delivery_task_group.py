"""delivery_task_group: one call per table, a TaskGroup per table, mapped over contracts known
at run time; each table proven separately, a group read in one snapshot, each Asset its own
table's claims. On SQLite and PostgreSQL, a source and a receiver of each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from example_runs import Databases, asset_events, now, states, write_dag
from soft_deletes import orders_contract as contract

pytestmark = pytest.mark.airflow

ON_SQLITE_AND_POSTGRES = pytest.mark.parametrize(
    "databases", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


def source_tables(databases: Databases, tables: list[str]) -> None:
    """Each table in the source, holding as many rows as its position in the list, plus one;
    each activated where the receiver requires it."""
    databases.activate(tables)
    for number, table in enumerate(tables):
        databases.create(
            f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, name TEXT, "
            "updated_at TIMESTAMPTZ NOT NULL, deleted BOOLEAN NOT NULL)"
        )
        rows = [(i, f"{table} {i}", now(), False) for i in range(number + 1)]
        databases.source(f"INSERT INTO {table} VALUES (?, ?, ?, ?)", *rows)


def dag_file(databases: Databases, airflow_home: Path, body: str) -> Any:
    """A DAG file with the contracts at hand as CONTRACTS (table -> wire dict)."""
    name = f"task_groups_{databases.uid}"
    header = f"""
import datetime
from airflow.sdk import DAG, TaskGroup, task
from dogana_core import Contract
from dogana_provider.task_groups.delivery import delivery_task_group

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
dag = DAG({name!r}, schedule=None, start_date=START, catchup=False)
SOURCE, RECEIVER = "dogana_source", "dogana_default"
"""
    return write_dag(airflow_home, name, header + body)


def assert_own_claims(databases: Databases, tables: list[str]) -> None:
    """Each table published whole, and its Asset's one event naming it with its own head."""
    for number, table in enumerate(tables):
        assert len(databases.published(table, ["id"])) == number + 1
        [extra] = asset_events(f"dogana://dogana_default/{table}")
        ledger = databases.hook.receiver.ledger(table)
        assert extra["tables"] == [table]
        assert extra["publication_id"] == ledger.publication_id
        claims = databases.claims(table)
        assert extra["complete_as_of"] == claims.complete_as_of.isoformat()


@ON_SQLITE_AND_POSTGRES
def test_a_mapped_pipeline_over_eight_contracts_publishes_each_with_its_own_asset_event(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"t{i}_{databases.uid}" for i in range(8)]
    source_tables(databases, tables)
    contracts = [contract(table).to_dict() for table in tables]
    module = dag_file(
        databases,
        airflow_home,
        f"""
@task
def contracts():  # known only at run time: here a list the task returns
    return {contracts!r}

with dag:
    delivery_task_group.partial(
        source_conn_id=SOURCE, receiver_conn_id=RECEIVER, max_active_tis_per_dag=2
    ).expand(contract=contracts())
""",
    )
    run = databases.run(module.dag)
    assert set(states(run).values()) == {"success"}
    assert module.dag.get_task("deliveries.extract").max_active_tis_per_dag == 2
    assert_own_claims(databases, tables)


@ON_SQLITE_AND_POSTGRES
def test_a_group_of_two_tables_mapped_beside_single_tables_is_read_in_one_snapshot(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"single_{databases.uid}", f"invoices_{databases.uid}", f"lines_{databases.uid}"]
    source_tables(databases, tables)
    single, *group = [contract(table).to_dict() for table in tables]
    module = dag_file(
        databases,
        airflow_home,
        f"""
@task
def contracts():
    return [{single!r}, {group!r}]

with dag:
    delivery_task_group.partial(
        source_conn_id=SOURCE, receiver_conn_id=RECEIVER, exact_at="{{{{ dag_run.run_after }}}}"
    ).expand(contract=contracts())
""",
    )
    run = databases.run(module.dag)
    assert set(states(run).values()) == {"success"}
    assert_own_claims(databases, tables)
    receipts = [databases.receipts(table)[-1] for table in tables[1:]]
    [produced_at] = {receipt.manifest.produced_at for receipt in receipts}  # one snapshot
    assert databases.claims(tables[1:]).exact_as_of == produced_at


@ON_SQLITE_AND_POSTGRES
def test_a_delivery_task_group_inside_another_task_group_is_named_after_its_table(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"orders_{databases.uid}", f"invoices_{databases.uid}", f"lines_{databases.uid}"]
    source_tables(databases, tables)
    orders, invoices, lines = [contract(table).to_dict() for table in tables]
    module = dag_file(
        databases,
        airflow_home,
        f"""
with dag, TaskGroup("warehouse"):
    orders = delivery_task_group(
        Contract.from_dict({orders!r}), source_conn_id=SOURCE, receiver_conn_id=RECEIVER
    )
    invoices = delivery_task_group(
        group=[Contract.from_dict({invoices!r}), Contract.from_dict({lines!r})],
        source_conn_id=SOURCE,
        receiver_conn_id=RECEIVER,
    )

    @task
    def report():
        return "both published"

    [orders, invoices] >> report()
""",
    )
    run = databases.run(module.dag)
    assert states(run) == {
        **{f"warehouse.{tables[0]}.{step}": "success" for step in STEPS},
        **{f"warehouse.{tables[1]}__{tables[2]}.{step}": "success" for step in STEPS},
        "warehouse.report": "success",
    }
    assert_own_claims(databases, tables)


STEPS = ("plan", "extract", "gate", "publish")


@ON_SQLITE_AND_POSTGRES
def test_operators_wired_by_hand_in_a_task_group_find_their_upstream_under_any_task_id(
    databases: Databases, airflow_home: Path
) -> None:
    [table] = tables = [f"orders_{databases.uid}"]
    source_tables(databases, tables)
    wire = contract(table).to_dict()
    module = dag_file(
        databases,
        airflow_home,
        f"""
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

with dag, TaskGroup("nightly"):
    PlanDeliveryOperator(task_id="decide", contract={wire!r}) >> ExtractOperator(
        task_id="read", source_conn_id=SOURCE, contract={wire!r}
    ) >> GateOperator(task_id="check") >> PublishOperator(task_id="go", table={table!r})
""",
    )
    run = databases.run(module.dag)
    assert set(states(run).values()) == {"success"}
    assert_own_claims(databases, tables)


@ON_SQLITE_AND_POSTGRES
def test_a_mapped_pipeline_delivers_the_contracts_the_receiver_has_registered(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"known_{databases.uid}", f"also_{databases.uid}"]
    source_tables(databases, tables)
    for table in tables:
        databases.hook.receiver.register(contract(table))
    module = dag_file(
        databases,
        airflow_home,
        """
from dogana_provider.task_groups.delivery import registered_contracts

with dag:
    delivery_task_group.partial(source_conn_id=SOURCE, receiver_conn_id=RECEIVER).expand(
        contract=registered_contracts(RECEIVER)
    )
""",
    )
    run = databases.run(module.dag)
    assert set(states(run).values()) == {"success"}
    assert_own_claims(databases, tables)


def test_the_quickstart_in_its_short_form_is_the_same_four_tasks_in_a_group(
    airflow_home: Path,
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    examples = Path(__file__).resolve().parents[2] / "examples"
    long, short = (
        DagBag(dag_folder=str(examples / name)) for name in ("quickstart.py", "quickstart_short.py")
    )
    assert long.import_errors == short.import_errors == {}
    [written_out] = long.dags.values()
    [grouped] = short.dags.values()
    for task in written_out.tasks:
        in_group = grouped.get_task(f"customers.{task.task_id}")
        assert in_group.downstream_task_ids == {f"customers.{d}" for d in task.downstream_task_ids}
    assert len(grouped.tasks) == len(written_out.tasks) == 4
