"""Every DAG of dags/examples/ under the real scheduler: its scheduled run when unpaused, and a
run triggered without a logical date, as `airflow dags trigger` and the REST API create one.

The runs go in three rounds, each in parallel, so that no two DAGs deliver one table at once
(the daily and the weekly orders DAGs share orders; the freshness check reads every table):

    1. unpaused: orders daily, events, invoices, shipments; each scheduled run reads its
       tables whole into the empty receiver
    2. a manual run of each, logical_date null; the weekly orders DAG unpaused (its scheduled
       run finds orders already fresh as of last Sunday, and skips)
    3. a manual run of the weekly orders DAG; the freshness check unpaused, and a manual run

Beside them, a test DAG scheduled on the two Assets of the invoices publish task runs after
each of its publications.

A run without a logical date has no data interval: its "fresh as of the run's end" is its
run_after, the instant it was triggered, so each manual run publishes a table complete as of
that instant or later.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from deployment import Client, Deployment, Run
from stories import Played, Servers, story

PIPELINES = {
    "dogana_orders_daily": ["orders"],
    "dogana_events_hourly": ["events"],
    "dogana_invoices": ["invoices", "invoice_lines"],
    "dogana_shipments_window": ["shipments"],
}
WEEKLY = "dogana_orders_weekly_full"
FRESHNESS = "dogana_freshness"
# dags/invoices_consumer.py: scheduled on the two Assets the invoices publish task emits.
CONSUMER = "dogana_test_invoices_consumer"
TABLES = {**PIPELINES, WEEKLY: ["orders"]}
EVERY_DAG = [*PIPELINES, WEEKLY, FRESHNESS]
# web_orders.py and api_orders.py: the JSON Lines and HTTP examples, run in
# test_connector_pipelines.py.
CONNECTED = ["dogana_web_orders", "dogana_api_orders"]
# warehouse.py: one DAG per contract file, parsed here; its tables are not in this source.
WAREHOUSE = [
    f"warehouse_{path.name.split('.', 1)[0]}"
    for path in (Path(__file__).parents[2] / "dags" / "examples" / "contracts").iterdir()
]


class Rounds:
    """The runs of the three rounds: each DAG's scheduled run and its manual run."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.scheduled: dict[str, Run] = {}
        self.manual: dict[str, Run] = {}
        self.found: dict[Run, dict[str, Any]] = {}
        self.consumed: list[Run] = []

    def play(self) -> None:
        client = self.client
        client.wait_parsed([*EVERY_DAG, CONSUMER])
        client.unpause(CONSUMER)
        self._unpause(list(PIPELINES))
        self._wait(self.scheduled.values())
        self.manual = {dag_id: client.trigger(dag_id) for dag_id in PIPELINES}
        self._unpause([WEEKLY])
        self._wait([*self.manual.values(), self.scheduled[WEEKLY]])
        self.manual[WEEKLY] = client.trigger(WEEKLY)
        self.manual[FRESHNESS] = client.trigger(FRESHNESS)
        self._unpause([FRESHNESS])
        self._wait([self.manual[WEEKLY], self.manual[FRESHNESS], self.scheduled[FRESHNESS]])
        client.wait_for_run(CONSUMER, run_type="asset_triggered")
        self.consumed = client.runs(CONSUMER, run_type="asset_triggered")
        self._wait(self.consumed)

    def _unpause(self, dag_ids: list[str]) -> None:
        for dag_id in dag_ids:
            self.client.unpause(dag_id)
        for dag_id in dag_ids:
            self.scheduled[dag_id] = self.client.wait_for_run(dag_id, run_type="scheduled")

    def _wait(self, runs: Any) -> None:
        self.found.update(self.client.wait_all(list(runs)))


@story
def example_rounds(client: Client, servers: Servers) -> Rounds:
    rounds = Rounds(client)
    rounds.play()
    return rounds


@pytest.fixture(scope="module")
def rounds(played: Played) -> Rounds:
    return played.result(example_rounds)


def published_as_of(client: Client, table: str) -> datetime:
    """complete_as_of in the table's latest Asset event, after the rounds.

    Usually the manual run's own; but when an hourly DAG's next scheduled run was created during
    the rounds and ran first, the manual run finds the table fresh enough and skips: the rule
    is the table's date, not which run proved it.
    """
    events = client.asset_events(f"dogana://dogana_default/{table}")
    assert events, f"no Asset event for {table}"
    return datetime.fromisoformat(events[-1]["extra"]["complete_as_of"])


def test_every_example_file_is_parsed_by_the_dag_processor_without_errors(client: Client) -> None:
    client.wait_parsed([*EVERY_DAG, *CONNECTED, *WAREHOUSE])
    assert client.request("GET", "/importErrors")["import_errors"] == []


@pytest.mark.parametrize("dag_id", EVERY_DAG)
def test_each_example_runs_when_unpaused(rounds: Rounds, dag_id: str) -> None:
    run = rounds.scheduled[dag_id]
    found = rounds.found[run]
    assert found["logical_date"] is not None and found["data_interval_end"] is not None
    assert found["state"] == "success", rounds.client.explain(run)


@pytest.mark.parametrize("dag_id", list(TABLES))
def test_a_run_without_a_logical_date_publishes_fresh_as_of_its_run_after(
    rounds: Rounds, dag_id: str
) -> None:
    run = rounds.manual[dag_id]
    found = rounds.found[run]
    assert found["logical_date"] is None and found["data_interval_end"] is None
    assert found["state"] == "success", rounds.client.explain(run)
    run_after = datetime.fromisoformat(found["run_after"])
    for table in TABLES[dag_id]:
        assert published_as_of(rounds.client, table) >= run_after


def test_a_freshness_check_without_a_logical_date_passes_every_example_table(
    rounds: Rounds,
) -> None:
    run = rounds.manual[FRESHNESS]
    assert rounds.found[run]["state"] == "success", rounds.client.explain(run)
    results = rounds.client.xcom(run, "freshness")
    assert {r["table"]: r["status"] for r in results} == {
        table: "PASS" for tables in TABLES.values() for table in tables
    }


def test_each_outlet_of_one_publish_carries_its_own_tables_claims(rounds: Rounds) -> None:
    """The invoices publish task has two outlets, invoices and invoice_lines: a DAG scheduled on
    both reads, from each Asset's events, that table's claims and no other's."""
    assert rounds.consumed
    for run in rounds.consumed:
        assert rounds.found[run]["state"] == "success", rounds.client.explain(run)
        for uri, extras in rounds.client.xcom(run, "claims").items():
            table = uri.rsplit("/", 1)[1]
            assert extras and all(extra["tables"] == [table] for extra in extras), (uri, extras)


def test_a_person_at_the_terminal_reads_what_fed_orders_and_its_schema_versions(
    rounds: Rounds, deployment: Deployment
) -> None:
    """After the rounds, as a person asks at the deployment's terminal: `dogana lineage` names the
    source and the runs that fed orders, `dogana schema` its version under the policy the orders
    example declares (columns frozen)."""
    lineage = deployment.at_the_terminal("lineage", "dogana_default", "--output", "orders")
    assert lineage.returncode == 0, lineage.stderr
    assert lineage.stdout.startswith("receiver 'dogana_default': what fed orders: "), lineage.stdout
    assert "dogana_source: orders" in lineage.stdout
    assert "dogana_orders_daily / " in lineage.stdout, lineage.stdout
    schema = deployment.at_the_terminal("schema", "dogana_default", "orders")
    assert schema.returncode == 0, schema.stderr
    assert schema.stdout.startswith("receiver 'dogana_default': table orders, "), schema.stdout
    assert "columns freeze" in schema.stdout, schema.stdout
    print(lineage.stdout, schema.stdout, sep="\n")  # what a person reads (-s shows it)
