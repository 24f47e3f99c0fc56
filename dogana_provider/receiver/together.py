"""Tables together: one delivery per table of a Group, decided as one and published in one commit.

The same four steps as one table's (steps.py), over every table at once ("Tables together",
Delivery and Replay):

    1. replay: the group is answered with its recorded receipts when every manifest was accepted
       together (Group.replay, by the together digest), once every declared content_hash
       matches the bytes; anything else is a new decision
    2. preflight every table; one failure rejects the group (Group.apply with no row checks),
       recorded for every table, and nothing is staged; so does one table the receiver may not
       publish (activation.py): its receipt names what it lacks, the others' the table
    3. stage every file, check its rows and run its expectations; Group.apply decides them
       together, so one table's violated block rejects the group; so does a violated hold, its
       detail saying why (GROUP_NOT_HELD): holds.py holds one table's delivery, not a group's
    4. one transaction locks every table's head (in name order, so two groups cannot deadlock),
       judges every table's activation again, decides the whole group again if any head or
       contract moved, then runs every plan and saves every ledger and receipt, or nothing
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dogana_core.gate import Check, Gate, Outcome, Receipt
from dogana_core.group import TOGETHER, Group
from dogana_core.manifest import Manifest
from dogana_provider import checks
from dogana_provider.expectations import Consequence
from dogana_provider.receiver.actions import add_missing_columns
from dogana_provider.receiver.activation import SourceState
from dogana_provider.receiver.hashing import file_sha256
from dogana_provider.receiver.steps import Checked, Steps
from dogana_provider.receiver.store import TableState
from dogana_provider.receiver.transactions import transaction, transactional_ddl
from dogana_provider.staging import Staged


@dataclass(frozen=True)
class GroupDecision:
    """Steps 1 to 3 for a group: one receipt per table, in the group's order, and the staged
    files of an acceptance still to publish (empty otherwise)."""

    group: Group
    receipts: tuple[Receipt, ...]
    staged: tuple[Staged, ...] = ()

    @property
    def to_publish(self) -> bool:
        return bool(self.staged) and all(r.outcome is Outcome.ACCEPTED for r in self.receipts)


def decide_group(
    steps: Steps, group: Group, deliveries: Mapping[str, tuple[str | Path, Manifest]]
) -> GroupDecision:
    tables = group.tables
    paths = {table: str(deliveries[table][0]) for table in tables}
    manifests = {table: deliveries[table][1] for table in tables}
    with transaction(steps.connect, steps.dialect, write=False) as connection:
        states = {table: steps.state(connection, table) for table in tables}
        recorded = _recorded(steps, connection, manifests)
        activations = {table: steps.activation(connection, table) for table in tables}
    now = steps.clock()
    replayed = group.replay(manifests, recorded)
    if replayed is not None:
        hashes = {
            table: None if manifests[table].content_hash is None else file_sha256(paths[table])
            for table in tables
        }
        refused = _other_bytes(manifests, hashes)
        if not refused:
            return GroupDecision(group, replayed)
        receipts = _reject_all(steps, group, states, manifests, refused, now)
        return GroupDecision(group, _save(steps, receipts))
    if not all(
        check.passed
        for table in tables
        for check in Gate.preflight(states[table].ledger, manifests[table], now=now)
    ):
        receipts = group.apply(_ledgers(states), manifests, now=now, sources=_sources(steps, group))
        return GroupDecision(group, _save(steps, receipts))
    sources = {table: activation.at(now) for table, activation in activations.items()}
    if not all(source.publishes for source in sources.values()):
        inactive = _inactive(steps, group, states, manifests, sources, now)
        return GroupDecision(group, _save(steps, inactive))
    staged = tuple(
        steps.stage(paths[table], manifests[table], states[table].contract) for table in tables
    )
    with transaction(steps.connect, steps.dialect, write=False) as connection:
        receipts = _evaluate(steps, connection, group, states, manifests, staged, now, sources)
    decision = GroupDecision(group, receipts, staged)
    if decision.to_publish:
        return decision
    _save(steps, receipts, staged)
    steps.discard(staged)
    return GroupDecision(group, receipts)


def publish_group(steps: Steps, decision: GroupDecision) -> tuple[Receipt, ...]:
    if not decision.to_publish:
        return decision.receipts
    staged = decision.staged
    with transaction(steps.connect, steps.dialect) as connection:
        for receipt, files in zip(decision.receipts, staged, strict=True):
            add_missing_columns(connection, steps.dialect, files, receipt.contract)
    ddl_joins = transactional_ddl(steps.dialect)
    with transaction(steps.connect, steps.dialect) as connection:
        receipts = _publish_locked(steps, connection, decision)
        for files in staged:  # published, refused or replayed: the staged rows are spent
            steps.store.staging_recorded(connection, files.table)
        if ddl_joins:
            for files in staged:
                steps.drop(connection, files)
    if not ddl_joins:
        steps.discard(staged)
    return receipts


def _publish_locked(steps: Steps, connection: Any, decision: GroupDecision) -> tuple[Receipt, ...]:
    group, receipts, staged = decision.group, decision.receipts, decision.staged
    states: dict[str, TableState] = {}
    for table in sorted(group.tables):
        states[table] = steps.locked_state(connection, table)
    now = steps.clock()
    sources = {
        table: steps.activation(connection, table, lock=True).at(now)
        for table in sorted(group.tables)
    }
    if not all(source.publishes for source in sources.values()):
        manifests = {r.table: r.manifest for r in receipts}
        inactive = _inactive(steps, group, states, manifests, sources, now)
        for receipt in inactive:
            steps.save_refused(connection, receipt)
        return inactive
    stale = any(
        states[r.table].head != r.base_publication_id or states[r.table].contract != r.contract
        for r in receipts
    )
    if stale:
        manifests = {r.table: r.manifest for r in receipts}
        replayed = group.replay(manifests, _recorded(steps, connection, manifests))
        if replayed is not None:
            hashes = dict(zip(group.tables, (files.sha256 for files in staged), strict=True))
            refused = _other_bytes(manifests, hashes)
            if not refused:
                return replayed
            receipts = _reject_all(steps, group, states, manifests, refused, now)
        else:
            receipts = _evaluate(steps, connection, group, states, manifests, staged, now, sources)
        if not all(r.outcome is Outcome.ACCEPTED for r in receipts):
            for receipt in receipts:
                steps.store.save(connection, receipt)
            return receipts
    for receipt, files in zip(receipts, staged, strict=True):
        steps.apply_accepted(connection, states[receipt.table], receipt, files)
    return receipts


def _evaluate(
    steps: Steps,
    connection: Any,
    group: Group,
    states: Mapping[str, TableState],
    manifests: Mapping[str, Manifest],
    staged: tuple[Staged, ...],
    now: datetime,
    active: Mapping[str, SourceState],
) -> tuple[Receipt, ...]:
    """Preflight, row checks of every staged file (and each table's SOURCE_ACTIVE, where the
    receiver requires activation), then Group.apply: all accepted or none."""
    sources = _sources(steps, group)
    if not all(
        check.passed
        for table in group.tables
        for check in Gate.preflight(states[table].ledger, manifests[table], now=now)
    ):
        return group.apply(_ledgers(states), manifests, now=now, sources=sources)
    outcomes = {
        table: _not_held(steps.row_checks(connection, states[table], manifests[table], files))
        for table, files in zip(group.tables, staged, strict=True)
    }
    for table, outcome in outcomes.items():
        check = active[table].check()
        if check is not None:
            outcome.append(check)
    return group.apply(_ledgers(states), manifests, now=now, outcomes=outcomes, sources=sources)


GROUP_NOT_HELD = (
    "a group is not held (holds.py holds one table's delivery, not a group's): rejected as one, "
    "nothing published"
)


def _not_held(checked: Checked) -> list[Check]:
    """A table's checks in a group, each violated hold's failure saying why the group is
    rejected rather than held."""
    holds = {r.name for r in checked.results if r.violated and r.consequence is Consequence.HOLD}
    return [
        Check(c.name, False, f"{c.detail}; {GROUP_NOT_HELD}")
        if c.name in holds and not c.passed
        else c
        for c in checked.checks
    ]


def _recorded(steps: Steps, connection: Any, manifests: Mapping[str, Manifest]) -> list[Receipt]:
    found = (
        steps.store.accepted(connection, table, manifest.identity)
        for table, manifest in manifests.items()
    )
    return [receipt for receipt in found if receipt is not None]


def _other_bytes(
    manifests: Mapping[str, Manifest], hashes: Mapping[str, str | None]
) -> dict[str, str | None]:
    """Tables whose declared content_hash the bytes do not match, with the bytes' hash."""
    return {
        table: hashes[table]
        for table, manifest in manifests.items()
        if manifest.content_hash is not None and manifest.content_hash != hashes[table]
    }


def _reject_all(
    steps: Steps,
    group: Group,
    states: Mapping[str, TableState],
    manifests: Mapping[str, Manifest],
    refused: Mapping[str, str | None],
    now: datetime,
) -> tuple[Receipt, ...]:
    """A repeated group over other bytes: refused for every table, each naming why."""
    receipts = []
    for table in group.tables:
        manifest = manifests[table]
        if table in refused:
            check = checks.replayed_over_other_bytes(manifest, refused[table])
        else:
            check = Check(
                TOGETHER,
                False,
                "the group repeats an accepted group over other bytes in "
                + ", ".join(sorted(refused)),
            )
        receipts.append(
            Gate.reject(states[table].ledger, manifest, (check,), now=now, source=steps.source)
        )
    return tuple(receipts)


def _inactive(
    steps: Steps,
    group: Group,
    states: Mapping[str, TableState],
    manifests: Mapping[str, Manifest],
    sources: Mapping[str, SourceState],
    now: datetime,
) -> tuple[Receipt, ...]:
    """A group with a table the receiver may not publish, rejected whole: that table's receipt
    says what it lacks (SOURCE_ACTIVE), every other's names it under the group's check."""
    inactive = sorted(table for table, source in sources.items() if not source.publishes)
    receipts = []
    for table in group.tables:
        ledger, manifest = states[table].ledger, manifests[table]
        if table in inactive:
            receipts.append(steps.inactive(ledger, manifest, sources[table], now))
            continue
        check = Check(
            TOGETHER,
            False,
            f"the group's table{'s' if len(inactive) > 1 else ''} {', '.join(inactive)} may not "
            "be published: " + "; ".join(sources[other].detail() for other in inactive),
        )
        preflight = Gate.preflight(ledger, manifest, now=now)
        receipts.append(
            Gate.reject(ledger, manifest, (*preflight, check), now=now, source=steps.source)
        )
    return tuple(receipts)


def _save(
    steps: Steps, receipts: tuple[Receipt, ...], staged: tuple[Staged, ...] = ()
) -> tuple[Receipt, ...]:
    with transaction(steps.connect, steps.dialect) as connection:
        for receipt in receipts:
            steps.save_rejection(connection, receipt)
        for files in staged:
            steps.store.staging_recorded(connection, files.table)
    return receipts


def _ledgers(states: Mapping[str, TableState]) -> dict[str, Any]:
    return {table: state.ledger for table, state in states.items()}


def _sources(steps: Steps, group: Group) -> dict[str, str | None]:
    return {table: steps.source for table in group.tables}
