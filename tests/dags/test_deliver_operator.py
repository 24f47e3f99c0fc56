"""DeliverOperator: a delivery, or a batch of them, plan to publication in one task; each table
published as the four tasks publish it, with its own Asset event, and the record of each step
kept in the task's XCom. On SQLite (the four operators' own tests cover every database)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from example_runs import Databases, states, write_dag
from soft_deletes import orders_contract as contract
from test_delivery_task_group import assert_own_claims, source_tables

pytestmark = pytest.mark.airflow

ON_SQLITE = pytest.mark.parametrize("databases", ["sqlite"], indirect=True)


def dag_with(databases: Databases, airflow_home: Path, body: str) -> object:
    name = f"deliver_{databases.uid}"
    header = f"""
import datetime
from airflow.sdk import DAG, task
from dogana_provider.operators.deliver import DeliverOperator, batches
from dogana_provider.operators.publish import dogana_alias

dag = DAG({name!r}, schedule=None,
          start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
SOURCE, RECEIVER = "dogana_source", "dogana_default"
"""
    return write_dag(airflow_home, name, header + body)


def one_deliver(databases: Databases, airflow_home: Path, **arguments: Any) -> object:
    """A DAG of one DeliverOperator from the source to the receiver, given these arguments."""
    given = "".join(f", {name}={value!r}" for name, value in arguments.items())
    return dag_with(
        databases,
        airflow_home,
        f"""
with dag:
    DeliverOperator(task_id="deliver", source_conn_id=SOURCE, receiver_conn_id=RECEIVER{given})
""",
    )


def mapped_xcom(run: Any, task_id: str) -> list[Any]:
    """What each mapped instance of task_id returned, in map index order."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    query = XComModel.get_many(
        run_id=run.run_id, key="return_value", dag_ids=run.dag_id, task_ids=task_id
    )
    with create_session() as session:
        rows = sorted(session.scalars(query), key=lambda row: row.map_index)
        return [XComModel.deserialize_value(row) for row in rows]


@ON_SQLITE
def contract_folder(databases: Databases, tables: list[str], home: Path) -> Path:
    """The source tables, and a folder of a contract file each, as a DAG author keeps them."""
    source_tables(databases, tables)
    folder = home / "contracts"
    folder.mkdir()
    for table in tables:
        (folder / f"{table}.json").write_text(contract(table).to_json(), encoding="utf-8")
    return folder


def test_batches_of_tables_in_one_task_each_publish_each_table_with_its_own_asset_event(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"b{i}_{databases.uid}" for i in range(3)]
    source_tables(databases, tables)
    contracts = [contract(table).to_dict() for table in tables]
    module = dag_with(
        databases,
        airflow_home,
        f"""
@task
def contracts():
    return {contracts!r}

with dag:
    DeliverOperator.partial(
        task_id="deliver", source_conn_id=SOURCE, receiver_conn_id=RECEIVER,
        outlets=[dogana_alias(RECEIVER)],
    ).expand(contracts=batches(contracts(), 2))
""",
    )
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "success"
    assert_own_claims(databases, tables)
    records = [record for batch in mapped_xcom(run, "deliver") for record in batch]
    assert len(records) == len(tables)  # one record a delivery, each step's output in it
    for record, table in zip(records, tables, strict=True):
        assert record["request"]["table"] == table
        assert record["delivery"]["manifest"]["table"] == table
        assert record["receipt"]["outcome"] == "accepted"
        receipt = databases.receipts(table)[-1]
        assert record["receipt"]["publication_id"] == receipt.publication_id


@ON_SQLITE
@pytest.mark.parametrize(
    "batched",
    ["contracts_in_folder(FOLDER, tasks=2)", "batches(contracts_in_folder(FOLDER), tasks=2)"],
)
def test_a_folder_split_for_two_tasks_delivers_each_table_in_one_of_two_with_its_own_event(
    databases: Databases, airflow_home: Path, tmp_path: Path, batched: str
) -> None:
    """tasks=2: the folder's five tables in two batches, in order, as two mapped tasks; each
    table its own delivery, receipt and Asset event, whether the list's task makes the batches
    or a batches task after it."""
    tables = [f"s{i}_{databases.uid}" for i in range(5)]
    folder = contract_folder(databases, tables, tmp_path)
    module = dag_with(
        databases,
        airflow_home,
        f"""
from dogana_provider.contract_files import contracts_in_folder

FOLDER = {str(folder)!r}

with dag:
    DeliverOperator.partial(
        task_id="deliver", source_conn_id=SOURCE, receiver_conn_id=RECEIVER,
        outlets=[dogana_alias(RECEIVER)],
    ).expand(contracts={batched})
""",
    )
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "success"
    assert_own_claims(databases, tables)
    mapped = mapped_xcom(run, "deliver")
    assert [[record["request"]["table"] for record in batch] for batch in mapped] == [
        tables[:2],
        tables[2:],
    ]
    for record in (record for batch in mapped for record in batch):
        (receipt,) = databases.receipts(record["request"]["table"])
        assert record["receipt"]["publication_id"] == receipt.publication_id


@ON_SQLITE
def test_a_folders_batches_mapped_over_contract_are_refused_naming_contracts_not_read_as_groups(
    databases: Databases,
    airflow_home: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """contract= reads a list as a group read together: contracts_in_folder(..., tasks=2)'s
    batches mapped over it instead of contracts= would each be delivered as one group (one
    snapshot, one commit, all or nothing), not as the independent deliveries meant. Each batch
    is refused instead, before anything is delivered, its log naming contracts=."""
    tables = [f"c{i}_{databases.uid}" for i in range(3)]
    folder = contract_folder(databases, tables, tmp_path)
    databases.hook.receiver.register(contract(f"other_{databases.uid}"))  # its store exists
    module = dag_with(
        databases,
        airflow_home,
        f"""
from dogana_provider.contract_files import contracts_in_folder

with dag:
    DeliverOperator.partial(
        task_id="deliver", source_conn_id=SOURCE, receiver_conn_id=RECEIVER,
        outlets=[dogana_alias(RECEIVER)],
    ).expand(contract=contracts_in_folder({str(folder)!r}, tasks=2))
""",
    )
    capfd.readouterr()
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    logged = capfd.readouterr()
    assert states(run)["deliver"] == "failed"
    for table in tables:
        assert databases.receipts(table) == []
    assert f"a batch of 2 deliveries ({tables[1]}, {tables[2]})" in logged.out + logged.err
    assert ".expand(contracts=...)" in logged.out + logged.err


def test_a_batch_given_where_a_contract_is_taken_is_refused_naming_each_delivery() -> None:
    from dogana_provider.operators.arguments import contract_of, group_of
    from dogana_provider.operators.deliver import marked_batches

    group = [contract("d").to_dict(), contract("e").to_dict()]
    deliveries = [contract("a").to_dict(), contract("b").to_dict(), group]
    first, second = marked_batches(deliveries, tasks=2)
    assert group_of(second, None) is None  # a batch is never a group
    with pytest.raises(ValueError, match=r"^contract: a batch of 2 deliveries \(b, \(d, e\)\)"):
        contract_of(second)
    with pytest.raises(ValueError, match=r"expand\(contracts=\.\.\.\)"):
        contract_of(first)
    assert [contract_of(item).table for item in first["batch"]] == ["a"]


def test_batches_for_tasks_keep_the_order_differ_by_one_at_most_and_are_never_empty() -> None:
    from dogana_provider.operators.deliver import in_batches

    assert in_batches(range(7), tasks=3) == [[0, 1], [2, 3], [4, 5, 6]]
    assert in_batches(range(2), tasks=4) == [[0], [1]]
    assert in_batches([], tasks=2) == []
    assert in_batches(range(5), size=2) == [[0, 1], [2, 3], [4]]
    for count in range(1, 40):
        for tasks in range(1, 9):
            split = in_batches(range(count), tasks=tasks)
            assert [item for batch in split for item in batch] == list(range(count))
            assert len(split) == min(tasks, count)
            assert max(map(len, split)) - min(map(len, split)) <= 1
    for wrong in ({}, {"size": 2, "tasks": 2}, {"tasks": 0}, {"size": 0}):
        with pytest.raises(ValueError, match="batches"):
            in_batches(range(3), **wrong)


@ON_SQLITE
def test_a_failed_delivery_of_a_batch_fails_the_task_naming_it_after_the_others_published(
    databases: Databases, airflow_home: Path
) -> None:
    tables = [f"ok{i}_{databases.uid}" for i in range(2)]
    source_tables(databases, tables)
    missing = f"missing_{databases.uid}"
    databases.activate([missing])
    batch = [contract(table).to_dict() for table in (tables[0], missing, tables[1])]
    module = one_deliver(databases, airflow_home, contracts=batch)
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "failed"
    for number, table in enumerate(tables):  # published; their events go with the failed task
        assert len(databases.published(table, ["id"])) == number + 1
        assert [r.outcome.value for r in databases.receipts(table)] == ["accepted"]
    assert databases.receipts(missing) == []


@ON_SQLITE
def test_the_steps_of_a_delivery_run_as_the_task_runner_runs_an_operator_with_no_warning(
    databases: Databases,
    airflow_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A real worker is not in unit test mode, where Airflow's safeguard against an operator's
    execute() called by hand warns: each step would say it "cannot be called outside of the
    Task Runner", four times a delivery."""
    from airflow.sdk.bases.operator import ExecutorSafeguard

    monkeypatch.setattr(ExecutorSafeguard, "test_mode", False)
    table = f"one_{databases.uid}"
    source_tables(databases, [table])
    module = one_deliver(databases, airflow_home, contract=contract(table).to_dict())
    capfd.readouterr()
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "success"
    logged = capfd.readouterr()
    assert "cannot be called outside of the Task Runner" not in logged.out + logged.err


@ON_SQLITE
def test_a_batch_builds_one_receiver_for_every_step_of_every_delivery(
    databases: Databases, airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step's DoganaHook would build its own receiver, its own connections and catalog
    reads with it, four or more a delivery: a batch builds one and lends it to them all."""
    from dogana_provider.receiver.receiver import Receiver

    built: list[Receiver] = []
    from_hook = Receiver.from_hook.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Receiver], hook: Any, **options: Any) -> Receiver:
        built.append(from_hook(cls, hook, **options))
        return built[-1]

    monkeypatch.setattr(Receiver, "from_hook", classmethod(counted))
    tables = [f"r{i}_{databases.uid}" for i in range(2)]
    source_tables(databases, tables)
    batch = [contract(table).to_dict() for table in tables]
    module = one_deliver(databases, airflow_home, contracts=batch)
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "success"
    assert len(built) == 1


@ON_SQLITE
def test_the_heap_before_a_batch_is_left_out_of_the_collectors_passes_until_its_end(
    databases: Databases, airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full garbage collection walks the task process's whole heap (Airflow, the provider,
    pyarrow) and is due every few tables' rows: the batch freezes that heap while it delivers,
    and gives it back to the collector after."""
    import gc

    from dogana_provider.receiver.receiver import Receiver

    frozen: list[int] = []
    from_hook = Receiver.from_hook.__func__  # type: ignore[attr-defined]

    def noted(cls: type[Receiver], hook: Any, **options: Any) -> Receiver:
        frozen.append(gc.get_freeze_count())
        return from_hook(cls, hook, **options)  # type: ignore[no-any-return]

    monkeypatch.setattr(Receiver, "from_hook", classmethod(noted))
    table = f"h_{databases.uid}"
    source_tables(databases, [table])
    module = one_deliver(databases, airflow_home, contracts=[contract(table).to_dict()])
    before = gc.get_freeze_count()
    run = databases.run(module.dag)  # type: ignore[attr-defined]
    assert states(run)["deliver"] == "success"
    assert frozen and all(count > before for count in frozen)
    assert gc.get_freeze_count() == before
