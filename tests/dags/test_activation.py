"""dags/examples/activate_source.py on the PostgreSQL receiver, which requires activation: a
table that is not active fails its pipeline's plan before anything is extracted, saying what is
missing and how to activate it; a person triggers the activation DAG naming themselves; the
pipeline then publishes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from example_activation import STEWARD, activation
from example_runs import Databases, load_example, now, states, xcom

from dogana_provider.operators.plan import inactive_message
from dogana_provider.receiver.activation import Status

pytestmark = pytest.mark.airflow

TASKS = ("plan", "extract", "gate", "publish")


@pytest.mark.parametrize(
    "databases", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_a_pending_table_fails_its_plan_until_a_person_activates_it_from_the_dag(
    databases: Databases, airflow_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert databases.hook.receiver.sources.required()
    databases.create(
        "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    databases.source("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (1, "ada", 1200, now(), False))
    sources = databases.hook.receiver.sources
    sources.deactivate("orders", by=STEWARD, reason="a new source waits for its owner's word")
    orders = load_example(airflow_home, "orders")

    refused = databases.run(orders.daily)
    assert states(refused) == {
        "plan": "failed",
        "extract": "upstream_failed",
        "gate": "upstream_failed",
        "publish": "upstream_failed",
    }
    assert databases.receipts("orders") == []  # nothing extracted, nothing decided
    # The task's log says why, and the command that activates it with what is on record.
    logged = capfd.readouterr().out
    assert inactive_message("dogana_default", [sources.state("orders")]) in logged
    assert "table orders is pending" in logged
    assert "dogana activate dogana_default orders --owner 'Grace Owner'" in logged

    given = activation()
    conf = {
        "table": "orders",
        "owner": given["owner"],
        "authorized_by": given["authorized_by"],
        "expires": "30d",
        "licence": given["licence"],
        "purposes": given["purposes"],
        "provenance": given["provenance"],
        "activated_by": "Hedy Steward",
    }
    activate = load_example(airflow_home, "activate_source")
    done = databases.run(activate.dag, run_conf=conf)
    assert states(done) == {"activate": "success"}
    assert xcom(done, "activate")["status"] == "active"
    assert sources.state("orders").status is Status.ACTIVE
    logged = sources.log("orders")[-1]
    assert (logged.event, logged.actor) == ("activated", "Hedy Steward")

    published = databases.run(orders.daily)
    assert states(published) == dict.fromkeys(TASKS, "success")
    assert databases.published("orders", ("order_id", "customer")) == {(1, "ada")}
    (receipt,) = databases.receipts("orders")
    assert "source_active" in [c.name for c in receipt.checks if c.passed]
