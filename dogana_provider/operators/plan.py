"""PlanDeliveryOperator: what to read next, or nothing, from the table's ledger in the receiver.

Registers (or evolves) the contract, reads the ledger and plans against a requirement stated
the way a DAG author thinks of it:

    fresh_as_of=RUN_END                     complete as of the run's end: its data interval's
                                            end, or its run_after when it has none (a manual
                                            or asset-triggered run; arguments.RUN_END)
    max_age=timedelta(hours=6)              complete as of now - 6 hours
    exact_at=...                            complete and deletions both at the instant
    (none of them)                          complete as of the run's end, as fresh_as_of=RUN_END:
                                            a retry hours later asks for what the run asked

It pushes the ExtractionRequest's wire dict (a list of them for a group, planned together so
that one snapshot makes every table exact at one instant), or raises AirflowSkipException when
the claims already suffice, so that the extract, gate and publish tasks downstream skip.

In a receiver that requires activation (receiver/activation.py) a table that is not active
would only have its delivery rejected, so the plan fails first (AirflowFailException: retries
cannot activate it), before anything is extracted, saying what is missing or when the
authorization expired, and the `dogana activate` command that activates it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from dogana_core.claims import NO_LIMIT
from dogana_core.contract import Contract
from dogana_core.group import Group, plan_together
from dogana_core.planner import ExtractionRequest, Requirement, next_extraction, plan_delivery
from dogana_provider.hooks.dogana import DoganaHook, claims_line
from dogana_provider.operators.arguments import (
    contract_field,
    contract_of,
    duration,
    group_of,
    instant,
    native,
    run_end,
    window_of,
)
from dogana_provider.operators.superseded import REQUIREMENT, Planned, requirement_line
from dogana_provider.report.activation import inactive_message
from dogana_provider.report.table import iso, iso_window

if TYPE_CHECKING:
    from dogana_provider.receiver.activation import SourceState

RUN_SHAPE = "dogana_shape"
"""The run's conf key naming, by table, the shape this run reads when it needs a delivery:
{"dogana_shape": {"orders": "snapshot"}} asks one run for orders' snapshot shape, as the
command a refusal prints for a full read does."""


class PlanDeliveryOperator(BaseOperator):
    """Plan one table's (or one group's) next delivery, or skip when the claims suffice.

    :param contract: the table's Contract, its wire dict, or a path to its JSON (templated).
    :param table: the table, checked against the contract's; optional.
    :param receiver_conn_id: the receiver's connection (sqlite, postgres or mysql).
    :param shape: read this shape when a delivery is needed (next_extraction), instead of the
        cheapest shape the planner finds; a scheduled job's routine read (templated: a rendering
        of "" or "None" is no shape, so "{{ dag_run.conf.get('shape') }}" picks one by hand).
        A run whose conf names a shape for the table under "dogana_shape" reads that one
        (for a group, each table named there).
    :param fresh_as_of: the table must be complete as of this instant (templated); RUN_END
        is the run's end. Without fresh_as_of, max_age or exact_at: the run's end.
    :param max_age: the table must be complete as of now - max_age (timedelta or seconds).
    :param exact_at: the table must be exact at this instant: both dates at it (templated).
    :param deletions_as_of: with fresh_as_of or max_age, deletions must be repaired as of this
        instant too (queries with NOT EXISTS, exact COUNT or SUM need it) (templated).
    :param window: a closed window [low, high] of the window column, or for a group a mapping
        from table to window; None for the whole table (templated).
    :param group: contracts of tables read together, instead of contract: plans one snapshot
        making every table exact at one instant no earlier than the requirement's. A contract
        given as a list (a mapped element naming a group) is planned as a group.
    """

    template_fields: Sequence[str] = (
        "contract",
        "table",
        "receiver_conn_id",
        "shape",
        "fresh_as_of",
        "exact_at",
        "deletions_as_of",
        "window",
    )
    template_fields_renderers = {"contract": "json"}
    states = REQUIREMENT  # the XCom key of what a run asks, which gate and publish read

    def __init__(
        self,
        *,
        contract: Contract | dict | str | None = None,
        table: str | None = None,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        shape: str | None = None,
        fresh_as_of: datetime | str | None = None,
        max_age: timedelta | float | None = None,
        exact_at: datetime | str | None = None,
        deletions_as_of: datetime | str | None = None,
        window: Any = None,
        group: Sequence[Contract | dict | str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (contract is None) == (group is None):
            raise ValueError(f"{self.task_id}: give either contract (one table) or group")
        asked = [
            name
            for name, value in (
                ("fresh_as_of", fresh_as_of),
                ("max_age", max_age),
                ("exact_at", exact_at),
            )
            if value is not None
        ]
        if len(asked) > 1:
            raise ValueError(
                f"{self.task_id}: give one of fresh_as_of, max_age, exact_at, not "
                f"{' and '.join(asked)}"
            )
        if exact_at is not None and deletions_as_of is not None:
            raise ValueError(f"{self.task_id}: exact_at already sets deletions_as_of")
        if group is not None and shape is not None:
            raise ValueError(f"{self.task_id}: a group is planned together; shape is for one table")
        self.contract = contract_field(contract)
        self.table = table
        self.receiver_conn_id = receiver_conn_id
        self.shape = shape
        self.fresh_as_of = fresh_as_of
        self.max_age = duration(max_age, "max_age")
        self.exact_at = exact_at
        self.deletions_as_of = deletions_as_of
        self.window = window
        self.group = None if group is None else list(group)

    def execute(self, context: Any) -> Any:
        hook = DoganaHook(self.receiver_conn_id)
        now = datetime.now(UTC)
        end = run_end(context)
        group = group_of(self.contract, self.group)
        if group is not None:
            return self._plan_group(context, hook, now, end, group)
        contract = contract_of(self.contract)
        if self.table is not None and self.table != contract.table:
            raise ValueError(f"table {self.table!r} is not the contract's table {contract.table!r}")
        ledger, state = hook.receiver.register_active(contract)
        self._refuse(hook, [state])
        requirement = self._requirement(contract, now, end)
        window = requirement.window
        claims = ledger.claims(now, limit=NO_LIMIT, window=window)
        self.log.info("%s: contract registered; claims now %s", contract.table, claims_line(claims))
        self.log.info("%s: requirement %s", contract.table, requirement_line(requirement))
        request = plan_delivery(ledger, requirement)
        if request is None:
            raise AirflowSkipException(
                f"{contract.table}: claims suffice ({claims_line(claims)}), met by publication "
                f"{ledger.publication_id}; nothing to deliver"
            )
        shape = run_shape(context, contract.table) or _shape(self.shape)
        if shape is not None:
            request = next_extraction(ledger, shape, request.until, window=window)
        self.log.info("%s: plan %s", contract.table, _request_line(request))
        # What this run asks, for the gate and publish downstream: a delivery refused because
        # another run's publication came first is superseded when that publication meets it.
        context["ti"].xcom_push(REQUIREMENT, Planned(requirement, ledger.head).to_dict())
        return request.to_dict()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: the receiver's tables planned for, with the claims planned from (OpenLineage,
        the extra "openlineage")."""
        from dogana_provider.lineage import openlineage as lineage

        contracts = group_of(self.contract, self.group) or [self.contract]
        tables = [contract_of(c).table for c in contracts]
        return lineage.lineage(inputs=lineage.receiver_tables(self.receiver_conn_id, tables))

    def _refuse_inactive(self, hook: DoganaHook, tables: Sequence[str]) -> None:
        """Fail the task when the receiver may not publish one of the tables now."""
        self._refuse(hook, [hook.receiver.sources.state(table) for table in tables])

    def _refuse(self, hook: DoganaHook, states: Sequence[SourceState]) -> None:
        refused = [state for state in states if not state.publishes]
        if refused:
            raise AirflowFailException(inactive_message(self.receiver_conn_id, refused))

    def _requirement(self, contract: Contract, now: datetime, end: datetime) -> Requirement:
        window = window_of(contract, self.window, "window")
        exact = instant(self.exact_at, "exact_at")
        if exact is not None:
            return Requirement.exact(contract.table, exact, window=window)
        return Requirement(
            contract.table,
            self._at_least(now, end),
            deletions_as_of=instant(self.deletions_as_of, "deletions_as_of"),
            window=window,
        )

    def _at_least(self, now: datetime, end: datetime) -> datetime:
        for value, what in ((self.exact_at, "exact_at"), (self.fresh_as_of, "fresh_as_of")):
            found = instant(value, what)
            if found is not None:
                return found
        if self.max_age is not None:
            return now - self.max_age
        return end

    def _plan_group(
        self, context: Any, hook: DoganaHook, now: datetime, end: datetime, members: list[Any]
    ) -> Any:
        contracts = [contract_of(c, f"group[{i}]") for i, c in enumerate(members)]
        group = Group(tuple(contracts))
        for contract in contracts:
            hook.receiver.register(contract)
        self._refuse_inactive(hook, group.tables)
        ledgers = hook.ledgers(group.tables)
        windows = native(self.window, "window")
        if windows is not None:
            if not isinstance(windows, dict):
                raise ValueError("window: for a group, a mapping from table to [low, high]")
            windows = {
                table: window_of(group.contract(table), value, f"window[{table!r}]")
                for table, value in windows.items()
            }
        at_least = self._at_least(now, end)
        claims = group.claims(ledgers, now, limit=NO_LIMIT, windows=windows)
        names = ", ".join(group.tables)
        self.log.info("group %s: contracts registered; claims now %s", names, claims_line(claims))
        requests = plan_together(group, ledgers, at_least, windows=windows)
        if requests is None:
            raise AirflowSkipException(
                f"group {names}: exact at an instant no earlier than {at_least.isoformat()} "
                f"({claims_line(claims)}); nothing to deliver"
            )
        # A shape the run asks for a table (a full read after a refusal) replaces the planned
        # one: a log group's reset reads every table whole at once.
        asked = [
            next_extraction(ledgers[request.table], shape, request.until, window=request.window)
            if (shape := run_shape(context, request.table)) is not None
            else request
            for request in requests
        ]
        for request in asked:
            self.log.info("group %s: plan %s", names, _request_line(request))
        # One Planned per table: a group refused because another run's group publication came
        # first is superseded when that publication meets every table's part of the instant.
        cut = group.windows(windows)
        stated = [
            Planned(Requirement.exact(table, at_least, window=cut.get(table)), ledgers[table].head)
            for table in group.tables
        ]
        context["ti"].xcom_push(REQUIREMENT, [item.to_dict() for item in stated])
        return [request.to_dict() for request in asked]


def run_shape(context: Any, table: str) -> str | None:
    """The shape the run's conf asks for table under RUN_SHAPE, or None. A refusal that needs a
    full read prints the command triggering a run that asks for the table's complete shape."""
    dag_run = context.get("dag_run")
    conf = getattr(dag_run, "conf", None) or {}
    asked = conf.get(RUN_SHAPE) if isinstance(conf, Mapping) else None
    if asked is None:
        return None
    if not isinstance(asked, Mapping) or not all(isinstance(v, str) for v in asked.values()):
        raise ValueError(
            f"the run's conf {RUN_SHAPE}: a mapping from table to a shape's name, not {asked!r}"
        )
    return _shape(asked.get(table))


def full_read_command(dag_id: str, *contracts: Contract) -> str | None:
    """The command that triggers a run of dag_id reading each contract's complete shape (the
    first that reads the whole table; every table of a group at once), or None when a contract
    declares none."""
    shapes = {}
    for contract in contracts:
        complete = [
            name for name, shape in contract.shapes if shape.is_complete and not shape.is_window
        ]
        if not complete:
            return None
        shapes[contract.table] = complete[0]
    conf = json.dumps({RUN_SHAPE: shapes})
    return f"airflow dags trigger {shlex.quote(dag_id)} --conf {shlex.quote(conf)}"


def _shape(value: Any) -> str | None:
    """The shape asked for, or None; a template rendering nothing renders "" or "None"."""
    text = None if value is None else str(value).strip()
    return None if text in (None, "", "None") else text


def _request_line(request: ExtractionRequest) -> str:
    return (
        f"read shape {request.shape!r} at or after {request.until.isoformat()}"
        + ("" if request.window is None else f", window {iso_window(request.window)}")
        + ("" if request.since is None else f", since {iso(request.since)}")
        + (", issuing its position" if request.issue_position else "")
    )
