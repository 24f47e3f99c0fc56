"""FreshnessOperator: every table's claims in one report; the task fails when one is too old.

A scheduled check, as dbt's ``source freshness`` is: for each table, its state, its three dates,
its age (how long ago complete_as_of was: rows added since may be missing) and the limits it is
held to, its last publication's quality expectations (``none_declared``, or how many were met and
each violation: a warned delivery is published, and this report says so), then one status per
table:

    PASS    complete_as_of no older than warn_after
    WARN    older than warn_after: logged, the task still succeeds
    ERROR   older than error_after, a region never proven (state unknown), or a table the
            receiver has no contract for: the task fails, and its message is the report

How old is too old is the reader's decision (Ledger.claims takes the limit on every call), so the
limits live here, beside the tables, not in the contracts. The state is stated with error_after
as the limit: ``expired`` means older than it. A windowed table is judged over a window.

    FreshnessOperator(
        task_id="freshness",
        tables={
            "orders": {"warn_after": timedelta(hours=26), "error_after": timedelta(hours=50)},
            "shipments": {"error_after": 7200, "window": ["2026-11-01", "2026-11-30"]},
        },
    )

It returns the report as a list of dicts, one per table (dates in ISO 8601, durations in
seconds), and pushes the report's text under the XCom key "report", also when it fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from dogana_core.claims import NO_LIMIT, Claims, State
from dogana_core.gate import Receipt
from dogana_core.ledger import Ledger
from dogana_provider.checks.expectations import Reported, reported
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.arguments import duration, native, window_of
from dogana_provider.receiver.receiver import UnknownTable
from dogana_provider.report.table import age as _age
from dogana_provider.report.table import text_table, when

PASS, WARN, ERROR = "PASS", "WARN", "ERROR"


@dataclass(frozen=True)
class TableFreshness:
    """One table's line of the report."""

    table: str
    state: str
    complete_as_of: datetime | None
    deletions_as_of: datetime | None
    exact_as_of: datetime | None
    age: timedelta | None
    warn_after: timedelta | None
    error_after: timedelta | None
    status: str
    reason: str
    expectations: Reported = field(default_factory=lambda: Reported(False))
    """What the last publication's receipt says of its quality expectations."""

    def to_dict(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return None if value is None else value.isoformat()

        def seconds(value: timedelta | None) -> float | None:
            return None if value is None else value.total_seconds()

        return {
            "table": self.table,
            "state": self.state,
            "complete_as_of": iso(self.complete_as_of),
            "deletions_as_of": iso(self.deletions_as_of),
            "exact_as_of": iso(self.exact_as_of),
            "age_seconds": seconds(self.age),
            "warn_after_seconds": seconds(self.warn_after),
            "error_after_seconds": seconds(self.error_after),
            "status": self.status,
            "reason": self.reason,
            "expectations": self.expectations.summary,
        }


def judge(
    table: str,
    ledger: Ledger | None,
    now: datetime,
    *,
    warn_after: timedelta | None,
    error_after: timedelta | None,
    window: Any = None,
    last: Receipt | None = None,
) -> TableFreshness:
    """A table's freshness at now; ledger None when the receiver has no contract for it; last
    the receipt of its last publication, whose expectations the report states."""
    if ledger is None:
        return TableFreshness(
            table, "missing", None, None, None, None, warn_after, error_after, ERROR,
            "no contract registered in the receiver: never delivered",
        )  # fmt: skip
    claims: Claims = ledger.claims(
        now, limit=NO_LIMIT if error_after is None else error_after, window=window
    )
    complete = claims.complete_as_of
    age = None if complete is None else max(now - complete, timedelta(0))
    where = "the whole table" if window is None else f"window [{window[0]}, {window[1]}]"
    if claims.state is State.UNKNOWN or age is None:
        status, reason = ERROR, f"unknown: part of {where} was never delivered"
    elif error_after is not None and age > error_after:
        status, reason = ERROR, f"complete as of {_age(age)} ago, more than {_age(error_after)}"
    elif warn_after is not None and age > warn_after:
        status, reason = WARN, f"complete as of {_age(age)} ago, more than {_age(warn_after)}"
    else:
        status, reason = PASS, f"complete as of {_age(age)} ago"
    return TableFreshness(
        table,
        str(claims.state),
        complete,
        claims.deletions_as_of,
        claims.exact_as_of,
        age,
        warn_after,
        error_after,
        status,
        reason,
        Reported(False) if last is None else reported(last),
    )


class FreshnessOperator(BaseOperator):
    """State every table's claims; fail, with a readable report, when one is older than its limit.

    :param tables: the tables to check: a list of names, held to warn_after and error_after, or a
        mapping from table to its own ``{"warn_after", "error_after", "window"}`` (each optional;
        durations as timedelta or seconds; window [low, high] of the window column) (templated).
    :param receiver_conn_id: the receiver's connection (sqlite, postgres or mysql).
    :param warn_after: the default age past which a table is reported WARN.
    :param error_after: the default age past which a table is reported ERROR and the task fails.
    """

    template_fields: Sequence[str] = ("tables", "receiver_conn_id")
    ui_color = "#fef7e0"

    def __init__(
        self,
        *,
        tables: Sequence[str] | Mapping[str, Mapping[str, Any]],
        receiver_conn_id: str = DoganaHook.default_conn_name,
        warn_after: timedelta | float | None = None,
        error_after: timedelta | float | None = timedelta(days=1),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tables = tables
        self.receiver_conn_id = receiver_conn_id
        self.warn_after = duration(warn_after, "warn_after")
        self.error_after = duration(error_after, "error_after")

    def execute(self, context: Any) -> list[dict[str, Any]]:
        hook = DoganaHook(self.receiver_conn_id)
        now = datetime.now(UTC)
        results = []
        for table, options in self._tables().items():
            try:
                ledger: Ledger | None = hook.ledgers([table])[table]
            except UnknownTable:
                ledger = None
            last = None
            if ledger is not None:
                with hook.committed() as connection:
                    last = hook.receiver.store.last_accepted(connection, table)
            window = options.get("window")
            results.append(
                judge(
                    table,
                    ledger,
                    now,
                    warn_after=duration(options.get("warn_after", self.warn_after), "warn_after"),
                    error_after=duration(
                        options.get("error_after", self.error_after), "error_after"
                    ),
                    window=None
                    if window is None or ledger is None
                    else window_of(ledger.contract, window, f"tables[{table!r}].window"),
                    last=last,
                )
            )
        report = freshness_report(results, now, self.receiver_conn_id)
        # Pushed before failing too, under key "report", for an alert to quote (a callback, say).
        context["ti"].xcom_push(key="report", value=report)
        errors = [r for r in results if r.status == ERROR]
        if errors:
            self.log.error("%s", report)
            raise AirflowFailException(report)
        if any(r.status == WARN for r in results):
            self.log.warning("%s", report)
        else:
            self.log.info("%s", report)
        return [result.to_dict() for result in results]

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: every table judged, with its claims (OpenLineage, the extra "openlineage")."""
        from dogana_provider.lineage import openlineage as lineage

        tables = self._tables()
        windows = {t: o["window"] for t, o in tables.items() if o.get("window") is not None}
        return lineage.lineage(
            inputs=lineage.receiver_tables(self.receiver_conn_id, list(tables), windows=windows)
        )

    get_openlineage_facets_on_failure = get_openlineage_facets_on_complete

    def _tables(self) -> dict[str, Mapping[str, Any]]:
        value = native(self.tables, "tables")
        if isinstance(value, Mapping):
            return {str(table): dict(options or {}) for table, options in value.items()}
        if isinstance(value, str):
            return {value: {}}
        return {str(table): {} for table in value}


def freshness_report(results: Sequence[TableFreshness], now: datetime, receiver: str) -> str:
    """The report: one line per table, then a summary with the reason of every WARN and ERROR."""
    header = ["table", "state", "complete as of", "deletions as of", "exact as of", "age"]
    header += ["warn after", "error after", "expectations", "status"]
    rows = [
        [
            r.table,
            r.state,
            when(r.complete_as_of),
            when(r.deletions_as_of),
            when(r.exact_as_of),
            "-" if r.age is None else _age(r.age),
            "-" if r.warn_after is None else _age(r.warn_after),
            "-" if r.error_after is None else _age(r.error_after),
            r.expectations.short,
            r.status,
        ]
        for r in results
    ]
    counts = {
        status: sum(1 for r in results if r.status == status) for status in (PASS, WARN, ERROR)
    }
    lines = [
        f"dogana freshness of {len(results)} tables in receiver {receiver!r} at {when(now)}",
        text_table(header, rows),
        f"{counts[PASS]} PASS, {counts[WARN]} WARN, {counts[ERROR]} ERROR",
    ]
    lines += [f"  {r.status} {r.table}: {r.reason}" for r in results if r.status != PASS]
    lines += [
        f"  VIOLATED {r.table}: {check.name} {check.detail}"
        for r in results
        for check in r.expectations.violations
    ]
    return "\n".join(lines)
