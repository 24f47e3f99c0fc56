"""Pipelines from contract files: the example folder as DAGs, run end to end on SQLite,
PostgreSQL and MariaDB, and a broken contract file shown as an import error naming it while the
others load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from example_runs import EXAMPLES, Databases, asset_events, load_example, now, states, write_dag

from dogana_core import Shape

pytestmark = pytest.mark.airflow

CONTRACTS = EXAMPLES / "contracts"

# The shop database the example contracts describe, with a few rows in each table.
SOURCE = {
    "customers": "customer_id BIGINT PRIMARY KEY, name TEXT, country TEXT",
    "regions": "region_code VARCHAR(16) PRIMARY KEY, label TEXT",
    "products": "product_id BIGINT PRIMARY KEY, title TEXT, price_cents BIGINT, "
    "updated_at TIMESTAMPTZ NOT NULL",
    "payments": "payment_id BIGINT PRIMARY KEY, order_id BIGINT, amount_cents BIGINT, "
    "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL",
    "stock_levels": "product_id BIGINT, warehouse VARCHAR(16), quantity BIGINT, "
    "PRIMARY KEY (warehouse, product_id)",
    "page_views": "path TEXT, visitor TEXT, viewed_at TIMESTAMPTZ NOT NULL",
    "invoices": "invoice_id BIGINT PRIMARY KEY, customer_id BIGINT, "
    "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL",
    "invoice_lines": "line_id BIGINT PRIMARY KEY, invoice_id BIGINT, amount_cents BIGINT",
    "orders": "order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
    "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL",
    "suppliers": "supplier_id BIGINT PRIMARY KEY, name TEXT",
    "audit_log": "action TEXT, logged_at TIMESTAMPTZ NOT NULL",
}


def fill_source(databases: Databases) -> dict[str, int]:
    """The source's tables, and how many live rows each holds."""
    t = now()
    rows = {
        "customers": [(1, "Ada", "IT"), (2, "Bo", "SE")],
        "regions": [("EU", "Europe"), ("NA", "North America")],
        "products": [(1, "pen", 150, t), (2, "ink", 900, t)],
        "payments": [(1, 1, 1500, t, False), (2, 1, 700, t, True)],
        "stock_levels": [(1, "north", 10), (1, "south", 4), (2, "north", 0)],
        "page_views": [("/", "v1", t), ("/", "v1", t)],  # keyless: two equal rows, two views
        "invoices": [(1, 1, t, False), (2, 2, t, False)],
        "invoice_lines": [(1, 1, 500), (2, 1, 250), (3, 2, 100)],
        "orders": [(1, "Ada", 1500, t, False)],
        "suppliers": [(1, "Paper Co")],
        "audit_log": [("login", t)],
    }
    for table, columns in SOURCE.items():
        databases.create(f"CREATE TABLE {table} ({columns})")
        marks = ", ".join("?" for _ in rows[table][0])
        databases.source(f"INSERT INTO {table} VALUES ({marks})", *rows[table])
    live = {table: len(found) for table, found in rows.items()}
    live["payments"] -= 1  # soft-deleted: never published
    return live


def test_the_example_contract_folder_delivers_every_table_with_its_own_asset_event(
    databases: Databases, airflow_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten files, eleven tables: every DAG runs plan, extract, gate and publish; the published
    tables hold the source's live rows (soft-deleted payments left out, both page views kept),
    the billing group is exact at one instant, and each table's Asset names its own table."""
    monkeypatch.setenv("DOGANA_CONTRACTS_FOLDER", str(CONTRACTS))
    live = fill_source(databases)
    load_example(airflow_home, "warehouse")  # dag.test() serializes from the DAGs folder
    bag = _bag(airflow_home / "dags" / "warehouse.py")
    assert bag.import_errors == {}
    assert len(bag.dag_ids) == 10
    for dag_id in sorted(bag.dag_ids):
        run = databases.run(bag.dags[dag_id])
        assert set(states(run).values()) == {"success"}, (dag_id, states(run))
    for table in SOURCE:
        with databases.hook.receiver.read(table) as snapshot:
            assert len(list(snapshot.rows)) == live[table], table
        # The last event: the session's other example tests publish orders and invoices too.
        extra = asset_events(f"dogana://dogana_default/{table}")[-1]
        assert extra["tables"] == [table]
        assert extra["publication_id"] == databases.hook.receiver.ledger(table).publication_id
    assert databases.claims(["invoices", "invoice_lines"]).exact_as_of is not None


def test_a_broken_contract_file_is_an_import_error_naming_it_while_the_others_load(
    airflow_home: Path, tmp_path: Path
) -> None:
    contracts, dags = tmp_path / "contracts", tmp_path / "dags"
    contracts.mkdir()
    dags.mkdir()
    for good in ("customers.odcs.yaml", "suppliers.json"):
        shutil.copyfile(CONTRACTS / good, contracts / good)
    (contracts / "unparsable.odcs.yaml").write_text("schema: [unclosed\n", encoding="utf-8")
    tombstones = (CONTRACTS / "payments.odcs.yaml").read_text(encoding="utf-8")
    (contracts / "no_flag.odcs.yaml").write_text(
        tombstones.replace("      - {property: doganaDeletedColumn, value: is_deleted}\n", ""),
        encoding="utf-8",
    )
    (contracts / "typo.odcs.yaml").write_text(
        (CONTRACTS / "regions.odcs.yaml").read_text(encoding="utf-8").replace("status:", "stat:"),
        encoding="utf-8",
    )
    (dags / "from_contracts.py").write_text(
        "# An Airflow DAG file (the dag-processor's safe mode looks for both words).\n"
        "from dogana_provider.contract_files import contract_dags\n"
        f"contract_dags({str(contracts)!r}, source_conn_id='src')\n",
        encoding="utf-8",
    )

    bag = _bag(dags)

    assert sorted(bag.dag_ids) == ["dogana_customers", "dogana_suppliers"]
    [(path, error)] = bag.import_errors.items()
    assert path.endswith("from_contracts.py")
    lines = error.splitlines()

    def line_of(name: str) -> str:
        [line] = [line for line in lines if f"{contracts / name}: " in line]
        return line

    assert len(lines) == 3
    assert "schema[0]: Contract.deleted_column: a tombstone shape needs a deleted column" in (
        line_of("no_flag.odcs.yaml")
    )
    assert "stat: Extra inputs are not permitted (ODCS v3)" in line_of("typo.odcs.yaml")
    assert "expected ',' or ']'" in line_of("unparsable.odcs.yaml")


def _bag(folder: Path):  # type: ignore[no-untyped-def]
    """The DAG files of a folder (or one file) as Airflow's dag-processor parses them."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(folder))


def test_contracts_in_folder_lists_each_file_a_group_as_a_list_and_refuses_a_broken_one(
    airflow_home: Path, tmp_path: Path
) -> None:
    from dogana_provider.contract_files import InvalidContractFile, contracts_in_folder

    for name in ("billing.odcs.yaml", "customers.odcs.yaml"):
        shutil.copyfile(CONTRACTS / name, tmp_path / name)
    billing, customers = contracts_in_folder.function(str(tmp_path))
    assert [item["table"] for item in billing] == ["invoices", "invoice_lines"]
    assert customers["table"] == "customers"

    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(InvalidContractFile, match=r"broken\.json"):
        contracts_in_folder.function(str(tmp_path))


@pytest.mark.parametrize(
    "databases", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_delivery_mapped_over_a_folder_gates_each_table_with_its_files_expectations(
    databases: Databases, airflow_home: Path, tmp_path: Path
) -> None:
    """contracts_in_folder with expectations_in_folder: each mapped gate runs its own file's
    expectations, so a file's block refuses its table's delivery while the others publish, and
    a table whose file declares none says none_declared."""
    from soft_deletes import orders_contract

    from dogana_core import Contract

    orders, suppliers = f"orders_{databases.uid}", f"suppliers_{databases.uid}"
    folder = tmp_path / "contracts"
    folder.mkdir()
    block = {"column_mapping": {"amount_cents": {"min": {"geq_to": 0, "on_violation": "block"}}}}
    (folder / "orders.json").write_text(
        json.dumps({"contracts": [orders_contract(orders).to_dict()], "expectations": block})
    )
    plain = Contract(suppliers, ("id",), {"full": Shape.complete()}, types={"id": "int"})
    (folder / "suppliers.json").write_text(plain.to_json())
    databases.activate([orders, suppliers])
    databases.create(
        f"CREATE TABLE {orders} (id BIGINT PRIMARY KEY, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, deleted BOOLEAN NOT NULL)"
    )
    databases.source(
        f"INSERT INTO {orders} VALUES (?, ?, ?, ?)", (1, 500, now(), False), (2, -5, now(), False)
    )
    databases.create(f"CREATE TABLE {suppliers} (id BIGINT PRIMARY KEY, name TEXT)")
    databases.source(f"INSERT INTO {suppliers} VALUES (?, ?)", (1, "Paper Co"))
    module = write_dag(
        airflow_home,
        f"folder_{databases.uid}",
        f"""
import datetime
from airflow.sdk import DAG
from dogana_provider.contract_files import contracts_in_folder, expectations_in_folder
from dogana_provider.task_groups.delivery import delivery_task_group

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
with DAG("folder_{databases.uid}", schedule=None, start_date=START, catchup=False) as dag:
    delivery_task_group.partial(
        source_conn_id="dogana_source",
        receiver_conn_id="dogana_default",
        expectations=expectations_in_folder({str(folder)!r}),
    ).expand(contract=contracts_in_folder({str(folder)!r}))
""",
    )

    databases.run(module.dag)

    (refused,) = databases.receipts(orders)
    assert refused.outcome == "rejected"
    assert [(c.name, c.detail) for c in refused.failed] == [
        ("amount_cents.min", "violated (block): min -5 (geq_to 0), 1 row")
    ]
    assert databases.hook.receiver.ledger(orders).publication_id is None
    (published,) = databases.receipts(suppliers)
    assert published.outcome == "accepted"
    assert [c.detail for c in published.checks if c.name == "expectations"] == ["none_declared"]
