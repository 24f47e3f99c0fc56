"""Schema changes under a declared policy, on SQLite, PostgreSQL and MariaDB: each change is
checked against the held version before a row is read, its outcome named, and every refusal
leaves published rows, ledger, receipts and versions as they were."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException
from schema_databases import Database
from schema_pipeline import Pipeline

from dogana_core.gate import Outcome as Decided
from dogana_core.gate import Receipt
from dogana_provider.schema.policy import Kind, Outcome

pytestmark = pytest.mark.airflow

ROWS = [(1, "one", Decimal("1.50")), (2, "two", Decimal("2.25"))]
COLUMNS = [("id", "int NOT NULL"), ("name", "str"), ("amount", "decimal")]


@pytest.fixture
def pipeline(
    database: Database, uid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Pipeline:
    found = Pipeline(database, uid, tmp_path, monkeypatch)
    found.create(COLUMNS, ROWS)
    return found


def refused(pipeline: Pipeline, policy: object = None) -> str:
    """Deliver, expecting the extract to fail before reading; the message, and nothing changed."""
    before = pipeline.state()
    with pytest.raises(AirflowFailException) as failed:
        pipeline.deliver(policy)
    assert pipeline.state() == before
    return str(failed.value)


def changes(pipeline: Pipeline) -> list[tuple[str, str, str]]:
    """The latest version's changes: (kind, column, outcome)."""
    return [
        (str(j.change.kind), j.change.column, str(j.outcome))
        for j in pipeline.versions()[-1].judged
    ]


def test_the_first_delivery_records_the_first_version(pipeline: Pipeline) -> None:
    assert pipeline.deliver().outcome is Decided.ACCEPTED
    [first] = pipeline.versions()
    assert first.version == 1
    assert [(c.name, c.type, c.nullable) for c in first.columns] == [
        ("id", "int", False),
        ("name", "str", True),
        ("amount", "decimal(10,2)", True),
    ]
    assert first.publication_id == pipeline.hook.receiver.ledger(pipeline.table).publication_id
    assert changes(pipeline) == [(Kind.FIRST, pipeline.table, Outcome.RECORDED)]


def test_by_default_a_new_column_is_a_new_version_and_published_nullable(
    pipeline: Pipeline,
) -> None:
    pipeline.deliver()
    pipeline.create([*COLUMNS, ("note", "str")], [(*row, "n") for row in ROWS])
    assert pipeline.deliver().outcome is Decided.ACCEPTED
    assert [v.version for v in pipeline.versions()] == [1, 2]
    assert changes(pipeline) == [(Kind.ADDED, "note", Outcome.RECORDED)]
    assert "note" in pipeline.published_types()


def test_by_default_a_dropped_column_is_a_new_version_and_null_in_new_rows(
    pipeline: Pipeline,
) -> None:
    pipeline.deliver()
    pipeline.create(COLUMNS[:2], [row[:2] for row in ROWS])
    assert pipeline.deliver().outcome is Decided.ACCEPTED
    assert changes(pipeline) == [(Kind.DROPPED, "amount", Outcome.RECORDED)]
    with pipeline.hook.receiver.read(pipeline.table) as read:
        amounts = [row[read.columns.index("amount")] for row in read.rows]
    assert amounts == [None, None]


def test_by_default_a_retyped_column_fails_before_a_row_is_read(pipeline: Pipeline) -> None:
    pipeline.deliver()
    pipeline.create([("id", "int NOT NULL"), ("name", "int"), ("amount", "decimal")], [(1, 7, 1)])
    message = refused(pipeline)
    assert "name retyped: str -> int" in message
    assert "data_type freeze" in message


def test_freeze_refuses_a_rename_naming_both_columns(pipeline: Pipeline) -> None:
    pipeline.deliver("freeze")
    pipeline.create([COLUMNS[0], ("title", "str"), COLUMNS[2]], ROWS)
    message = refused(pipeline)
    assert "name dropped (was str): refused (columns freeze)" in message
    assert "title added (str): refused (columns freeze)" in message


def test_freeze_refuses_a_tightened_nullability(pipeline: Pipeline) -> None:
    pipeline.deliver("freeze")
    pipeline.create([COLUMNS[0], ("name", "str NOT NULL"), COLUMNS[2]], ROWS)
    message = refused(pipeline)
    assert "name nullable -> not null: refused (columns freeze)" in message


def test_evolve_records_a_tightened_nullability(pipeline: Pipeline) -> None:
    pipeline.deliver("evolve")
    pipeline.create([COLUMNS[0], ("name", "str NOT NULL"), COLUMNS[2]], ROWS)
    assert pipeline.deliver().outcome is Decided.ACCEPTED
    assert (Kind.NOT_NULL, "name", Outcome.RECORDED) in changes(pipeline)


def test_evolve_widens_the_published_column_in_the_publication(pipeline: Pipeline) -> None:
    pipeline.deliver("evolve")
    before = pipeline.published_types()["amount"]
    wider = [(*row[:2], Decimal("123456789012.25")) for row in ROWS]
    pipeline.create([*COLUMNS[:2], ("amount", "wider decimal")], wider)
    assert pipeline.deliver("evolve").outcome is Decided.ACCEPTED
    assert changes(pipeline) == [(Kind.WIDENED, "amount", Outcome.APPLIED)]
    after = pipeline.published_types()["amount"]
    assert "10,2" in before and "14,2" in after
    with pipeline.hook.receiver.read(pipeline.table) as read:
        amounts = sorted(Decimal(str(row[read.columns.index("amount")])) for row in read.rows)
    assert amounts == [Decimal("123456789012.25")] * 2


def test_evolve_reads_a_narrowed_column_as_the_published_type(pipeline: Pipeline) -> None:
    pipeline.deliver("evolve")
    pipeline.create([*COLUMNS[:2], ("amount", "narrower decimal")], ROWS)
    for _ in range(2):  # and again: the narrowing is not a version, each read is judged alike
        assert pipeline.deliver("evolve").outcome is Decided.ACCEPTED
    assert [v.version for v in pipeline.versions()] == [1]
    assert "10,2" in pipeline.published_types()["amount"]


def test_evolve_still_refuses_a_retyped_column(pipeline: Pipeline) -> None:
    pipeline.deliver("evolve")
    pipeline.create([("id", "int NOT NULL"), ("name", "date"), ("amount", "decimal")], [])
    assert "name retyped: str -> date: refused (data_type evolve)" in refused(pipeline, "evolve")


def test_freeze_refuses_a_widening(pipeline: Pipeline) -> None:
    pipeline.deliver({"data_type": "freeze"})
    pipeline.create([*COLUMNS[:2], ("amount", "wider decimal")], ROWS)
    message = refused(pipeline, "evolve")
    assert "amount widened: decimal(10,2) -> decimal(14,2): refused (data_type freeze)" in message


def test_discard_value_leaves_a_new_column_unread(pipeline: Pipeline) -> None:
    pipeline.deliver("discard_value")
    pipeline.create([*COLUMNS, ("secret", "str")], [(*row, "s") for row in ROWS])
    assert pipeline.deliver("discard_value").outcome is Decided.ACCEPTED
    assert [v.version for v in pipeline.versions()] == [1]
    assert "secret" not in pipeline.published_types()


def test_discard_row_refuses_a_whole_columns_change(pipeline: Pipeline) -> None:
    pipeline.deliver("discard_row")
    pipeline.create([*COLUMNS, ("extra", "str")], [(*row, "x") for row in ROWS])
    assert "extra added (str): refused (columns discard_row)" in refused(pipeline, "discard_row")


def test_a_producer_cannot_widen_its_own_policy(pipeline: Pipeline) -> None:
    """The held version's policy judges a change; a policy declared with it governs the next."""
    pipeline.deliver("freeze")
    pipeline.create([*COLUMNS, ("note", "str")], [(*row, "n") for row in ROWS])
    assert "note added (str): refused (columns freeze)" in refused(pipeline, "evolve")
    pipeline.create(COLUMNS, ROWS)
    assert pipeline.deliver("evolve").outcome is Decided.ACCEPTED  # the policy alone changes
    assert changes(pipeline) == [
        (Kind.POLICY, "tables evolve, columns evolve, data_type evolve", Outcome.RECORDED)
    ]
    pipeline.create([*COLUMNS, ("note", "str")], [(*row, "n") for row in ROWS])
    assert pipeline.deliver("evolve").outcome is Decided.ACCEPTED
    assert [v.version for v in pipeline.versions()] == [1, 2, 3]


def test_tables_freeze_refuses_a_table_without_a_version(pipeline: Pipeline) -> None:
    with pytest.raises(AirflowFailException, match="tables freeze"):
        pipeline.deliver({"tables": "freeze"})
    assert pipeline.hook.receiver.receipts(pipeline.table) == []


def test_dogana_schema_prints_each_version_and_what_changed(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dogana_provider.cli import main as cli

    monkeypatch.setenv("_AIRFLOW_PROCESS_CONTEXT", "server")  # what the command sets, undone
    pipeline.deliver({"data_type": "evolve"})
    pipeline.create([*COLUMNS[:2], ("amount", "wider decimal"), ("note", "str")], [])
    pipeline.deliver()
    capsys.readouterr()
    assert cli.main(["schema", pipeline.receiver_conn, pipeline.table]) == 0
    printed = capsys.readouterr().out
    publication = pipeline.hook.receiver.ledger(pipeline.table).publication_id
    assert f"table {pipeline.table}, 2 schema versions" in printed
    assert "amount widened: decimal(10,2) -> decimal(14,2): applied (data_type evolve)" in printed
    assert "note added (str): recorded (columns evolve)" in printed
    assert "policy now tables evolve, columns evolve, data_type freeze" in printed
    assert publication[:12] in printed
    print(printed)  # the sample the note quotes
    assert cli.main(["schema", pipeline.receiver_conn, "no_such_table"]) == 1


# Per-row conformance at the gate (schema/conformance.py) ------------------------------------------

NOT_NULL_NAME = [COLUMNS[0], ("name", "str NOT NULL"), COLUMNS[2]]
A_NULL_NAME = [*ROWS, (3, None, Decimal("3.00"))]


def conformance(receipt: Receipt) -> str:
    [found] = [c for c in receipt.checks if c.name == "schema_conformance"]
    return f"{'passed' if found.passed else 'failed'}: {found.detail}"


def test_discard_row_leaves_out_the_rows_null_where_the_version_says_not_null(
    pipeline: Pipeline,
) -> None:
    pipeline.create(NOT_NULL_NAME, ROWS)
    pipeline.deliver("discard_row")
    pipeline.create(COLUMNS, A_NULL_NAME)  # name made nullable: read, the version keeps not null
    receipt = pipeline.deliver("discard_row")
    assert receipt.outcome is Decided.ACCEPTED
    assert conformance(receipt).startswith("passed: left out 1 row null where version 1")
    with pipeline.hook.receiver.read(pipeline.table) as read:
        assert sorted(row[0] for row in read.rows) == [1, 2]
    assert [v.version for v in pipeline.versions()] == [1]
    pipeline.hook.receiver.verify(pipeline.table)  # 3 delivered, 1 left out, 2 published


def test_freeze_refuses_at_the_gate_a_row_null_where_the_version_says_not_null(
    pipeline: Pipeline,
) -> None:
    pipeline.create(NOT_NULL_NAME, ROWS)
    pipeline.deliver("freeze")
    pipeline.create(COLUMNS, A_NULL_NAME)
    rows, ledger, *_ = pipeline.state()
    receipt = pipeline.deliver(checked=False)  # an extract that does not know the receiver
    assert receipt.outcome is Decided.REJECTED
    assert "(name: 1 row null); refused (columns freeze)" in conformance(receipt)
    assert pipeline.state()[:2] == (rows, ledger)


def test_evolve_publishes_a_row_null_where_the_version_says_not_null_and_counts_it(
    pipeline: Pipeline,
) -> None:
    pipeline.create(NOT_NULL_NAME, ROWS)
    pipeline.deliver("evolve")
    pipeline.create(COLUMNS, A_NULL_NAME)
    receipt = pipeline.deliver(checked=False)
    assert receipt.outcome is Decided.ACCEPTED
    assert conformance(receipt).startswith("passed: published 1 row null where version 1")


# What the facet shows is the catalog's, discovered on every database above: one is enough here.
@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_source_schema_change_is_a_change_of_its_openlineage_schema_facet(
    database: Database, uid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = Pipeline(database, uid, tmp_path, monkeypatch)
    pipeline.create(COLUMNS, ROWS)
    fields = []
    for columns in (COLUMNS, [*COLUMNS, ("note", "str")]):
        pipeline.create(columns, [])
        extract = pipeline.extract_operator()
        extract.execute(pipeline.context())
        [source] = extract.get_openlineage_facets_on_complete(None).inputs
        fields.append([(f.name, f.type) for f in source.facets["schema"].fields])
        pipeline.receive_last()
    assert fields[1] == [*fields[0], ("note", "text")]
