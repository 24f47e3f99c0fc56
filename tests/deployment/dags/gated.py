"""The test DAGs of the receiver's two gates (test_gates.py), in the examples' receiver, which
requires activation:

dogana_test_deposits   plan -> extract -> gate -> publish of deposits, whose gate declares a
                       block (no negative amount) and a hold (an amount above 1,000,000 waits
                       for a person); deposits is activated before the deployment starts
dogana_test_accounts   plan -> extract -> gate -> publish of accounts, left pending: its plan
                       fails until a person activates it (dags/examples/activate_source.py)
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.checks.expectations import Expectations
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

SOURCE_CONN_ID = "dogana_test_source"
RECEIVER_CONN_ID = "dogana_default"
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

DEPOSITS = Contract("deposits", ("id",), {"full": Shape.complete()}, types={"id": "int"})
ACCOUNTS = Contract("accounts", ("id",), {"full": Shape.complete()}, types={"id": "int"})
EXPECTATIONS = Expectations.from_dict(
    {
        "column_mapping": {"amount": {"min": {"geq_to": 0, "on_violation": "block"}}},
        "checks": {
            "amount_plausible": {"check_statement": "amount <= 1000000", "on_violation": "hold"}
        },
    }
)


def pipeline(dag_id: str, contract: Contract, expectations: Expectations | None = None) -> DAG:
    with DAG(dag_id, schedule=None, start_date=START, catchup=False) as dag:
        (
            PlanDeliveryOperator(
                task_id="plan",
                contract=contract,
                receiver_conn_id=RECEIVER_CONN_ID,
                fresh_as_of=RUN_END,
            )
            >> ExtractOperator(task_id="extract", source_conn_id=SOURCE_CONN_ID, contract=contract)
            >> GateOperator(
                task_id="gate", receiver_conn_id=RECEIVER_CONN_ID, expectations=expectations
            )
            >> PublishOperator(
                task_id="publish", receiver_conn_id=RECEIVER_CONN_ID, table=contract.table
            )
        )
    return dag


deposits = pipeline("dogana_test_deposits", DEPOSITS, EXPECTATIONS)
accounts = pipeline("dogana_test_accounts", ACCOUNTS)
