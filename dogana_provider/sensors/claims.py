"""ClaimsSensor: wait until a table, or a group read together, claims what a reader needs.

Exact at an instant (a report joining invoices and their lines needs both tables exact at one
instant), complete as of an instant, or fresher than a limit. Each poke reads every ledger in
one committed state through the receiver and logs one line: the state, the two dates, the
common instant, and what is still awaited. With deferrable=True the wait moves to the triggerer
(ClaimsTrigger) and frees the worker slot; by default it follows ``[operators]
default_deferrable``, as Airflow's own deferrable operators do. A table not registered yet is
awaited like one that claims nothing: its first delivery registers it.

It pushes what a reader uses, as plain JSON a template reads
(``{{ ti.xcom_pull('wait')['exact_as_of'] }}`` is an ISO 8601 string): the tables, the state,
complete_as_of, deletions_as_of and exact_as_of, and under "claims" the Claims' wire dict for a
program that wants every region (Claims.from_dict).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException

from dogana_core.claims import Claims
from dogana_provider import settings
from dogana_provider.hooks.dogana import DoganaHook, claims_dates
from dogana_provider.receiver.receiver import UnknownTable
from dogana_provider.triggers.claims import Awaited, ClaimsTrigger


class ClaimsSensor(BaseSensorOperator):
    """Wait for claims; pushes the claims that satisfied the wait (pushed()).

    :param tables: one table, or the tables of a group (their claims are taken together).
    :param receiver_conn_id: the receiver's connection (sqlite, postgres or mysql).
    :param exact_at: wait until every region is exact at one instant no earlier than this
        (templated).
    :param complete_as_of: wait until complete as of this instant or later (templated).
    :param max_age: wait until no region is unknown or older than this (timedelta or seconds).
    :param window: [low, high] of the window column, or {table: [low, high]} for a group
        (templated); None for whole tables.
    :param deferrable: wait in the triggerer instead of a worker slot; by default
        ``[operators] default_deferrable``.
    :param poke_interval, timeout, soft_fail, mode: as for every sensor; a timeout fails the
        task (or skips it with soft_fail) in both modes.
    """

    template_fields: Sequence[str] = (
        "tables",
        "receiver_conn_id",
        "exact_at",
        "complete_as_of",
        "window",
    )

    def __init__(
        self,
        *,
        tables: str | Sequence[str],
        receiver_conn_id: str = DoganaHook.default_conn_name,
        exact_at: datetime | str | None = None,
        complete_as_of: datetime | str | None = None,
        max_age: timedelta | float | None = None,
        window: Any = None,
        deferrable: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        given = [v for v in (exact_at, complete_as_of, max_age) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"{self.task_id}: give exactly one of exact_at, complete_as_of, max_age"
            )
        self.tables = tables
        self.receiver_conn_id = receiver_conn_id
        self.exact_at = exact_at
        self.complete_as_of = complete_as_of
        self.max_age = max_age
        self.window = window
        self.deferrable = settings.default_deferrable() if deferrable is None else deferrable

    def _awaited(self) -> Awaited:
        return Awaited.of(
            self.tables,
            exact_at=self.exact_at,
            complete_as_of=self.complete_as_of,
            max_age=self.max_age,
            window=self.window,
        )

    def poke(self, context: Any) -> PokeReturnValue:
        awaited = self._awaited()
        try:
            claims = awaited.read(DoganaHook(self.receiver_conn_id), datetime.now(UTC))
        except UnknownTable as exc:
            # The first delivery registers the table; until then there is nothing to claim.
            self.log.info("%s; awaiting %s", exc, awaited.describe())
            return PokeReturnValue(is_done=False)
        self.log.info("%s", awaited.line(claims))
        if not awaited.met(claims):
            # Nothing is pushed until the wait is met: the regions are not listed before.
            return PokeReturnValue(is_done=False)
        return PokeReturnValue(is_done=True, xcom_value=pushed(awaited, claims))

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        # Already met: no need to hand the wait to the triggerer.
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        deadline = datetime.now(UTC) + timedelta(seconds=self.timeout)
        self.defer(
            trigger=ClaimsTrigger(
                receiver_conn_id=self.receiver_conn_id,
                awaited=self._awaited().to_kwargs(),
                poll_interval=self.poke_interval,
                deadline=deadline.isoformat(),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: the tables waited for, with the claims that satisfied the wait (OpenLineage,
        the extra "openlineage")."""
        from dogana_provider.lineage import openlineage as lineage

        awaited = self._awaited()
        return lineage.lineage(
            inputs=lineage.receiver_tables(
                self.receiver_conn_id, list(awaited.tables), windows=awaited.windows
            )
        )

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> Any:
        if event is None:
            raise AirflowSensorTimeout(f"{self.task_id}: the trigger ended without an event")
        self.log.info("%s", event.get("line"))
        if event.get("status") == "met":
            return pushed(self._awaited(), Claims.from_dict(event["claims"]))
        message = f"{self.task_id}: timed out after {self.timeout}s; {event.get('line')}"
        if self.soft_fail:
            raise AirflowSkipException(message)
        raise AirflowSensorTimeout(message)


def pushed(awaited: Awaited, claims: Claims) -> dict[str, Any]:
    """The sensor's XCom: plain JSON for templates, and the wire dict for programs."""
    return {"tables": list(awaited.tables), **claims_dates(claims), "claims": claims.to_dict()}
