"""Held deliveries: what an expectation declared ``on_violation="hold"`` stops, kept whole until
a person releases or discards it.

A hold is the peer's quarantine for a whole delivery: publishing the rows that pass and keeping
the others would publish part of a read, and the dates would then claim rows the table lacks. So
nothing of it is published and nothing is recorded as decided; its staged rows wait, tied to the
decision:

    hold      one transaction under the lock of every table it holds (in name order, as
              together.py locks): each table's delivery as decided (manifest, contract, checks,
              expectation results, staged rows, the head it was decided on) in {prefix}_holds,
              its staging table marked HELD, which no sweep drops. No receipt, no ledger
              changed. The hold is named <table>-<n>, its first table's n-th.
    release   one transaction under the table's lock, the hold still held: if the head is still
              the one decided on, the acceptance the decision would have been, its held checks
              passed with a detail naming who released it and when; if the table moved on, the
              delivery decided again against the locked ledger from the same staged rows
              (Receiver's stale decision: replay, preflight, row checks; never a rebased plan),
              the released checks passing again as released, and a refusal recorded as a
              rejection. Either way the hold ends RELEASED, with who and when, and the staged
              rows are spent.
    discard   one transaction under the table's lock, the hold still held: a rejection receipt
              naming the held checks, who discarded it, when and why; the hold ends DISCARDED
              and the staged rows are dropped.

Who ends a hold is a person's name, given explicitly; it is never defaulted. Ending a hold that
is unknown or already ended raises NotHeld and changes nothing: the check is made under the
table's lock, so two people releasing at once publish it once.

A group (tables read together, together.py) is held whole, one hold over every table of it:
publishing some of its tables would break the one instant it was read at. together.py holds and
releases it, under every table's lock; discard here ends every table a hold has, one rejection
per table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from dogana_core.gate import RESERVED_CHECKS, Check, Gate, Outcome, Receipt
from dogana_provider.checks import released as released_rows
from dogana_provider.checks.expectations import Consequence, Violating, faulting, violating_rows
from dogana_provider.receiver.actions import add_missing_columns
from dogana_provider.receiver.steps import Steps, stamp
from dogana_provider.receiver.store import (
    DISCARDED,
    HOLDING,
    RELEASED,
    HeldTable,
    Hold,
    Released,
    TableState,
)
from dogana_provider.receiver.transactions import transaction
from dogana_provider.report.table import when

DecideHeld = Callable[[Any, TableState, HeldTable, "Release", datetime], Receipt]
"""The receiver's decision on a released delivery, on its table's locked state (Receiver)."""

NAME_LENGTH = 200  # the store's decided_by column


@dataclass(frozen=True)
class Violations:
    """One held expectation of a held table: its check as decided (its name, what was
    observed) and the staged rows it faults, up to a limit, with their count."""

    table: str
    check: Check
    rows: Violating


class NotHeld(LookupError):
    """A release or discard of a hold that does not exist, or that has already ended."""


class HeldDelivery(ValueError):
    """A held delivery's decision handed to publish: only a release publishes it."""


def person(by: object) -> str:
    """The name of who ends a hold: given explicitly, nonblank, one line; never a default."""
    if not isinstance(by, str) or not by.strip():
        raise ValueError("by: name the person who ends the hold (a release or a discard)")
    name = by.strip()
    if len(name) > NAME_LENGTH or any(ord(c) < 32 for c in name):
        raise ValueError(f"by: {name[:40]!r} is not a person's name (one line, at most 200)")
    return name


def hold(steps: Steps, tables: Sequence[HeldTable]) -> Hold:
    """Record a delivery (one table's, or a group's tables in the group's order) as held;
    nothing published, no receipt."""
    with transaction(steps.connect, steps.dialect) as connection:
        steps.store.create(connection)  # a store made before holds existed gets its table
    at = steps.clock()
    with transaction(steps.connect, steps.dialect) as connection:
        for table in sorted(held.table for held in tables):  # numbers each table's holds
            steps.locked_state(connection, table)
        numbers = [steps.store.next_hold(connection, held.table) for held in tables]
        hold_id = f"{tables[0].table}-{numbers[0]}"
        for position, (held, number) in enumerate(zip(tables, numbers, strict=True)):
            steps.store.add_hold(connection, hold_id, number, position, held, stamp(at))
            steps.store.staging_held(connection, held.staged.table)
    return Hold(hold_id, tuple(tables), at, HOLDING)


def holds(steps: Steps, table: str | None = None, *, held: bool = True) -> list[Hold]:
    with transaction(steps.connect, steps.dialect, write=False) as connection:
        return steps.store.holds_of(connection, table, held=held)


def find(steps: Steps, hold_id: str) -> Hold:
    """A hold by its id, ended or not; NotHeld when there is none."""
    with transaction(steps.connect, steps.dialect, write=False) as connection:
        found = steps.store.hold(connection, hold_id)
    if found is None:
        raise NotHeld(f"no hold {hold_id!r} in this receiver")
    return found


def violations(steps: Steps, found: Hold, limit: int) -> list[Violations]:
    """Each held expectation's violating staged rows, up to limit, and their count: read from
    the staged rows the hold keeps, by the expectation as it was declared when held."""
    shown = []
    with transaction(steps.connect, steps.dialect, write=False) as connection:
        for held in found.tables:
            declared = {expectation.name: expectation for expectation in held.expectations}
            for check in held.checks:
                if check.passed or check.name not in declared:
                    continue
                rows = violating_rows(
                    connection,
                    steps.dialect,
                    held.staged,
                    declared[check.name],
                    contract=held.contract,
                    limit=limit,
                )
                shown.append(Violations(held.table, check, rows))
    return shown


def release(steps: Steps, hold_id: str, by: str, decide: DecideHeld) -> tuple[Receipt, ...]:
    """Publish a held delivery as it would have been, or as decided again if the table moved on;
    decide (the receiver's) makes the decision on the locked state."""
    by = person(by)
    (held,) = held_still(steps, hold_id).tables
    with transaction(steps.connect, steps.dialect) as connection:
        steps.store.create(connection)  # a store made before released rows gets their table
        steps.lineage.ensure(connection)
    with transaction(steps.connect, steps.dialect) as connection:
        add_missing_columns(connection, steps.dialect, held.staged, held.contract)
    ddl_joins = steps.dialect.transactional_ddl
    with transaction(steps.connect, steps.dialect) as connection:
        state = steps.locked_state(connection, held.table)
        still_held(steps, connection, hold_id)
        now = steps.clock()
        released = Release(held, f"held as {hold_id}, released by {by} at {when(now)} UTC")
        receipt = decide(connection, state, held, released, now)
        accept_rows(steps, connection, hold_id, held, by, now)
        if receipt.outcome is Outcome.ACCEPTED:
            steps.apply_accepted(connection, state, receipt, held.staged, swap=True)
        elif receipt.outcome is Outcome.REJECTED:
            steps.save_refused(connection, receipt)
        steps.store.end_hold(
            connection, hold_id, RELEASED, by, stamp(now), None, str(receipt.outcome)
        )
        steps.store.staging_recorded(connection, held.staged.table)
        if ddl_joins:
            steps.drop(connection, held.staged)
    if not ddl_joins:  # a DROP would commit the publication early: drop after it instead
        steps.discard((held.staged,))
    return (receipt,)


def accept_rows(
    steps: Steps, connection: Any, hold_id: str, held: HeldTable, by: str, now: datetime
) -> None:
    """Record the rows each released expectation faults as released (checks/released.py), so
    that the same row with the same content never holds again for it, whatever becomes of this
    delivery: the person judged the rows, not the read. Rules that fault no row in particular
    are covered for this delivery alone."""
    failed = {check.name for check in held.checks if not check.passed}
    identity = (
        released_rows.row_key(steps.dialect, held.staged, held.contract),
        released_rows.row_hash(connection, steps.dialect, held.staged, held.contract),
    )
    for expectation in held.expectations:
        if expectation.name not in failed or expectation.on_violation is not Consequence.HOLD:
            continue
        faulted = faulting(
            connection, steps.dialect, held.staged, expectation, contract=held.contract
        )
        if isinstance(faulted, str):
            continue
        record = Released(
            held.table,
            expectation.name,
            released_rows.rule(expectation),
            hold_id,
            by,
            stamp(now),
        )
        steps.store.release_rows(connection, record, held.staged.table, faulted, identity)


@dataclass(frozen=True)
class Release:
    """What a person's release does to a held delivery's checks: those the hold held pass,
    their detail naming who released it and when."""

    held: HeldTable
    note: str

    @property
    def names(self) -> frozenset[str]:
        return frozenset(check.name for check in self.held.checks if not check.passed)

    def checks(self, checks: Sequence[Check]) -> tuple[Check, ...]:
        """The receiver's checks of a decision (the gate's own left out: Gate.evaluate adds
        them), the held ones passing as released."""
        names = self.names
        return tuple(
            Check(check.name, True, _noted(check.detail, self.note))
            if not check.passed and check.name in names
            else check
            for check in checks
            if check.name not in RESERVED_CHECKS
        )

    def covers(self, receipt: Receipt) -> bool:
        """Whether a rejection failed only checks this release released: decided again on
        release, the same rows violate the same held expectations."""
        failed = {check.name for check in receipt.failed}
        return receipt.outcome is Outcome.REJECTED and bool(failed) and failed <= self.names


def discard(steps: Steps, hold_id: str, by: str, reason: str = "") -> tuple[Receipt, ...]:
    """Refuse a held delivery: a rejection naming the held checks, who, when and why."""
    by = person(by)
    found = held_still(steps, hold_id)
    ddl_joins = steps.dialect.transactional_ddl
    receipts = []
    with transaction(steps.connect, steps.dialect) as connection:
        states = {
            t: steps.locked_state(connection, t) for t in sorted(h.table for h in found.tables)
        }
        still_held(steps, connection, hold_id)
        now = steps.clock()
        why = f": {reason.strip()}" if reason.strip() else ""
        note = f"held as {hold_id}, discarded by {by} at {when(now)} UTC{why}"
        for held in found.tables:
            checks = tuple(
                c if c.passed else replace(c, detail=_noted(c.detail, note)) for c in held.checks
            )
            receipt = Gate.reject(
                states[held.table].ledger, held.manifest, checks, now=now, source=steps.source
            )
            steps.store.save(connection, receipt)  # under the lock taken above
            receipts.append(receipt)
            steps.store.staging_recorded(connection, held.staged.table)
            if ddl_joins:
                steps.drop(connection, held.staged)
        steps.store.end_hold(
            connection,
            hold_id,
            DISCARDED,
            by,
            stamp(now),
            reason.strip() or None,
            str(Outcome.REJECTED),
        )
    if not ddl_joins:
        steps.discard(tuple(held.staged for held in found.tables))
    return tuple(receipts)


DISCARDED_CHECK = "discarded"
"""The receiver's check refusing a manifest a person discarded, whenever it comes again."""


def refused_as_discarded(found: Hold) -> Check:
    """The failed check of a delivery a person discarded, delivered again (a cleared gate, a
    retry, a sender's repeat): a discard is a person's decision about this manifest, so it is
    refused again, never held again as a new hold."""
    at = "" if found.decided_at is None else f" at {when(found.decided_at)} UTC"
    why = f" ({found.reason})" if found.reason else ""
    return Check(
        DISCARDED_CHECK,
        False,
        f"this manifest was held as {found.hold_id} and discarded by {found.decided_by}{at}"
        f"{why}: a discarded delivery is refused whenever it comes again; deliver a new read",
    )


def held_still(steps: Steps, hold_id: str) -> Hold:
    """A hold still held; NotHeld, saying how it ended, when it is not."""
    found = find(steps, hold_id)
    if not found.held:
        raise NotHeld(ended(found))
    return found


def still_held(steps: Steps, connection: Any, hold_id: str) -> None:
    """The hold, read again under its table's lock: another person may have ended it."""
    found = steps.store.hold(connection, hold_id)
    if found is None or not found.held:
        raise NotHeld(ended(found) if found else f"no hold {hold_id!r} in this receiver")


def ended(found: Hold) -> str:
    """How a hold ended, for the error refusing to end it again."""
    why = f" ({found.reason})" if found.reason else ""
    return (
        f"hold {found.hold_id} was {found.state} by {found.decided_by} at "
        f"{when(found.decided_at)} UTC{why}: it can be ended only once"
    )


def _noted(detail: str, note: str) -> str:
    return f"{detail}; {note}" if detail else note
