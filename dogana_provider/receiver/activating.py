"""Activating a receiver's tables, and switching its require_activation setting (activation.py).

    receiver.sources.require(True, by="alice")       the receiver requires activation from now on
    receiver.sources.activate("orders", owner="bob", authorized_by="carol", expires_at=...,
                              licence="internal", purposes=("billing",),
                              provenance="nightly read of the ERP replica", by="alice")
    receiver.sources.state("orders")                 pending / active until X / expired at X
    receiver.sources.deactivate("orders", by="alice", reason="the contract with the ERP ended")

Each is one transaction, recorded in the append-only log with who and when (activation_store.py).
A table may be activated before it is registered: the record is by table name, and the table's
first delivery finds it. Activation refuses (ActivationRefused, naming each thing missing) and
records nothing unless the record holds everything activation.py requires.

Switching the setting on is a tightening anyone may record; switching it off lets every table
publish, so it needs a named person, as an activation does. A receiver built with
require_activation=True (DoganaHook, from the provider's [dogana] require_activation) switches
it on at registration when it is off, and never off.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from dogana_core.contract import check_identifier
from dogana_provider.receiver.activation import (
    ActivationRefused,
    SourceRecord,
    SourceState,
    Status,
    not_a_person,
)
from dogana_provider.receiver.activation_store import (
    ACTIVATED,
    DEACTIVATED,
    RECEIVER_WIDE,
    LogEntry,
)
from dogana_provider.receiver.steps import Steps
from dogana_provider.receiver.transactions import transaction

CONFIGURED = "[dogana] require_activation"
"""Who switched the setting on for a configured receiver (Receiver(require_activation))."""


class Sources:
    """One receiver's activation records and its require_activation setting."""

    def __init__(self, steps: Steps, *, require_activation: bool = False) -> None:
        self.steps = steps
        self.store = steps.sources
        self.configured = require_activation

    def create(self, connection: Any) -> None:
        """The tables, and the setting switched on if the receiver was built to require it;
        in the transaction that creates the store's own (Receiver.register)."""
        self.store.create(connection)
        self.configure(connection)

    def configure(self, connection: Any) -> None:
        """Switch the setting on if the receiver was built to require it and it is off; every
        registration does, on a store whose tables exist."""
        if self.configured and not self.store.required(connection):
            now = self.steps.clock()
            self.store.set_required(connection, True, CONFIGURED, now)

    # Reading --------------------------------------------------------------------------------

    def required(self) -> bool:
        with self._reading() as connection:
            return self.store.required(connection)

    def state(self, table: str) -> SourceState:
        """The table's activation now. An expired authorization found here is recorded in the
        log, once, as a refused delivery records it."""
        with self._reading() as connection:
            state = self.state_on(connection, table)
        return self.noted(state)

    def state_on(self, connection: Any, table: str) -> SourceState:
        """The table's activation now, read in the caller's transaction; noted, once that ended,
        records what state records."""
        return self.steps.activation(connection, table).at(self.steps.clock())

    def noted(self, state: SourceState) -> SourceState:
        """state, an expired authorization recorded in the log in a transaction of its own."""
        if state.required and state.status is Status.EXPIRED:
            with transaction(self.steps.connect, self.steps.dialect) as connection:
                self.steps.note_expiry(connection, state.table, state.at)
        return state

    def log(self, table: str | None = None) -> list[LogEntry]:
        """A table's log, oldest first; without a table, the setting's."""
        with self._reading() as connection:
            return self.store.log(connection, RECEIVER_WIDE if table is None else table)

    # Writing --------------------------------------------------------------------------------

    def require(self, on: bool, *, by: str) -> None:
        """Switch the receiver's require_activation setting on or off, recorded with who and
        when. Off needs a named person: it lets every table publish."""
        reason = not_a_person(by) if not on else (None if by.strip() else "no name")
        if reason is not None:
            raise ActivationRefused(
                "*", [f"who switches require_activation off, a named person ({reason})"]
            )
        with self._writing() as connection:
            self.store.set_required(connection, on, by.strip(), self.steps.clock())

    def activate(
        self,
        table: str,
        *,
        owner: str,
        authorized_by: str,
        expires_at: datetime | None,
        licence: str,
        purposes: Iterable[str],
        provenance: str,
        by: str,
        granted_at: datetime | None = None,
        origin: Mapping[str, Any] | None = None,
        conformance: Mapping[str, Any] | None = None,
    ) -> SourceState:
        """Activate a table: its record written whole and the activation logged, or
        ActivationRefused naming everything missing, and nothing written. origin, where the
        activation was recorded from (a DAG run), is kept in the log line beside it; so is
        conformance, the report of the connector conformance suite run against the table's
        source (ConformanceReport.to_dict()), whose every failed check refuses, named."""
        check_identifier(table, "table")
        now = self.steps.clock()
        record = SourceRecord(
            table,
            Status.ACTIVE,
            owner=_text(owner),
            registered_by=_text(by),
            granted_by=_text(authorized_by),
            granted_at=now if granted_at is None else granted_at,
            expires_at=expires_at,
            licence=_text(licence),
            purposes=tuple(p.strip() for p in purposes if p.strip()),
            provenance=_text(provenance),
            changed_at=now,
        )
        missing = record.missing(now, unexpired=True)
        verdicts = None if conformance is None else _verdicts(conformance)
        if verdicts is not None and (verdicts["failed"] or not verdicts["passed"]):
            failed = ", ".join(verdicts["failed"]) or "no check ran"
            missing.append(f"a source passing the connector conformance suite (failed: {failed})")
        if missing:
            raise ActivationRefused(table, missing)
        assert record.registered_by is not None
        with self._writing() as connection:
            self.store.record(connection, table, lock=True)
            self.store.put(connection, record)
            detail = _detail(record)
            if origin is not None:
                detail["origin"] = origin
            if verdicts is not None:
                detail["conformance"] = verdicts
            self.store.append(connection, table, ACTIVATED, record.registered_by, now, now, detail)
            return self.steps.activation(connection, table).at(now)

    def deactivate(self, table: str, *, by: str, reason: str) -> SourceState:
        """Make a table pending again, keeping its record; recorded with who, when and why."""
        check_identifier(table, "table")
        if not by.strip() or not reason.strip():
            missing = [what for what, text in (("who", by), ("why", reason)) if not text.strip()]
            raise ActivationRefused(
                table, [f"who and why: a deactivation records {' and '.join(missing)}"]
            )
        now = self.steps.clock()
        with self._writing() as connection:
            record = self.store.record(connection, table, lock=True) or SourceRecord(table)
            record = replace(record, status=Status.PENDING, changed_at=now)
            self.store.put(connection, record)
            detail = {**_detail(record), "reason": reason.strip()}
            self.store.append(connection, table, DEACTIVATED, by.strip(), now, now, detail)
            return self.steps.activation(connection, table).at(now)

    def _reading(self) -> Any:
        return transaction(self.steps.connect, self.steps.dialect, write=False)

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """A write transaction on a store whose tables exist: an activation may come before
        the table's first registration, and a store may predate these tables."""
        with transaction(self.steps.connect, self.steps.dialect) as connection:
            self.steps.store.create(connection)
            self.create(connection)
        with transaction(self.steps.connect, self.steps.dialect) as connection:
            yield connection


def _text(value: str | None) -> str | None:
    text = None if value is None else value.strip()
    return text or None


def _verdicts(report: Mapping[str, Any]) -> dict[str, Any]:
    """A conformance report as the log keeps it: the connector and stream, and the checks
    passed and failed by name."""
    checks = list(report.get("checks") or [])
    return {
        "connector": report.get("connector"),
        "stream": report.get("stream"),
        "passed": [str(check["name"]) for check in checks if check["passed"]],
        "failed": [str(check["name"]) for check in checks if not check["passed"]],
    }


def _detail(record: SourceRecord) -> dict[str, Any]:
    """The record as the log keeps it beside each line: what was on record then."""

    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "status": str(record.status),
        "owner": record.owner,
        "registered_by": record.registered_by,
        "granted_by": record.granted_by,
        "granted_at": iso(record.granted_at),
        "expires_at": iso(record.expires_at),
        "licence": record.licence,
        "purposes": list(record.purposes),
        "provenance": record.provenance,
    }
