"""ActivateSourceOperator: a person activates a receiver's table from a DAG run they triggered.

What `dogana activate` does (receiver/activating.py), for people who work in Airflow's UI rather
than at a terminal: a DAG with this task and a form of params (dags/examples/activate_source.py)
is triggered by hand, its params naming the table, the owner, who authorized it until when, the
licence and purposes, the provenance, and who is activating it.

The worker runs as a service account, and a DAG's file is code anyone deploying it wrote, so
who is recorded is decided here (who_activates), never taken from the worker:

    - only a run a person triggered (run type manual) may activate: a scheduled or
      asset-triggered run is the DAG acting on its own, and a source would authorize itself;
    - who is activated_by (a param), else the user who triggered the run;
    - it must be a named person (activation.not_a_person): not svc_*, system, automation... and
      not the account the worker runs as;
    - the log keeps, beside it, the run it came from and the user Airflow says triggered it
      (a login, which may spell the person otherwise than activated_by does).

Given ``conformance``, a connector's configuration for the table's source (as ExtractOperator
takes it), the connector conformance suite (connectors/conformance.py) runs against that source
first, and its report, the checks passed and failed by name, is recorded with the activation:
a source is vouched for only once it is shown to keep the contract the deliveries rely on.

Everything activation requires is then checked by the receiver, as for the command: anything
missing, or a conformance check failed, fails the task (AirflowFailException, naming each part
and each failed check) and records nothing.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from dogana_provider.connectors import ConnectorError, connector_of
from dogana_provider.connectors.conformance import conformance as conformance_suite
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.arguments import duration, instant, native
from dogana_provider.receiver.activation import ActivationRefused, not_a_person, same_person
from dogana_provider.report.durations import parse_duration
from dogana_provider.report.status import activation_summary

MANUAL = "manual"


class ActivateSourceOperator(BaseOperator):
    """Activate a table of the receiver, recorded as the named person who triggered the run.

    :param table: the receiver's table (templated).
    :param receiver_conn_id: the receiver's connection.
    :param data_owner: who is accountable for the source: a named person other than who
        activates it (templated; `owner` is Airflow's own, the task's owner).
    :param authorized_by: the named person granting the authorization (templated).
    :param expires: when the authorization expires: an aware datetime or ISO 8601 string, or a
        duration from now (a timedelta, seconds, or text such as "365d") (templated).
    :param granted_at: when it was granted; default now (templated).
    :param licence: the rows' licence (templated).
    :param purposes: the purposes the rows may be used for, at least one: a list, or its JSON
        as a template renders it (templated).
    :param provenance: how the data is obtained (templated).
    :param activated_by: who activates it, e.g. "{{ params.activated_by }}"; default the user
        who triggered the run (templated).
    :param conformance: the table's source as a connector's configuration (its "kind" and
        options, as ExtractOperator's connector), run through the connector conformance suite
        before activating; its report is recorded with the activation, and a failed check
        refuses it (templated).
    :param conformance_stream: the connector's stream the suite reads; default the table.
    """

    template_fields: Sequence[str] = (
        "table",
        "receiver_conn_id",
        "data_owner",
        "authorized_by",
        "expires",
        "granted_at",
        "licence",
        "purposes",
        "provenance",
        "activated_by",
        "conformance",
        "conformance_stream",
    )

    def __init__(
        self,
        *,
        table: str,
        data_owner: str,
        authorized_by: str,
        expires: datetime | timedelta | float | str,
        licence: str,
        purposes: Sequence[str] | str,
        provenance: str,
        activated_by: str | None = None,
        granted_at: datetime | str | None = None,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        conformance: Mapping[str, Any] | str | None = None,
        conformance_stream: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.receiver_conn_id = receiver_conn_id
        self.data_owner = data_owner
        self.authorized_by = authorized_by
        self.expires = expires
        self.granted_at = granted_at
        self.licence = licence
        self.purposes = purposes
        self.provenance = provenance
        self.activated_by = activated_by
        self.conformance = conformance
        self.conformance_stream = conformance_stream

    def execute(self, context: Any) -> Any:
        run = context["dag_run"]
        who = who_activates(
            str(getattr(run.run_type, "value", run.run_type)),  # an enum, or its value
            getattr(run, "triggering_user_name", None),
            _text(self.activated_by),
            getpass.getuser(),
        )
        table = str(self.table).strip()
        report = self._conformance(table)
        now = datetime.now(UTC)
        hook = DoganaHook(self.receiver_conn_id)
        try:
            state = hook.receiver.sources.activate(
                table,
                owner=str(self.data_owner),
                authorized_by=str(self.authorized_by),
                granted_at=instant(self.granted_at, "granted_at"),
                expires_at=expiry(self.expires, now),
                licence=str(self.licence),
                purposes=_purposes(self.purposes),
                provenance=str(self.provenance),
                by=who,
                origin={
                    "dag_id": run.dag_id,
                    "run_id": run.run_id,
                    "triggered_by": getattr(run, "triggering_user_name", None),
                },
                conformance=report,
            )
        except ActivationRefused as exc:
            raise AirflowFailException(str(exc)) from None
        self.log.info("%s: %s, activated by %s", state.table, state.line(), who)
        if not hook.receiver.sources.required():
            self.log.warning(
                "receiver %r does not require activation: every table publishes "
                "(dogana require-activation %s on --by NAME)",
                self.receiver_conn_id,
                self.receiver_conn_id,
            )
        return activation_summary(state)

    def _conformance(self, table: str) -> dict[str, Any] | None:
        """The conformance suite's report on the table's source, each check logged; None
        without a source to check."""
        if self.conformance is None:
            return None
        try:
            connector = connector_of(native(self.conformance, "conformance"))
        except (ConnectorError, ValueError) as exc:
            raise AirflowFailException(f"conformance: {exc}") from None
        stream = _text(self.conformance_stream) or table
        with connector:
            report = conformance_suite(connector, stream)
        for check in report.checks:
            log = self.log.info if check.passed else self.log.error
            log(
                "conformance %s: %s (%s)",
                "pass" if check.passed else "FAIL",
                check.name,
                check.detail,
            )
        return report.to_dict()


def who_activates(
    run_type: str, triggered_by: str | None, activated_by: str | None, worker: str
) -> str:
    """Who an activation from a DAG run is recorded as, or AirflowFailException saying why
    nobody accountable can be named (the module's rules)."""
    if run_type != MANUAL:
        raise AirflowFailException(
            f"a {run_type} run cannot activate a source: that is the DAG authorizing its own "
            "source; a person triggers the DAG by hand, naming themselves in activated_by"
        )
    who = activated_by or triggered_by
    reason = not_a_person(who)
    if reason is not None:
        # The login that triggered the run is named when it is the one refused: an account
        # calling the REST API learns why its run cannot activate anything.
        whose = "activated_by" if activated_by else "the user who triggered the run"
        raise AirflowFailException(
            f"{whose}: a named person records an activation ({reason}); give your name "
            "in the run's params (activated_by)"
        )
    assert who is not None
    if same_person(who, worker):
        raise AirflowFailException(
            f"activated_by: {who!r} is the account the worker runs as, not a named person"
        )
    return who


def expiry(value: Any, now: datetime) -> datetime | None:
    """expires: an instant, or a duration from now (a timedelta, seconds, or text: 365d)."""
    if isinstance(value, datetime):
        return instant(value, "expires")
    if value is None or isinstance(value, timedelta | int | float):
        span = duration(value, "expires")
        return None if span is None else now + span
    text = str(value).strip()
    if not text or text == "None":
        return None
    try:
        return instant(text, "expires")
    except ValueError:
        pass
    try:
        return now + parse_duration(text)
    except (ValueError, OverflowError):
        raise ValueError(
            f"expires: {text!r} is neither an ISO 8601 instant with an offset nor a duration "
            "such as 365d"
        ) from None


def _purposes(value: Any) -> list[str]:
    """A list of purposes; a string that is no list's rendering is one purpose."""
    try:
        found = native(value, "purposes")
    except ValueError:
        return [str(value)]
    if found is None:
        return []
    if isinstance(found, str):
        return [found]
    if not isinstance(found, list | tuple):
        raise ValueError(f"purposes: expected a list of purposes, got {found!r}")
    return [str(purpose) for purpose in found]


def _text(value: Any) -> str | None:
    text = None if value is None else str(value).strip()
    return None if text in (None, "", "None") else text
