"""DeliverOperator: plan, extract, gate and publish of a delivery in one task.

For those who prefer fewer task instances to a task per step: many small tables, where starting
a task process costs more than moving a table's rows. Each delivery runs through the four
operators' own execute(), in order, in this task's process; what each step hands the next is
what its task would have put in XCom, and the task returns each delivery's record (the request,
the delivered file and its manifest, the receipt) as its XCom. The four-task form
(delivery_task_group) stays the default: a failed step is retried alone there, and each step's
state shows in the grid; here a retry runs the whole delivery again, from its plan.

    DeliverOperator(task_id="orders", contract=ORDERS, source_conn_id="shop_db",
                    receiver_conn_id="warehouse", fresh_as_of=RUN_END)

    # many small tables: a batch a core the workers have, each table its own delivery and
    # publication (batches(contracts_in_folder("/contracts"), 10): ten tables a task)
    DeliverOperator.partial(
        task_id="deliver", source_conn_id="shop_db", receiver_conn_id="warehouse",
        outlets=[dogana_alias("warehouse")],
    ).expand(contracts=contracts_in_folder("/contracts", tasks=2))

The batches are marked as batches ({"batch": [...]}): mapped over contract= instead of
contracts=, a batch is refused, naming contracts=, rather than read as one group, since a list
given as a contract is a group read together.

A batch delivers every element (a contract, or a list of contracts read together as a group)
even when one fails; the task then fails naming each failed delivery, after the others
published. Airflow records a task's Asset events only when it succeeds: the tables a failed
batch did publish get no event from it (their receipts and claims are there, as always).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

from airflow.sdk import DAG, BaseOperator, task
from airflow.sdk.bases.operator import ExecutorSafeguard
from airflow.sdk.exceptions import AirflowSkipException

from dogana_provider.hooks.dogana import DoganaHook, shared_receivers
from dogana_provider.operators.arguments import BATCH, batch_of, native
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator, dogana_alias

REQUIREMENT = ("fresh_as_of", "max_age", "exact_at", "deletions_as_of", "shape", "window")


class DeliverOperator(BaseOperator):
    """The delivery of one table or group (contract), or of several one after another
    (contracts), plan to publication, in one task.

    :param contract: the table's Contract, its wire dict or a path; a list is a group read
        together (templated).
    :param contracts: instead of contract, a batch: each element delivered on its own, as
        contract would be; a list, or a batch as contracts_in_folder(..., tasks=N) and
        batches() hand it over (templated). Given as contract=, such a batch is refused.
    :param source_conn_id: the source's connection (ExtractOperator's).
    :param receiver_conn_id: the receiver's connection.
    :param extract: ExtractOperator's own arguments (source_table, schema_policy...).
    :param expectations: GateOperator's: the table's quality expectations, or by table.
    :param outlets: PublishOperator's: dogana_alias(receiver_conn_id) gets each published
        table's Asset event; by default, that alias (a mapped DeliverOperator names it in
        .partial(), so that the scheduler knows the alias before the task runs).
    :param fresh_as_of, max_age, exact_at, deletions_as_of, shape, window: the requirement,
        PlanDeliveryOperator's (templated).
    """

    template_fields: Sequence[str] = (
        "contract",
        "contracts",
        "receiver_conn_id",
        "fresh_as_of",
        "exact_at",
        "deletions_as_of",
        "shape",
        "window",
    )

    def __init__(
        self,
        *,
        contract: Any = None,
        contracts: Any = None,
        source_conn_id: str | None = None,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        extract: Mapping[str, Any] | None = None,
        expectations: Any = None,
        # A list, not None: .partial() records this default as a mapped task's outlets, which
        # Airflow adds to its inlets (a list). Never mutated.
        outlets: Any = [],  # noqa: B006
        fresh_as_of: Any = None,
        max_age: Any = None,
        exact_at: Any = None,
        deletions_as_of: Any = None,
        shape: Any = None,
        window: Any = None,
        **kwargs: Any,
    ) -> None:
        if not outlets:
            outlets = [dogana_alias(receiver_conn_id)]
        super().__init__(outlets=list(outlets), **kwargs)
        if (contract is None) == (contracts is None):
            raise ValueError(f"{self.task_id}: give either contract or contracts (a batch)")
        self.contract = contract
        self.contracts = contracts
        self.source_conn_id = source_conn_id
        self.receiver_conn_id = receiver_conn_id
        self.extract = dict(extract or {})
        self.expectations = expectations
        self.fresh_as_of = fresh_as_of
        self.max_age = max_age
        self.exact_at = exact_at
        self.deletions_as_of = deletions_as_of
        self.shape = shape
        self.window = window

    def execute(self, context: Any) -> Any:
        # The steps, and a batch's deliveries, share one receiver: its idle connections and
        # what it read of its own tables pass from step to step (hooks/dogana.py).
        with shared_receivers(), _heap_set_aside():
            return self._execute(context)

    def _execute(self, context: Any) -> Any:
        if self.contract is not None:
            return self._deliver(native(self.contract, "contract"), context)
        given = native(self.contracts, "contracts")
        marked = batch_of(given)
        batch = given if marked is None else marked
        if not isinstance(batch, list):
            raise ValueError(
                f"contracts: a batch, a list of deliveries, not {type(batch).__name__}: give one "
                "table as contract=, or expand over contracts_in_folder(folder, tasks=N)'s batches"
            )
        records: list[dict[str, Any]] = []
        failed: list[str] = []
        for item in batch:
            try:
                records.append(self._deliver(item, context))
            except AirflowSkipException as skipped:
                records.append({"skipped": str(skipped)})
            except Exception as error:  # the batch's other tables still deliver
                self.log.exception("a delivery of the batch failed")
                failed.append(f"{type(error).__name__}: {error}")
        if failed:
            raise RuntimeError(
                f"{len(failed)} of {len(batch)} deliveries failed: " + " | ".join(failed)
            )
        if records and all("skipped" in record for record in records):
            raise AirflowSkipException(" | ".join(record["skipped"] for record in records))
        return records

    def _deliver(self, contract: Any, context: Any) -> dict[str, Any]:
        """plan, extract, gate and publish of one delivery, each step's execute() reading the one
        before it by its output, in a DAG of this delivery alone (so that gate and publish find
        the plan upstream, as they do in the four-task form)."""
        steps = _Steps(context)
        requirement = {
            name: getattr(self, name) for name in REQUIREMENT if getattr(self, name) is not None
        }
        common: dict[str, Any] = {"receiver_conn_id": self.receiver_conn_id}
        with DAG(f"{context['dag'].dag_id}.{self.task_id}", schedule=None):
            plan = PlanDeliveryOperator(task_id="plan", contract=contract, **common, **requirement)
            request = steps.run(plan)
            read = ExtractOperator(
                task_id="extract",
                source_conn_id=self.source_conn_id,
                contract=contract,
                request=request,
                **{**common, **self.extract},
            )
            plan >> read
            delivery = steps.run(read)
            gate = GateOperator(
                task_id="gate", delivery=delivery, expectations=self.expectations, **common
            )
            read >> gate
            decision = steps.run(gate)
            publish = PublishOperator(
                task_id="publish", decision=decision, outlets=self.outlets, **common
            )
            gate >> publish
            receipt = steps.run(publish)
        return {"request": request, "delivery": delivery, "receipt": receipt}


@contextmanager
def _heap_set_aside() -> Iterator[None]:
    """The objects alive now, the task process's whole heap (Airflow, the provider, pyarrow),
    left out of the garbage collector's passes until the end (gc.freeze). The rows of a few
    tables are enough to start a full pass, which walks that heap and costs more than a
    table's own work; what the deliveries make is still collected. The objects are given back
    to the collector after, unless objects were frozen before (a LocalExecutor's task process
    inherits its worker's): gc gives back all frozen objects or none, so they all stay."""
    already = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not already:
            gc.unfreeze()


class _Steps:
    """The task's context for each step: what a step pushes is kept here, for the steps after
    it to pull, instead of in XCom; everything else is the task's own."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.pushed: dict[tuple[str, str], Any] = {}

    def run(self, step: BaseOperator) -> Any:
        ti = _StepInstance(self.context["ti"], step.task_id, self.pushed)
        context: Any = {**self.context, "ti": ti, "task_instance": ti}
        # Each step runs as the task runner runs a task's operator: Airflow's safeguard against
        # an operator's execute() called by hand would otherwise warn, in every task's log,
        # that each step "cannot be called outside of the Task Runner".
        token = ExecutorSafeguard.tracker.set(step)
        try:
            returned = step.execute(context)
        finally:
            ExecutorSafeguard.tracker.reset(token)
        self.pushed[(step.task_id, "return_value")] = returned
        return returned


class _StepInstance:
    """The task instance as a step sees it: its XCom kept by _Steps, the rest the task's."""

    def __init__(self, ti: Any, task_id: str, pushed: dict[tuple[str, str], Any]) -> None:
        self._ti, self._task_id, self._pushed = ti, task_id, pushed

    def xcom_push(self, key: str, value: Any) -> None:
        self._pushed[(self._task_id, key)] = value

    def xcom_pull(
        self, task_ids: Any = None, key: str = "return_value", default: Any = None, **_: Any
    ) -> Any:
        return self._pushed.get((str(task_ids), key), default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ti, name)


@task
def batches(
    deliveries: Sequence[Any], size: int | None = None, tasks: int | None = None
) -> list[dict[str, list[Any]]]:
    """deliveries (contracts_in_folder's, registered_contracts') in batches, in order: what
    DeliverOperator's contracts expand over, one task per batch. Either size, the deliveries a
    batch, or tasks, the number of batches (see in_batches)."""
    return marked_batches(deliveries, size=size, tasks=tasks)


def marked_batches(
    deliveries: Sequence[Any], *, size: int | None = None, tasks: int | None = None
) -> list[dict[str, list[Any]]]:
    """in_batches, each batch marked as one ({"batch": [...]}, arguments.BATCH), as the
    batching tasks hand them over: DeliverOperator's contracts= reads it, and a contract
    argument refuses it, where its list would be read as one group."""
    return [{BATCH: batch} for batch in in_batches(deliveries, size=size, tasks=tasks)]


def in_batches(
    deliveries: Sequence[Any], *, size: int | None = None, tasks: int | None = None
) -> list[list[Any]]:
    """deliveries in batches of size, or in tasks batches as equal as they can be (their sizes
    differ by one at most, none empty: fewer when there are fewer deliveries), in order.

    tasks is the rule for many small tables: a batch's task process costs more to start than
    a small table to deliver, so as many batches as the workers have cores (or task slots)
    start each process once and keep every core busy."""
    if (size is None) == (tasks is None):
        raise ValueError("batches: give either size (deliveries a batch) or tasks (batches)")
    items = list(deliveries)
    if size is not None:
        if size < 1:
            raise ValueError(f"batches: size {size}; give at least 1")
        return [items[start : start + size] for start in range(0, len(items), size)]
    assert tasks is not None
    if tasks < 1:
        raise ValueError(f"batches: tasks {tasks}; give at least 1")
    bounds = [len(items) * number // tasks for number in range(tasks + 1)]
    return [items[low:high] for low, high in pairwise(bounds) if high > low]
