"""delivery_task_group: plan, extract, gate and publish for one table, in one call.

One table (or one group of tables read together), in a TaskGroup named after it, returned so
it can be wired::

    orders = delivery_task_group(
        ORDERS,                                   # a Contract, its wire dict or a path
        source_conn_id="shop_db",
        receiver_conn_id="warehouse",
        fresh_as_of=RUN_END,                      # the run's end (operators.arguments)
    )
    invoices = delivery_task_group(group=[INVOICES, LINES], source_conn_id="shop_db",
                                   receiver_conn_id="warehouse", exact_at=RUN_END)
    [orders, invoices] >> report

The same pipeline mapped over contracts known only at run time: each mapped instance plans,
reads, gates and publishes its own table (a list element is a group, read in one snapshot) and
emits its own table's Asset event, through the outlet dogana_alias(receiver_conn_id)::

    delivery_task_group.partial(
        group_id="tables",
        source_conn_id="shop_db",
        receiver_conn_id="warehouse",
        max_active_tis_per_dag=4,                 # at most 4 reads of the source at once
    ).expand(contract=registered_contracts("warehouse"))

Inside, each task hands the next its output (``plan.output`` and so on), so Airflow resolves
the instance of the same map index; the four tasks keep their ids plan, extract, gate and
publish under the group's id. Keyword arguments the operators do not take are every task's
(``pool``, ``retries``, ``max_active_tis_per_dag``...); ``extract`` holds ExtractOperator's own
(``source_table``, ``table_sql``, ``columns``, ``output_folder``...), and the extract checks
each table's source columns against the receiver's schema version before reading
(``schema_policy``, ExtractOperator's; docs/schema-policy.md). ``expectations`` are the
gate's (GateOperator): the table's quality expectations, or a group's by table::

    delivery_task_group(
        ORDERS, source_conn_id="shop_db", receiver_conn_id="warehouse",
        expectations={"column_mapping": {"amount_cents": {
            "min": {"geq_to": 0, "on_violation": "block"}}}},
    )

A source that is not a SQL database is a connector (dogana_provider.connectors), its
configuration given to extract instead of a source_conn_id::

    delivery_task_group(
        ORDERS, receiver_conn_id="warehouse",
        extract={"connector": {"kind": "jsonl", "path": "s3://drops/orders.jsonl",
                               "key": ["order_id"], "whole_history": True}},
    )
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import TaskGroup, task, task_group

from dogana_core.contract import Contract
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.arguments import contract_of
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator, dogana_alias, dogana_asset

REQUIREMENT = ("fresh_as_of", "max_age", "exact_at", "deletions_as_of", "shape", "window")


def _add_delivery(
    contract: Any,
    *,
    source_conn_id: str | None,
    receiver_conn_id: str,
    outlets: list[Any],
    requirement: Mapping[str, Any],
    extract: Mapping[str, Any],
    tasks: Mapping[str, Any],
    expectations: Any = None,
) -> None:
    """The four tasks, each reading the one before it by its output, in the current group."""
    plan = PlanDeliveryOperator(
        task_id="plan", contract=contract, receiver_conn_id=receiver_conn_id, **requirement, **tasks
    )
    read = ExtractOperator(
        task_id="extract",
        source_conn_id=source_conn_id,
        contract=contract,
        request=plan.output,
        **{"receiver_conn_id": receiver_conn_id, **extract},
        **tasks,
    )
    gate = GateOperator(
        task_id="gate",
        receiver_conn_id=receiver_conn_id,
        delivery=read.output,
        expectations=expectations,
        **tasks,
    )
    PublishOperator(
        task_id="publish",
        receiver_conn_id=receiver_conn_id,
        decision=gate.output,
        outlets=outlets,
        **tasks,
    )


# The mapped form: Airflow's own task group factory, so partial / expand / expand_kwargs are
# Airflow's, and each argument but contract is given to partial.
_mapped = task_group(_add_delivery)


class DeliveryTaskGroupFactory:
    """delivery_task_group(...) for one table or group; .partial(...).expand(contract=...) to
    map it over contracts known at run time."""

    def __call__(
        self,
        contract: Contract | Mapping[str, Any] | str | None = None,
        *,
        group: Sequence[Contract | Mapping[str, Any] | str] | None = None,
        source_conn_id: str | None = None,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        group_id: str | None = None,
        extract: Mapping[str, Any] | None = None,
        expectations: Any = None,
        schema_policy: Any = None,
        **options: Any,
    ) -> TaskGroup:
        """Add the delivery of one table (contract) or of a group read together (group) in a
        TaskGroup named after the table (a group: its tables joined by "__")."""
        if (contract is None) == (group is None):
            raise ValueError("delivery_task_group: give either contract (one table) or group")
        members = [contract] if group is None else list(group)
        tables = [contract_of(c, "contract").table for c in members]
        requirement, tasks = _split(options)
        with TaskGroup(group_id=group_id or "__".join(tables)) as delivery:
            _add_delivery(
                contract if group is None else members,
                source_conn_id=source_conn_id,
                receiver_conn_id=receiver_conn_id,
                outlets=[dogana_asset(table, receiver_conn_id) for table in tables],
                requirement=requirement,
                extract=_with_policy(extract, schema_policy),
                tasks=tasks,
                expectations=expectations,
            )
        return delivery

    def partial(
        self,
        *,
        source_conn_id: str | None = None,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        group_id: str = "deliveries",
        extract: Mapping[str, Any] | None = None,
        expectations: Any = None,
        schema_policy: Any = None,
        **options: Any,
    ) -> Any:
        """The mapped form: .expand(contract=[...]) or .expand_kwargs([{"contract": ...}]), one
        table per element, or a group where the element is a list of contracts. expectations
        are by table, each gate taking its own table's."""
        requirement, tasks = _split(options)
        return _mapped.override(group_id=group_id).partial(
            source_conn_id=source_conn_id,
            receiver_conn_id=receiver_conn_id,
            outlets=[dogana_alias(receiver_conn_id)],
            requirement=requirement,
            extract=_with_policy(extract, schema_policy),
            tasks=tasks,
            expectations=expectations,
        )


delivery_task_group = DeliveryTaskGroupFactory()


def _with_policy(extract: Mapping[str, Any] | None, policy: Any) -> dict[str, Any]:
    """ExtractOperator's arguments with the table's schema policy, where one is declared."""
    found = dict(extract or {})
    if policy is not None:
        found["schema_policy"] = policy
    return found


def _split(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The requirement PlanDeliveryOperator takes, and every task's own arguments."""
    requirement = {k: v for k, v in options.items() if k in REQUIREMENT}
    tasks = {k: v for k, v in options.items() if k not in REQUIREMENT}
    return requirement, tasks


@task
def registered_contracts(receiver_conn_id: str = DoganaHook.default_conn_name) -> list[Any]:
    """Every contract registered in the receiver, as wire dicts: what a mapped delivery reads
    when the tables are those the receiver already holds."""
    return [contract.to_dict() for contract in DoganaHook(receiver_conn_id).contracts()]
