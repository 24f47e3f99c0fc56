"""PlanDeliveryOperator: a request when the claims fall short, a skip when they suffice, and a
group planned together so that one snapshot makes every table exact at one instant."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from airflow_runs import rendered
from delivery_dags import (
    ReceiverConnection,
    Source,
    asset_events,
    orders_contract,
    pipeline,
    published,
    sqlite_connection,
    states,
    write_dag,
    xcom,
)

from dogana_core import Receipt
from dogana_core.claims import NO_LIMIT
from dogana_core.group import Group
from dogana_core.planner import ExtractionRequest
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.publish import dogana_asset

pytestmark = pytest.mark.airflow


def test_plan_skips_the_delivery_when_the_claims_suffice(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """At most an hour old: the first run delivers, the second finds the claims fresh enough
    and skips, and extract, gate and publish skip with it."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    module = write_dag(
        airflow_home,
        f"plan_skip_{uid}",
        pipeline(
            conn_id,
            table,
            contract_path,
            source,
            tmp_path,
            plan="max_age=datetime.timedelta(hours=1),",
        ),
    )
    first = module.dag.test()
    assert set(states(first).values()) == {"success"}
    request = ExtractionRequest.from_dict(xcom(first, "plan"))
    assert (request.table, request.shape) == (table, "full")

    source.put(2, "two")  # the source moves on, but an hour-old read is fresh enough
    second = module.dag.test()
    assert states(second) == dict.fromkeys(("plan", "extract", "gate", "publish"), "skipped")
    hook = DoganaHook(conn_id)
    assert len(hook.receiver.receipts(table)) == 1
    assert published(hook, table) == {1: "one"}
    assert len(asset_events(dogana_asset(table, conn_id).uri)) == 1


def test_plan_refuses_a_contract_that_changes_a_fixed_field(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A table with history keeps its key: the plan task fails naming the rule, and nothing
    downstream runs."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract = orders_contract(table)
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(contract.to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    module = write_dag(
        airflow_home,
        f"plan_fixed_{uid}",
        pipeline(conn_id, table, contract_path, source, tmp_path),
    )
    assert set(states(module.dag.test()).values()) == {"success"}
    rekeyed = contract.to_dict()
    rekeyed["key"] = ["id", "name"]
    rekeyed["types"] = {**rekeyed["types"], "name": "str"}
    contract_path.write_text(json.dumps(rekeyed), encoding="utf-8")
    run = module.dag.test()
    assert states(run) == {
        "plan": "failed",
        "extract": "upstream_failed",
        "gate": "upstream_failed",
        "publish": "upstream_failed",
    }
    assert DoganaHook(conn_id).receiver.ledger(table).contract == contract


def test_a_group_is_planned_read_gated_and_published_together(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """Invoices and their lines: one request per table with one boundary, one snapshot, one
    decision and one commit; both tables exact at the snapshot's instant, each Asset told so."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    tables = (f"invoices_{uid}", f"lines_{uid}")
    sources: dict[str, tuple[str, str]] = {}
    for table in tables:
        contract_path = tmp_path / f"{table}.contract.json"
        contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
        source = Source(tmp_path / f"{table}.source.json")
        source.put(1, f"{table} one")
        sources[table] = (str(contract_path), str(source.path))
    paths = [contract for contract, _ in sources.values()]
    module = write_dag(
        airflow_home,
        f"group_{uid}",
        f"""
        import delivery_dags
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator, dogana_asset

        with dag:
            planned = PlanDeliveryOperator(
                task_id="plan", group={paths!r}, receiver_conn_id={conn_id!r},
                fresh_as_of="{{{{ data_interval_end }}}}",
            )

            @task
            def extract(requests):
                return delivery_dags.extract_group(requests, {sources!r}, {str(tmp_path)!r})

            extract(planned.output) >> GateOperator(
                task_id="gate", receiver_conn_id={conn_id!r}
            ) >> PublishOperator(
                task_id="publish",
                receiver_conn_id={conn_id!r},
                outlets=[dogana_asset(table, {conn_id!r}) for table in {list(tables)!r}],
            )
        """,
    )
    hook = DoganaHook(conn_id)
    for round_ in range(2):
        run = module.dag.test()
        assert set(states(run).values()) == {"success"}, states(run)
        requests = [ExtractionRequest.from_dict(r) for r in xcom(run, "plan")]
        assert [r.table for r in requests] == list(tables)
        assert len({r.until for r in requests}) == 1  # one boundary for every table
        receipts = [Receipt.from_dict(r) for r in xcom(run, "publish")]
        [p] = {receipt.manifest.produced_at for receipt in receipts}
        ledgers = hook.ledgers(tables)
        group = Group(tuple(ledger.contract for ledger in ledgers.values()))
        assert group.claims(ledgers, p, limit=NO_LIMIT).exact_as_of == p
        for table in tables:
            assert asset_events(dogana_asset(table, conn_id).uri)[-1]["exact_as_of"] == (
                p.isoformat()
            )
            Source(Path(sources[table][1])).put(2 + round_, f"{table} more")
    assert published(hook, tables[1]) == {1: f"{tables[1]} one", 2: f"{tables[1]} more"}


def test_plan_reads_the_named_shape_when_a_delivery_is_needed(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """shape='full', here templated from params: a weekly job reads the whole table even where
    changes would be cheaper, and a hard delete in the source leaves the published table with it."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    module = write_dag(
        airflow_home,
        f"plan_shape_{uid}",
        pipeline(
            conn_id,
            table,
            contract_path,
            source,
            tmp_path,
            plan="shape='{{ params.shape }}', params={'shape': 'full'},",
        ),
    )
    assert set(states(module.dag.test()).values()) == {"success"}
    rows = source.rows()
    del rows[2]  # a hard delete: no tombstone will ever say so, only a full read
    source.path.write_text(json.dumps(rows), encoding="utf-8")
    run = module.dag.test()
    assert set(states(run).values()) == {"success"}
    assert xcom(run, "plan")["shape"] == "full"
    assert published(DoganaHook(conn_id), table) == {1: "one"}


def test_a_contract_shows_as_its_json_in_rendered_templates(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"receiver_{uid}", f"orders_{uid}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    contract = orders_contract(table)
    module = write_dag(
        airflow_home,
        f"plan_rendered_{uid}",
        f"""
        from dogana_core import Contract
        from dogana_provider.operators.plan import PlanDeliveryOperator

        with dag:
            PlanDeliveryOperator(task_id="plan", receiver_conn_id={conn_id!r}, max_age=60,
                                 contract=Contract.from_json({contract.to_json()!r}))
        """,
    )
    run = module.dag.test()
    assert states(run) == {"plan": "success"}
    shown = rendered(run, "plan")
    assert shown["renderers"]["contract"] == "json"
    assert shown["fields"]["contract"] == json.loads(contract.to_json())


def test_plan_fails_before_extracting_a_table_the_receiver_may_not_publish(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """[dogana] require_activation switches the receiver's setting on at registration; the plan
    of a table nobody activated then fails, naming what is missing and the command, before
    anything is extracted; once a person activates it, the same DAG publishes."""
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"receiver_{uid}", f"orders_{uid}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", sqlite_connection(tmp_path / "r.db"))
    monkeypatch.setenv("AIRFLOW__DOGANA__REQUIRE_ACTIVATION", "True")
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    module = write_dag(
        airflow_home,
        f"plan_inactive_{uid}",
        pipeline(conn_id, table, contract_path, source, tmp_path),
    )
    refused = module.dag.test()
    assert states(refused) == {
        "plan": "failed",
        "extract": "upstream_failed",
        "gate": "upstream_failed",
        "publish": "upstream_failed",
    }
    logged = capfd.readouterr().out
    assert f"table {table} is pending: no activation is recorded" in logged
    assert f"dogana activate {conn_id} {table} --owner OWNER --authorized-by PERSON" in logged
    hook = DoganaHook(conn_id)
    assert hook.receiver.sources.required()
    assert [(e.event, e.actor) for e in hook.receiver.sources.log()] == [
        ("required", "[dogana] require_activation")
    ]
    assert hook.receiver.receipts(table) == []

    hook.receiver.sources.activate(
        table,
        owner="Bea Owner",
        authorized_by="Carla Grantor",
        expires_at=datetime.now(UTC) + timedelta(days=1),
        licence="internal-use-only",
        purposes=["billing"],
        provenance="the test's JSON source",
        by="Ada Steward",
    )
    assert set(states(module.dag.test()).values()) == {"success"}
    assert published(hook, table) == {1: "one"}


def test_the_plan_logs_a_window_and_its_start_in_iso_dates_as_people_read_them() -> None:
    from datetime import date

    from dogana_core.planner import Requirement
    from dogana_provider.operators.plan import _request_line
    from dogana_provider.operators.superseded import requirement_line

    window = (date(2026, 11, 3), date(2026, 11, 4))
    at = datetime(2026, 11, 5, tzinfo=UTC)
    required = requirement_line(Requirement("shipments", at, window=window))
    assert required.endswith("over window [2026-11-03, 2026-11-04]"), required
    request = ExtractionRequest("shipments", "day_changes", at, window=window, since=at)
    planned = _request_line(request)
    assert ", window [2026-11-03, 2026-11-04], since 2026-11-05T00:00:00+00:00" in planned
    assert "datetime" not in required + planned


def test_a_runs_conf_naming_a_shape_by_table_picks_it_and_anything_else_is_refused() -> None:
    from types import SimpleNamespace

    from dogana_provider.operators.plan import run_shape

    def context(conf: object) -> dict[str, object]:
        return {"dag_run": SimpleNamespace(conf=conf)}

    assert run_shape(context({"dogana_shape": {"orders": "full"}}), "orders") == "full"
    assert run_shape(context({"dogana_shape": {"lines": "full"}}), "orders") is None
    assert run_shape(context({}), "orders") is None
    assert run_shape({"dag_run": None}, "orders") is None
    for wrong in ("full", {"orders": 3}):
        with pytest.raises(ValueError, match="a mapping from table to a shape's name"):
            run_shape(context({"dogana_shape": wrong}), "orders")


def test_the_full_read_command_names_the_contracts_first_whole_table_complete_shape() -> None:
    from dogana_core import Contract, Shape
    from dogana_provider.operators.plan import full_read_command

    logged = Contract(
        "orders",
        ("id",),
        {
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
            "snapshot": Shape.complete(),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    assert full_read_command("shop daily", logged) == (
        'airflow dags trigger \'shop daily\' --conf \'{"dogana_shape": {"orders": "snapshot"}}\''
    )
    changes_only = Contract(
        "orders",
        ("id",),
        {"log": Shape.changes(checkpoint="sequence", tombstones=True)},
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    assert full_read_command("shop", changes_only) is None
