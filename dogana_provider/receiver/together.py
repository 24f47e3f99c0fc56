"""Tables together: one delivery per table of a Group, decided as one and published in one commit.

The same four steps as one table's (steps.py), over every table at once ("Tables together",
Delivery and Replay):

    1. replay: the group is answered with its recorded receipts when every manifest was accepted
       together (Group.replay, by the together digest), once every declared content_hash
       matches the bytes; a group whose every manifest a hold still holds is answered with that
       hold; anything else is a new decision
    2. preflight every table; one failure rejects the group (Group.apply with no row checks),
       recorded for every table, and nothing is staged; so does one table the receiver may not
       publish (activation.py): its receipt names what it lacks, the others' the table
    3. stage every file, check its rows and run its expectations; Group.apply decides them
       together, so one table's violated block rejects the group. A group that Group.apply
       would accept but for violated hold expectations is held whole (holds.py): one hold over
       every table, nothing published, no receipt, since publishing some of its tables would
       break the one instant they were read at
    4. one transaction locks every table's head (in name order, so two groups cannot deadlock),
       judges every table's activation again, decides the whole group again if any head or
       contract moved, then runs every plan and saves every ledger and receipt, or nothing

A held group is released (release_group) as step 4 is run: under every table's lock, each
table's activation judged again; if every head and contract is the one it was decided on, the
acceptances Group.apply makes of its checks as decided, the held ones passing as released (who,
when); else the group decided again from the same staged rows, as a stale decision is, the
released checks passing again, and a refusal recorded for every table. holds.discard ends a
group's hold as it ends any hold: a rejection per table.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dogana_core.gate import Check, Gate, Outcome, Receipt
from dogana_core.group import TOGETHER, Group
from dogana_core.manifest import Manifest
from dogana_provider.checks import rows as checks
from dogana_provider.checks.expectations import Consequence, Expectations
from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver import holds as holding
from dogana_provider.receiver.actions import add_missing_columns
from dogana_provider.receiver.activation import SOURCE_ACTIVE, SourceState
from dogana_provider.receiver.hashing import file_sha256
from dogana_provider.receiver.holds import HeldDelivery, Release
from dogana_provider.receiver.steps import Checked, Steps, stamp
from dogana_provider.receiver.store import RELEASED, HeldTable, Hold, TableState
from dogana_provider.receiver.transactions import transaction
from dogana_provider.report.table import when
from dogana_provider.staging import Staged, scratch


@dataclass(frozen=True)
class GroupDecision:
    """Steps 1 to 3 for a group: one receipt per table, in the group's order, and the staged
    files of an acceptance still to publish (empty otherwise).

    A held group's decision names its hold; its receipts are the decision as it stands (refused
    until a person releases it), not recorded, and its staged rows are the hold's."""

    group: Group
    receipts: tuple[Receipt, ...]
    staged: tuple[Staged, ...] = ()
    hold: str | None = None

    @property
    def to_publish(self) -> bool:
        return (
            self.hold is None
            and bool(self.staged)
            and all(r.outcome is Outcome.ACCEPTED for r in self.receipts)
        )


@dataclass(frozen=True)
class GroupCase:
    """What one decision on a group weighs: each table's state and manifest, the staged rows
    (in the group's order), the instant, each table's activation then, and for a held group's
    release its released checks."""

    group: Group
    states: Mapping[str, TableState]
    manifests: Mapping[str, Manifest]
    staged: tuple[Staged, ...]
    now: datetime
    active: Mapping[str, SourceState]
    released: Mapping[str, Release] | None = None


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
        held = {steps.store.held_for(connection, t, manifests[t].identity) for t in tables}
        discarded = {t: steps.store.discarded(connection, t, manifests[t].identity) for t in tables}
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
    discarding = {t: (holding.refused_as_discarded(h),) for t, h in discarded.items() if h}
    if discarding:  # a person discarded one of them: the group is refused, never held again
        receipts = group.apply(
            _ledgers(states),
            manifests,
            now=now,
            outcomes=discarding,
            sources=_sources(steps, group),
        )
        return GroupDecision(group, _save(steps, receipts))
    (hold_id,) = held if len(held) == 1 else (None,)
    if hold_id is not None:  # every table's rows wait for a person already: never staged twice
        still = _still_held(steps, group, states, hold_id, now)
        if still is not None:
            return still
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
    names = {table: steps.staging_name(manifests[table]) for table in tables}
    with ExitStack() as deciding:  # a gate killed before it hands back leaves them to sweep
        for name in names.values():
            deciding.enter_context(scratch.deciding(name))
        staged = tuple(
            steps.stage(paths[table], manifests[table], states[table].contract, names[table])
            for table in tables
        )
        with transaction(steps.connect, steps.dialect, write=False) as connection:
            case = GroupCase(group, states, manifests, staged, now, sources)
            receipts, checked = _evaluate(steps, connection, case)
        decision = GroupDecision(group, receipts, staged)
        if decision.to_publish:
            return decision
        if _holds_it(steps, group, states, manifests, checked, sources, now):
            return _hold(steps, group, states, receipts, staged, checked)
        _save(steps, receipts, staged)
        steps.discard(staged)
        return GroupDecision(group, receipts)


def publish_group(
    steps: Steps, decision: GroupDecision, origins: Mapping[str, Origin] | None = None
) -> tuple[Receipt, ...]:
    """Step 4 for a group's decision; origins: where each table's rows came from, by table
    (lineage_store.py)."""
    if decision.hold is not None:
        raise HeldDelivery(
            f"{', '.join(decision.group.tables)}: group held as {decision.hold}: nothing is "
            "published without a release (Receiver.release, or `dogana hold release`)"
        )
    if not decision.to_publish:
        return decision.receipts
    staged = decision.staged
    with transaction(steps.connect, steps.dialect) as connection:
        steps.lineage.ensure(connection)
        for receipt, files in zip(decision.receipts, staged, strict=True):
            add_missing_columns(connection, steps.dialect, files, receipt.contract)
    ddl_joins = steps.dialect.transactional_ddl
    with transaction(steps.connect, steps.dialect) as connection:
        receipts = _publish_locked(steps, connection, decision, origins or {})
        for files in staged:  # published, refused or replayed: the staged rows are spent
            steps.store.staging_recorded(connection, files.table)
        if ddl_joins:
            for files in staged:
                steps.drop(connection, files)
    if not ddl_joins:
        steps.discard(staged)
    return receipts


def _publish_locked(
    steps: Steps, connection: Any, decision: GroupDecision, origins: Mapping[str, Origin]
) -> tuple[Receipt, ...]:
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
        case = GroupCase(group, states, manifests, staged, now, sources)
        receipts = _decide_again(steps, connection, case)
    return _commit(steps, connection, states, receipts, staged, origins)


def _evaluate(
    steps: Steps, connection: Any, case: GroupCase
) -> tuple[tuple[Receipt, ...], dict[str, Checked]]:
    """Preflight, row checks of every staged file (and each table's SOURCE_ACTIVE, where the
    receiver requires activation), then Group.apply: all accepted or none. released, for a held
    group's release, passes each table's released checks again. Also each table's Checked
    (none when preflight refused the group)."""
    group, states, manifests, now = case.group, case.states, case.manifests, case.now
    sources = _sources(steps, group)
    if not all(
        check.passed
        for table in group.tables
        for check in Gate.preflight(states[table].ledger, manifests[table], now=now)
    ):
        return group.apply(_ledgers(states), manifests, now=now, sources=sources), {}
    checked = {
        table: steps.row_checks(connection, states[table], manifests[table], files)
        for table, files in zip(group.tables, case.staged, strict=True)
    }
    outcomes: dict[str, list[Check]] = {}
    for table, found in checked.items():
        release = (case.released or {}).get(table)
        outcomes[table] = list(found.checks if release is None else release.checks(found.checks))
        check = case.active[table].check()
        if check is not None:
            outcomes[table].append(check)
    receipts = group.apply(_ledgers(states), manifests, now=now, outcomes=outcomes, sources=sources)
    return receipts, checked


# Holding a group (holds.py) -----------------------------------------------------------------------


def _holds_it(
    steps: Steps,
    group: Group,
    states: Mapping[str, TableState],
    manifests: Mapping[str, Manifest],
    checked: Mapping[str, Checked],
    active: Mapping[str, SourceState],
    now: datetime,
) -> bool:
    """Whether a refused group is held: some table violates a hold expectation, and with every
    violated hold passing the group would be accepted (no protocol check, no block, no
    together check fails for another reason)."""
    held = {table: _held_names(found) for table, found in checked.items()}
    if not any(held.values()):
        return False
    outcomes: dict[str, list[Check]] = {}
    for table, found in checked.items():
        outcomes[table] = [
            Check(c.name, True, c.detail) if c.name in held[table] else c for c in found.checks
        ]
        check = active[table].check()
        if check is not None:
            outcomes[table].append(check)
    would = group.apply(
        _ledgers(states), manifests, now=now, outcomes=outcomes, sources=_sources(steps, group)
    )
    return all(receipt.outcome is Outcome.ACCEPTED for receipt in would)


def _held_names(checked: Checked) -> set[str]:
    return {
        result.name
        for result in checked.results
        if result.violated and result.consequence is Consequence.HOLD
    }


def _hold(
    steps: Steps,
    group: Group,
    states: Mapping[str, TableState],
    receipts: tuple[Receipt, ...],
    staged: tuple[Staged, ...],
    checked: Mapping[str, Checked],
) -> GroupDecision:
    """Hold the group whole: every table's delivery as decided, in the group's order."""
    tables = [
        HeldTable(
            receipt.table,
            files,
            receipt.manifest,
            states[receipt.table].contract,
            receipt.checks,
            Expectations(tuple(r.expectation for r in checked[receipt.table].results)),
            states[receipt.table].head,
        )
        for receipt, files in zip(receipts, staged, strict=True)
    ]
    return GroupDecision(group, receipts, hold=holding.hold(steps, tables).hold_id)


def _still_held(
    steps: Steps, group: Group, states: Mapping[str, TableState], hold_id: str, now: datetime
) -> GroupDecision | None:
    """A group decided again while held whole: answered with its hold, as it stands. None when
    the hold holds other tables than the group's (a new decision)."""
    found = holding.find(steps, hold_id)
    if not found.held or {held.table for held in found.tables} != set(group.tables):
        return None
    by_table = {held.table: held for held in found.tables}
    receipts = tuple(
        Gate.reject(
            states[table].ledger,
            by_table[table].manifest,
            by_table[table].checks,
            now=now,
            source=steps.source,
        )
        for table in group.tables
    )
    return GroupDecision(group, receipts, hold=hold_id)


def release_group(steps: Steps, hold_id: str, by: str) -> tuple[Receipt, ...]:
    """Publish a held group, released by the person ``by``, in one commit under every table's
    lock: as it would have been, or decided again if a table moved on (a refusal recorded for
    every table). One receipt per table, in the group's order."""
    by = holding.person(by)
    found: Hold = holding.held_still(steps, hold_id)
    group = Group(tuple(held.contract for held in found.tables))
    staged = tuple(held.staged for held in found.tables)
    with transaction(steps.connect, steps.dialect) as connection:
        steps.store.create(connection)  # a store made before released rows gets their table
        steps.lineage.ensure(connection)
    with transaction(steps.connect, steps.dialect) as connection:
        for held in found.tables:
            add_missing_columns(connection, steps.dialect, held.staged, held.contract)
    ddl_joins = steps.dialect.transactional_ddl
    with transaction(steps.connect, steps.dialect) as connection:
        states = {table: steps.locked_state(connection, table) for table in sorted(group.tables)}
        holding.still_held(steps, connection, hold_id)
        now = steps.clock()
        note = f"held as {hold_id}, released by {by} at {when(now)} UTC"
        releases = {held.table: Release(held, note) for held in found.tables}
        receipts = _release_locked(steps, connection, group, found, states, releases, now)
        for held in found.tables:
            holding.accept_rows(steps, connection, hold_id, held, by, now)
        outcome = str(receipts[0].outcome)  # a group's tables share one outcome
        steps.store.end_hold(connection, hold_id, RELEASED, by, stamp(now), None, outcome)
        for files in staged:  # published, refused or replayed: the staged rows are spent
            steps.store.staging_recorded(connection, files.table)
        if ddl_joins:
            for files in staged:
                steps.drop(connection, files)
    if not ddl_joins:  # a DROP would commit the publication early: drop after it instead
        steps.discard(staged)
    return receipts


def _release_locked(
    steps: Steps,
    connection: Any,
    group: Group,
    found: Hold,
    states: Mapping[str, TableState],
    releases: Mapping[str, Release],
    now: datetime,
) -> tuple[Receipt, ...]:
    """A held group's decision on its released checks, on the locked states, and its writes:
    every table published, or every table's refusal saved."""
    manifests = {held.table: held.manifest for held in found.tables}
    staged = tuple(held.staged for held in found.tables)
    sources = {
        table: steps.activation(connection, table, lock=True).at(now)
        for table in sorted(group.tables)
    }
    if not all(source.publishes for source in sources.values()):
        inactive = _inactive(steps, group, states, manifests, sources, now)
        for receipt in inactive:
            steps.save_refused(connection, receipt)
        return inactive
    fresh = all(
        states[held.table].head == held.base_publication_id
        and states[held.table].contract == held.contract
        for held in found.tables
    )
    if fresh:
        outcomes: dict[str, list[Check]] = {}
        for held in found.tables:
            released = releases[held.table].checks(held.checks)
            checks = [c for c in released if c.name != SOURCE_ACTIVE]
            active = sources[held.table].check()  # the table's activation as it is now
            outcomes[held.table] = [*checks, *([active] if active is not None else [])]
        receipts = group.apply(
            _ledgers(states), manifests, now=now, outcomes=outcomes, sources=_sources(steps, group)
        )
    else:  # decided again from the same staged rows, as a stale group decision is
        case = GroupCase(group, states, manifests, staged, now, sources, releases)
        receipts = _decide_again(steps, connection, case)
    return _commit(steps, connection, states, receipts, staged)


def _decide_again(steps: Steps, connection: Any, case: GroupCase) -> tuple[Receipt, ...]:
    """A group decided again on its locked states from the same staged rows, never a rebased
    plan: the replay of its recorded acceptances (refused if the bytes differ), else preflight,
    row checks and Group.apply (_evaluate)."""
    group, manifests = case.group, case.manifests
    replayed = group.replay(manifests, _recorded(steps, connection, manifests))
    if replayed is None:
        return _evaluate(steps, connection, case)[0]
    hashes = dict(zip(group.tables, (files.sha256 for files in case.staged), strict=True))
    refused = _other_bytes(manifests, hashes)
    if not refused:
        return replayed
    return _reject_all(steps, group, case.states, manifests, refused, case.now)


def _commit(
    steps: Steps,
    connection: Any,
    states: Mapping[str, TableState],
    receipts: tuple[Receipt, ...],
    staged: tuple[Staged, ...],
    origins: Mapping[str, Origin] | None = None,
) -> tuple[Receipt, ...]:
    """Step 4's writes of a group decided on its locked states: a replay writes nothing, a
    rejection every table's receipt, an acceptance every table's rows, ledger, receipt and
    lineage edge (from its origin, when known)."""
    if any(receipt.replayed for receipt in receipts):
        return receipts
    if not all(receipt.outcome is Outcome.ACCEPTED for receipt in receipts):
        for receipt in receipts:
            steps.store.save(connection, receipt)
        return receipts
    for receipt, files in zip(receipts, staged, strict=True):
        origin = (origins or {}).get(receipt.table)
        steps.apply_accepted(connection, states[receipt.table], receipt, files, origin=origin)
    return receipts


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
