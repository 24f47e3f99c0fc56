"""The reference receiver: the spec's four steps, in order, on one SQL database.

    decide   1. replay lookup by manifest identity (a replay never reads the rows again)
             2. Gate.preflight; a failure is recorded with Gate.reject and nothing else happens;
                so is a table the receiver may not publish (activation.py, below)
             3. stage the file beside the published table, run every named row check on it
                (checks/rows.py) and pass them to Gate.evaluate
    publish  4. in ONE transaction: lock the table's head, compare it with the receipt's base,
                run the plan on the published table, save ledger.follow(receipt) and the receipt,
                drop the staging table

A table's quality expectations (checks/expectations.py), stored with its contract at registration,
run in step 3 with the row checks: a violated block fails its Check, a violated warn is published
and says so in its Check. A delivery whose only failures are violated holds goes to hold, the one
place that decides what holding means.

decide returns a Decision; an accepted one keeps its staging table for publish, so the two can
run as separate tasks (GateOperator, PublishOperator). A rejection is saved by decide and its
staging table dropped at once.

A stale decision (the head moved, or the contract changed, since decide read the ledger) is made
again inside publish's transaction, against the locked, current ledger and the same staged rows:
replay lookup, preflight and row checks again, never a rebased plan. Holding the lock while
deciding again means the new decision cannot go stale in turn.

Protocol refusals become rejection receipts, wrong types included (checks/rows.py's column_types);
operational failures (a lost connection, a full disk, a failing statement) raise, and the
transaction they interrupted rolls back.

The parts both this single-table path and a group's (together.py) use live in steps.py's Steps:
the two paths share it and nothing else.

A receiver that requires activation (activation.py) publishes nothing for a table that is not
active: decide rejects the delivery before staging it, its receipt's SOURCE_ACTIVE check naming
what is missing or when the authorization expired, and publish judges the table again under its
lock, since an authorization may expire, or a table be deactivated, between the two. An
accepted receipt carries SOURCE_ACTIVE passed; a receiver that does not require activation adds
no check. A replay is an answer, not a publication, and is given whatever the table's state.

A delivery whose only failures are violated hold expectations is held (hold, holds.py): nothing
is published and no receipt recorded; its staged rows wait, never swept, until a person releases
it (release: the acceptance it would have been, or, if the table moved on, decided again under
the lock as a stale decision is) or discards it (discard: a rejection). The decision handed back
names its hold, and publish refuses it (HeldDelivery). A group is held whole, one hold over
every table (together.py), and released by together.py in one commit.

sweep drops staging tables left behind: a crash between the commit that recorded a decision and
the drop (MariaDB cannot drop inside that commit), a gate that died before it handed its decision
back (staging/scratch.py), or a decision nobody published in time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, overload

from dogana_core.contract import Contract
from dogana_core.errors import InconsistentPublication, InvalidContract, SerializationError
from dogana_core.gate import CORE_CHECKS, Check, Gate, Outcome, Receipt
from dogana_core.group import Group
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_provider.checks import expectations
from dogana_provider.checks import rows as checks
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import Dialect, declared_types, dialect_for
from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver import holds as holding
from dogana_provider.receiver.actions import (
    add_missing_columns,
    count_published,
    existing_columns,
)
from dogana_provider.receiver.activating import Sources
from dogana_provider.receiver.activation import SOURCE_ACTIVE, SourceState
from dogana_provider.receiver.handover import staged_from_dict, staged_to_dict
from dogana_provider.receiver.hashing import file_sha256
from dogana_provider.receiver.holds import HeldDelivery, NotHeld, Release, Violations
from dogana_provider.receiver.lineage_store import LIMIT, Edge
from dogana_provider.receiver.steps import STAGING_PREFIX, Checked, Steps, UnknownTable, stamp
from dogana_provider.receiver.store import (
    HELD,
    LOADING,
    RECORDED,
    HeldTable,
    Hold,
    Store,
    TableState,
    Verified,
)
from dogana_provider.receiver.together import (
    GroupDecision,
    decide_group,
    publish_group,
    release_group,
)
from dogana_provider.receiver.transactions import (
    Connect,
    Reusing,
    transaction,
)
from dogana_provider.staging import Staged, drop, scratch
from dogana_provider.staging.sqlite import remove_orphans

__all__ = [
    "Decision",
    "Held",
    "HeldDelivery",
    "Hold",
    "NotForgettable",
    "NotHeld",
    "Receiver",
    "TableRead",
    "UnknownTable",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Decision:
    """The outcome of steps 1 to 3. staged is kept only for an acceptance still to publish.

    A held delivery's decision names its hold: its receipt is the decision as it stands (refused
    until a person releases it, its held checks failed) and is not recorded; its staged rows
    belong to the hold, not to this decision, so nothing that drops a decision's rows reaches
    them.
    """

    receipt: Receipt
    staged: Staged | None = None
    hold: str | None = None

    def __post_init__(self) -> None:
        if self.hold is not None and self.staged is not None:
            raise ValueError("Decision: a held delivery's staged rows are its hold's")

    @property
    def to_publish(self) -> bool:
        return self.receipt.outcome is Outcome.ACCEPTED and self.staged is not None

    @property
    def held(self) -> bool:
        return self.hold is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON for XCom: the receipt's wire dict, where the staged rows wait, and the hold."""
        return {
            "receipt": self.receipt.to_dict(),
            "staged": None if self.staged is None else staged_to_dict(self.staged),
            "hold": self.hold,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Decision:
        # Without "hold": a decision handed over before holds existed.
        if not isinstance(data, dict) or set(data) - {"hold"} != {"receipt", "staged"}:
            raise SerializationError("Decision", "expected an object with receipt and staged")
        staged = None if data["staged"] is None else staged_from_dict(data["staged"])
        hold = data.get("hold")
        if hold is not None and not isinstance(hold, str):
            raise SerializationError("Decision.hold", f"{hold!r} is not a hold id")
        return cls(Receipt.from_dict(data["receipt"]), staged, hold)


@dataclass(frozen=True)
class Held:
    """A delivery to hold (Receiver.hold): its protocol checks passed, no block is violated, and
    at least one hold is. rejection is the receipt with every check, the holds failed."""

    state: TableState
    manifest: Manifest
    staged: Staged
    rejection: Receipt
    checked: Checked
    now: datetime


@dataclass(frozen=True)
class TableRead:
    """A table's ledger and rows read in one transaction: one committed state."""

    ledger: Ledger
    columns: tuple[str, ...]
    rows: Iterator[tuple[Any, ...]]


class NotForgettable(ValueError):
    """A table that forget refuses: it has published, or a delivery of it is held."""


class Receiver:
    """Decides and publishes deliveries into one database, reached through connect()."""

    def __init__(
        self,
        connect: Connect,
        dialect: Dialect,
        *,
        prefix: str = "dogana",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        source: str | None = None,
        require_activation: bool = False,
    ) -> None:
        """require_activation=True switches the receiver's stored setting on at the next
        registration, when it is off (activating.py); it never switches it off."""
        # transactions.py: a connection per delivery step, not one per transaction
        connect = Reusing(connect, lendable=dialect.lendable)
        self.steps = Steps(connect, dialect, Store(dialect, prefix), clock, source)
        self.connect = connect
        self.dialect = dialect
        self.store = self.steps.store
        self.clock = clock
        self.source = source
        self.sources = Sources(self.steps, require_activation=require_activation)

    @classmethod
    def from_hook(cls, hook: Any, **options: Any) -> Receiver:
        """A receiver over a common-sql DbApiHook: its connection id selects the database."""
        return cls(hook.get_conn, dialect_for(hook), **options)

    # Contracts --------------------------------------------------------------------------------

    def register(self, contract: Contract, expectations: Expectations | None = None) -> Ledger:
        """Register a table's contract, or evolve it (Ledger.with_contract) under the lock.

        A contract changing a fixed field of a table with history raises InvalidContract and
        changes nothing (Contract evolution). expectations, when given, replace the table's
        declared ones in the same commit (empty: none declared); None leaves them as they are,
        so a task that does not declare them never drops a block another declared.
        """
        return self._registering(contract, expectations, lambda connection: None)[0]

    def register_active(self, contract: Contract) -> tuple[Ledger, SourceState]:
        """register, and the table's activation now (Sources.state), read in the
        registration's transaction: what a plan task asks before it plans."""
        ledger, state = self._registering(
            contract, None, lambda connection: self.sources.state_on(connection, contract.table)
        )
        return ledger, self.sources.noted(state)

    def _registering(
        self,
        contract: Contract,
        expectations: Expectations | None,
        also: Callable[[Any], T],
    ) -> tuple[Ledger, T]:
        """register, and also(connection) in its transaction after its writes."""
        # Every registration (every plan task) runs this: the receiver's tables, once made,
        # are found by one catalog query in the registration's own transaction; only a store
        # missing any of them is created first, in a transaction of its own (DDL commits at
        # once on MariaDB).
        with transaction(self.connect, self.dialect) as connection:
            if self.steps.created(connection):
                self.sources.configure(connection)
                ledger = self._register(connection, contract, expectations)
                return ledger, also(connection)
        with transaction(self.connect, self.dialect) as connection:
            self.store.create(connection)
            self.sources.create(connection)
            self.steps.lineage.create(connection)
        with transaction(self.connect, self.dialect) as connection:
            ledger = self._register(connection, contract, expectations)
            return ledger, also(connection)

    def _register(
        self, connection: Any, contract: Contract, expectations: Expectations | None
    ) -> Ledger:
        """register's writes, in the caller's transaction, on a store that exists."""
        state = self.store.state(connection, contract.table, lock=True)
        if state is None or state.contract.table != contract.table:
            # A registered table's name was compared with every other when it was registered;
            # a case twin (found where the store compares names without case) was not.
            self._refuse_collision(connection, contract.table)
            # A row lock needs a row: insert it unless a concurrent registration just did,
            # then lock whichever was committed and evolve it like any registered table.
            self.store.insert_table(connection, Ledger.new(contract))
            state = self.store.state(connection, contract.table, lock=True)
            assert state is not None, "the row was inserted or committed by another"
        ledger = state.ledger.with_contract(contract)
        if ledger.contract != state.contract:  # the same contract again changes nothing
            self.store.update_table(connection, ledger)
        if expectations is not None:
            self.store.set_expectations(connection, contract.table, expectations)
        return ledger

    def declare(self, table: str, expectations: Expectations) -> None:
        """Replace a registered table's quality expectations (empty: none declared)."""
        with transaction(self.connect, self.dialect) as connection:
            self.steps.locked_state(connection, table)
            self.store.set_expectations(connection, table, expectations)

    def expectations(self, table: str) -> Expectations:
        """The table's declared expectations (empty: none declared)."""
        with transaction(self.connect, self.dialect, write=False) as connection:
            self.steps.state(connection, table)
            return self.store.expectations(connection, table)

    def _refuse_collision(self, connection: Any, table: str) -> None:
        """Refuse a table that names, in this database, another registered table or one of the
        receiver's own (its store's tables, its staging tables).

        Names are compared as the database compares them (Dialect.compared_name): on SQLite orders
        and ORDERS are one table, whose rows two ledgers would each claim as theirs.
        """
        key = self.dialect.compared_name
        own = list(self.steps.own_names)
        own.append(f"{STAGING_PREFIX}*")
        registered = [name for name in self.store.table_names(connection) if name != table]
        for name in [*registered, *own]:
            if name.endswith("*"):
                clash = key(table).startswith(key(name[:-1]))
            else:
                clash = key(table) == key(name)
            if clash:
                whose = "a registered table" if name in registered else "the receiver's own"
                how = " without regard to case" if self.dialect.folds_names else ""
                raise InvalidContract(
                    f"Contract.table: {table!r} names the same {self.dialect} table as "
                    f"{name!r}, {whose} ({self.dialect} compares table names{how})"
                )

    def ledger(self, table: str) -> Ledger:
        with transaction(self.connect, self.dialect, write=False) as connection:
            return self.steps.state(connection, table).ledger

    # The four steps ---------------------------------------------------------------------------

    def receive(
        self,
        path: str | Path,
        manifest: Manifest,
        *,
        table: str | None = None,
        origin: Origin | None = None,
    ) -> Receipt:
        """All four steps: decide, then publish an acceptance. A held delivery's receipt is its
        decision as it stands, not recorded (decide's Decision names the hold)."""
        decision = self.decide(path, manifest, table=table)
        return self.publish(decision, origin=origin) if decision.to_publish else decision.receipt

    @contextmanager
    def step(self) -> Iterator[None]:
        """One step of a delivery (a gate's sweep, registration and decision; a publication):
        a receiver's own table the catalog did not show is not looked up again until it ends
        (own_tables.py). decide and publish are each one step by themselves."""
        with self.steps.own_tables.step():
            yield

    def decide(self, path: str | Path, manifest: Manifest, *, table: str | None = None) -> Decision:
        """Steps 1 to 3; table defaults to the one the manifest names."""
        with self.step():
            return self._decide(path, manifest, table)

    def _decide(self, path: str | Path, manifest: Manifest, table: str | None) -> Decision:
        table = manifest.table if table is None else table
        path = str(path)
        with transaction(self.connect, self.dialect, write=False) as connection:
            read = self.steps.decision(connection, table, manifest.identity)
        state, original, activation = read.state, read.accepted, read.activation
        declared = read.expectations
        held, discarded = read.held, read.discarded
        now = self.clock()
        if original is not None:
            # Bytes are hashed only to check a declared content_hash; rows are never read.
            sha256 = None if manifest.content_hash is None else file_sha256(path)
            return Decision(self._replay(state, manifest, original, sha256, now))
        if discarded is not None:  # a person's decision stands: refused, never held again
            refused = (
                *Gate.preflight(state.ledger, manifest, now=now),
                holding.refused_as_discarded(discarded),
            )
            return Decision(self._reject(state.ledger, manifest, refused, now))
        if held is not None:  # its rows wait for a person already: never staged twice
            return self._still_held(state, held, now)
        preflight = Gate.preflight(state.ledger, manifest, now=now)
        if not all(check.passed for check in preflight):
            return Decision(self._reject(state.ledger, manifest, preflight, now))
        source = activation.at(now)
        if not source.publishes:
            receipt = self.steps.inactive(state.ledger, manifest, source, now)
            with transaction(self.connect, self.dialect) as connection:
                self.steps.save_rejection(connection, receipt)
            return Decision(receipt)
        name = self.steps.staging_name(manifest)
        with scratch.deciding(name):  # a gate killed before it hands back leaves it to sweep
            staged = self.steps.stage(path, manifest, state.contract, name)
            receipt, checked = self._evaluate(state, manifest, staged, now, source, declared)
            if receipt.outcome is Outcome.REJECTED:
                if expectations.held(checked.results, (check.name for check in receipt.failed)):
                    return self.hold(Held(state, manifest, staged, receipt, checked, now))
                return self._rejected(receipt, staged)
            return Decision(receipt, staged)

    def hold(self, held: Held) -> Decision:
        """Hold a delivery whose protocol checks passed and whose only rejecting failures are
        violated hold expectations (holds.py): nothing is published and no receipt recorded;
        its staged rows wait, never swept, tied to the hold, until a person releases or
        discards it. The decision handed back names the hold; its receipt is the decision as
        it stands (refused until released), recorded only with the hold."""
        declared = Expectations(tuple(result.expectation for result in held.checked.results))
        table = HeldTable(
            held.state.table,
            held.staged,
            held.manifest,
            held.state.contract,
            held.rejection.checks,
            declared,
            held.state.head,
        )
        return Decision(held.rejection, hold=holding.hold(self.steps, (table,)).hold_id)

    def _rejected(self, receipt: Receipt, staged: Staged) -> Decision:
        """Record a rejection decided on staged rows, and drop them."""
        with transaction(self.connect, self.dialect) as connection:
            self.steps.save_rejection(connection, receipt)
            self.store.staging_recorded(connection, staged.table)
        self.discard(Decision(receipt, staged))
        return Decision(receipt)

    def publish(
        self, decision: Decision, *, table: str | None = None, origin: Origin | None = None
    ) -> Receipt:
        """Step 4 for an accepted decision; any other decision is returned as it is.

        table, when given, is the one table the caller publishes: a decision for another is
        refused (refuse), whatever its outcome, so a sender never chooses the table. origin:
        where its rows came from, for the publication's lineage edge (lineage_store.py).
        """
        with self.step():
            return self._publish(decision, table, origin)

    def _publish(self, decision: Decision, table: str | None, origin: Origin | None) -> Receipt:
        if decision.held:
            raise HeldDelivery(
                f"{decision.receipt.table}: delivery {decision.receipt.manifest.identity[:12]} is "
                f"held as {decision.hold}: nothing is published without a release "
                "(Receiver.release, or `dogana hold release`)"
            )
        if table is not None and decision.receipt.table != table:
            return self.refuse(decision, table)
        if not decision.to_publish:
            return decision.receipt
        staged = decision.staged
        assert staged is not None
        contract = decision.receipt.contract
        # The published table's missing columns are added before the lock on its head is
        # taken, in a transaction of their own; where a writer's transaction locks the whole
        # database from its start (no row locks: SQLite), the publication's transaction holds
        # nothing longer for them, and they join it.
        joined = not self.dialect.row_locks
        if not joined:
            with transaction(self.connect, self.dialect) as connection:
                self.steps.lineage.ensure(connection)
                add_missing_columns(connection, self.dialect, staged, contract)
        ddl_joins = self.dialect.transactional_ddl
        with transaction(self.connect, self.dialect) as connection:
            declared = None
            if joined:
                self.steps.lineage.ensure(connection)
                # Nothing else alters the table until this transaction ends: one read of its
                # columns serves their addition, widening and the upsert's UPDATE.
                declared = declared_types(connection, self.dialect, contract.table)
                add_missing_columns(connection, self.dialect, staged, contract, declared=declared)
            receipt = self._publish_locked(connection, decision.receipt, staged, origin, declared)
            # Whatever the outcome (published, refused, replayed), the staged rows are spent:
            # dropped in this transaction where DDL joins it, else marked for the drop after.
            if ddl_joins:
                self.steps.drop(connection, staged)
            else:
                self.store.staging_recorded(connection, staged.table)
        if not ddl_joins:  # a DROP would commit the publication early: drop after it instead
            self.discard(decision)
        return receipt

    def refuse(self, decision: Decision, table: str) -> Receipt:
        """Refuse a decision for another table than ``table``, the one the caller is configured
        for: a rejection filed under ``table`` whose manifest check names both tables, and the
        decision's staged rows dropped. Neither table's rows or ledger change."""
        manifest = decision.receipt.manifest
        now = self.clock()
        with transaction(self.connect, self.dialect, write=False) as connection:
            ledger = self.steps.state(connection, table).ledger
        receipt = self._reject(ledger, manifest, Gate.preflight(ledger, manifest, now=now), now)
        self.discard(decision)
        return receipt

    def _publish_locked(
        self,
        connection: Any,
        receipt: Receipt,
        staged: Staged,
        origin: Origin | None,
        declared: dict[str, str] | None = None,
    ) -> Receipt:
        """Lock the head, judge the table's activation again, decide again if stale, then plan,
        ledger and receipt; no commit. declared: the published columns' declared types, read in
        this transaction (add_missing_columns), or None."""
        state, activation = self.steps.locked_with_activation(connection, receipt.table)
        now = self.clock()
        source = activation.at(now)
        if not source.publishes:
            refused = self.steps.inactive(state.ledger, receipt.manifest, source, now)
            self.steps.save_refused(connection, refused)
            return refused
        if state.head != receipt.base_publication_id or state.contract != receipt.contract:
            receipt = self._decide_again(connection, state, receipt.manifest, staged, source)
            if receipt.outcome is Outcome.REJECTED:
                self.store.save(connection, receipt)
            if receipt.outcome is not Outcome.ACCEPTED:
                return receipt
        self.steps.apply_accepted(
            connection, state, receipt, staged, swap=True, origin=origin, declared=declared
        )
        return receipt

    def receive_group(
        self,
        group: Group,
        deliveries: Mapping[str, tuple[str | Path, Manifest]],
        origins: Mapping[str, Origin] | None = None,
    ) -> tuple[Receipt, ...]:
        """A group's deliveries (file and manifest by table): decided and published as one."""
        return self.publish_group(self.decide_group(group, deliveries), origins)

    def decide_group(
        self, group: Group, deliveries: Mapping[str, tuple[str | Path, Manifest]]
    ) -> GroupDecision:
        return decide_group(self.steps, group, deliveries)

    def publish_group(
        self, decision: GroupDecision, origins: Mapping[str, Origin] | None = None
    ) -> tuple[Receipt, ...]:
        """Step 4 for a group; origins: where each table's rows came from, by table."""
        return publish_group(self.steps, decision, origins)

    # Lineage (lineage_store.py) ---------------------------------------------------------------

    def lineage(
        self,
        *,
        output: str | None = None,
        source: str | None = None,
        source_conn_id: str | None = None,
        since: datetime | None = None,
        limit: int = LIMIT,
    ) -> list[Edge]:
        """The publications into the table output, or from the source (of source_conn_id,
        when given), at or after since, newest first, at most limit; Unfiltered when neither
        output nor source is named."""
        with transaction(self.connect, self.dialect, write=False) as connection:
            return self.steps.lineage.edges(
                connection,
                output=output,
                source=source,
                source_conn_id=source_conn_id,
                since=since,
                limit=limit,
            )

    def sweep(self, older_than: timedelta) -> tuple[str, ...]:
        """Drop the staging tables no publication will use; return their names.

        Those whose decision is recorded (a crash came between that commit and the drop, which
        MariaDB cannot join to it), those whose load was killed (MariaDB committed the CREATE;
        the loader's session lock is gone), those whose gate died or failed on this machine
        before it handed its decision back (its mark is free: staging/scratch.py), and those
        created more than older_than ago (a decision nobody published: publishing it after the
        sweep raises and changes nothing). Never one a live loader holds, nor a held delivery's
        (holds.py), whatever its age. Only this store's staging tables are considered. Safe to
        repeat and to run beside gates and publishers, as long as older_than is longer than a
        decision waits for its publish.

        The batch files of MariaDB loads killed on this machine go too (staging/scratch.py), and the
        private files of SQLite preloads whose loader is gone (staging/sqlite.py).
        """
        for path in scratch.remove_abandoned() + remove_orphans(scratch.folder()):
            log.info("removed %s: left by a killed load", path)
        scratch.remove_stale_marks(older_than.total_seconds())
        try:
            cutoff = stamp(self.clock() - older_than)
        except OverflowError:  # older than the calendar (no limit): none is old enough
            cutoff = ""
        with transaction(self.connect, self.dialect, write=False) as connection:
            noted = self.store.staging_tables(connection)
        swept = []
        for staging, _table, created_at, state in noted:
            if state == HELD:
                continue  # a held delivery's rows wait for a person, however long
            abandoned = scratch.abandoned(staging)
            young = created_at > cutoff
            if young and state not in (RECORDED, LOADING) and not abandoned:
                continue  # a decision that may still be published
            with transaction(self.connect, self.dialect) as connection:
                if young and state == LOADING and not self._loader_gone(connection, staging):
                    continue
                drop(connection, self.dialect, staging)
                self.store.remove_staging(connection, staging)
            swept.append(staging)
        return tuple(swept)

    def _loader_gone(self, connection: Any, staging: str) -> bool:
        """Whether a LOADING staging table's loader is gone: its lock, taken here, proves it,
        and the state is read again under it, since a loader marks its table loaded before it
        lets go (Dialect.lock_name)."""
        if not self.dialect.try_lock_name(connection, staging, wait=1.0):
            return False
        return self.store.staging_state(connection, staging) == LOADING

    # Held deliveries (holds.py) ---------------------------------------------------------------

    def holds(self, table: str | None = None, *, held: bool = True) -> list[Hold]:
        """The held deliveries, oldest first (those holding table, when given); held=False
        lists the ended ones too."""
        return holding.holds(self.steps, table, held=held)

    def find_hold(self, hold_id: str) -> Hold:
        """A hold by its id, ended or not; NotHeld when this receiver has none by that id."""
        return holding.find(self.steps, hold_id)

    def violations(self, hold: Hold, limit: int) -> list[Violations]:
        """The staged rows violating each held expectation of a hold still held: up to limit
        of them, and their count."""
        return holding.violations(self.steps, hold, limit)

    def release(self, hold_id: str, *, by: str) -> tuple[Receipt, ...]:
        """Publish a held delivery, released by the person ``by``: as it would have been, or
        decided again if its table moved on (a refusal recorded as a rejection). One receipt
        per table it holds: a group's is published in one commit (together.py). NotHeld,
        changing nothing, when it is unknown or already ended."""
        if holding.find(self.steps, hold_id).grouped:
            return release_group(self.steps, hold_id, by)
        return holding.release(self.steps, hold_id, by, self._decide_held)

    @overload
    def discard(self, decision: Decision) -> None: ...

    @overload
    def discard(self, decision: str, *, by: str, reason: str = "") -> tuple[Receipt, ...]: ...

    def discard(
        self, decision: Decision | str, *, by: str | None = None, reason: str = ""
    ) -> tuple[Receipt, ...] | None:
        """Give up a decision, or end a hold.

        A Decision: its staging table is dropped and nothing is recorded (after a rejection, or
        to give up an acceptance without publishing it). A hold id: the held delivery is
        refused by the person ``by``, a rejection receipt per table naming the held checks, who,
        when and the reason; its staged rows are dropped. NotHeld, changing nothing, when the
        hold is unknown or already ended.
        """
        if isinstance(decision, str):
            return holding.discard(self.steps, decision, by or "", reason)  # "": no name given
        if decision.staged is not None:
            self.steps.discard((decision.staged,))
        return None

    # Reading ----------------------------------------------------------------------------------

    def verify(self, table: str) -> Verified:
        """The stored ledger is Ledger.from_receipts over the stored receipts, head included, and
        the published rows agree with the latest acceptance where that is cheap to see.

        After a complete read (of the whole table, or of a window) the published rows (in that
        window) are exactly the rows it delivered, so their count must be its row count; a
        table whose rows something else changed raises InconsistentPublication as well.
        """
        with transaction(self.connect, self.dialect, write=False) as connection:
            verified = self.store.verify(connection, table)
            last = self.store.last_accepted(connection, table)
            if last is None or not last.contract.shape(last.manifest.shape).is_complete:
                return verified
            window = last.manifest.window
            counted = count_published(connection, self.dialect, last.contract, window)
        if counted != last.manifest.rows:
            where = "" if window is None else f" in window [{window[0]}, {window[1]}]"
            raise InconsistentPublication(
                f"table {table!r}: {counted} published rows{where}, but its latest publication "
                f"{last.publication_id} is a complete read of {last.manifest.rows} rows"
            )
        return verified

    def forget(self, table: str) -> int:
        """Remove a table that never published, as if it had never been registered: a mistake's
        leftover (a wrong source, a misspelt table or key) that would otherwise stay unknown in
        every status and freshness report. Its rejected receipts and ended holds go with it, in
        one transaction; its activation record stays, since a person granted it for the name.
        Returns how many receipts were removed.

        Refuses (NotForgettable), changing nothing, a table that has published (its receipts
        prove what readers were given) or that a delivery holds for a person (end it first).
        """
        with transaction(self.connect, self.dialect) as connection:
            state = self.store.state(connection, table, lock=True)
            if state is None:
                raise UnknownTable(f"table {table!r} is not registered in this receiver")
            published = state.ledger.publication_id
            if published is not None:
                raise NotForgettable(
                    f"table {table!r} has published (last publication {published}): its "
                    "receipts are the proof of what its readers were given, so it is never "
                    "forgotten; a table that never published can be"
                )
            held = self.store.holds_of(connection, table)
            if held:
                raise NotForgettable(
                    f"table {table!r} is held as {', '.join(h.hold_id for h in held)}: a person "
                    "ends that first (dogana hold discard RECEIVER ID --by NAME)"
                )
            return self.store.delete_table(connection, table)

    def receipts(self, table: str) -> list[Receipt]:
        with transaction(self.connect, self.dialect, write=False) as connection:
            return list(self.store.receipts_of(connection, table))

    @contextmanager
    def read(self, table: str) -> Iterator[TableRead]:
        """The ledger and the published rows, from one committed state; rows are streamed."""
        with transaction(self.connect, self.dialect, write=False) as connection:
            self.dialect.lock_before_snapshot(connection, table)
            state = self.steps.state(connection, table)
            columns = tuple(existing_columns(connection, self.dialect, table))
            cursor = self.dialect.streaming_cursor(connection)
            try:
                cursor.execute(f"SELECT * FROM {self.dialect.quote(table)}")
                yield TableRead(state.ledger, columns, _stream(cursor))
            finally:
                cursor.close()

    # Steps' parts -----------------------------------------------------------------------------

    def _replay(
        self,
        state: TableState,
        manifest: Manifest,
        original: Receipt,
        sha256: str | None,
        now: datetime,
    ) -> Receipt:
        """Step 1: the original acceptance replayed, unless the declared bytes differ."""
        if manifest.content_hash is None or manifest.content_hash == sha256:
            return original.replay()
        refused = checks.replayed_over_other_bytes(manifest, sha256)
        return self._reject(state.ledger, manifest, (refused,), now)

    def _reject(
        self, ledger: Ledger, manifest: Manifest, found: tuple[Check, ...], now: datetime
    ) -> Receipt:
        receipt = Gate.reject(ledger, manifest, found, now=now, source=self.source)
        with transaction(self.connect, self.dialect) as connection:
            self.steps.save_rejection(connection, receipt)
        return receipt

    def _evaluate(
        self,
        state: TableState,
        manifest: Manifest,
        staged: Staged,
        now: datetime,
        source: SourceState,
        declared: Expectations | None = None,
    ) -> tuple[Receipt, Checked]:
        with transaction(self.connect, self.dialect, write=False) as connection:
            return self._evaluate_on(connection, state, manifest, staged, now, source, declared)

    def _evaluate_on(
        self,
        connection: Any,
        state: TableState,
        manifest: Manifest,
        staged: Staged,
        now: datetime,
        source: SourceState,
        declared: Expectations | None = None,
    ) -> tuple[Receipt, Checked]:
        """declared: the expectations, where the decision read them (else read here)."""
        checked = self.steps.row_checks(connection, state, manifest, staged, declared)
        active = source.check()
        if active is not None:
            checked.rows.append(active)
        receipt = Gate.evaluate(state.ledger, manifest, checked.checks, now=now, source=self.source)
        return receipt, checked

    def _still_held(self, state: TableState, hold_id: str, now: datetime) -> Decision:
        """A delivery decided again while held: answered with its hold, as it stands."""
        (held,) = [
            one for one in holding.find(self.steps, hold_id).tables if one.table == state.table
        ]
        receipt = Gate.reject(state.ledger, held.manifest, held.checks, now=now, source=self.source)
        return Decision(receipt, hold=hold_id)

    def _decide_held(
        self,
        connection: Any,
        state: TableState,
        held: HeldTable,
        release: Release,
        now: datetime,
    ) -> Receipt:
        """A held delivery decided on its release, on the table's locked state: refused when
        the table may not be published now (activation); the acceptance it would have been
        when the head is the one it was decided on, its held checks released; else decided
        again as a stale decision is (never a rebased plan), its held checks released again,
        and any other failure refusing it."""
        # The table's activation as it is now: a table no longer active refuses the release.
        source = self.steps.activation(connection, state.table, lock=True).at(now)
        if state.head == held.base_publication_id and state.contract == held.contract:
            found = [c for c in release.checks(held.checks) if c.name != SOURCE_ACTIVE]
            active = source.check()
            checks = (*found, active) if active is not None else tuple(found)
        else:
            receipt = self._decide_again(connection, state, held.manifest, held.staged, source)
            if receipt.outcome is not Outcome.REJECTED:
                return receipt  # accepted now, or a replay (published meanwhile)
            checks = release.checks(receipt.checks)
            if not release.covers(receipt):  # refused for more than what was released
                core = [check for check in receipt.checks if check.name in CORE_CHECKS]
                return Gate.reject(
                    state.ledger, held.manifest, (*core, *checks), now=now, source=self.source
                )
        return Gate.evaluate(state.ledger, held.manifest, checks, now=now, source=self.source)

    def _decide_again(
        self,
        connection: Any,
        state: TableState,
        manifest: Manifest,
        staged: Staged,
        source: SourceState,
    ) -> Receipt:
        """A stale decision made again under the lock: replay, preflight, checks, evaluate."""
        now = self.clock()
        original = self.store.accepted(connection, state.table, manifest.identity)
        if original is not None:
            if manifest.content_hash is None or manifest.content_hash == staged.sha256:
                return original.replay()
            refused = checks.replayed_over_other_bytes(manifest, staged.sha256)
            return Gate.reject(state.ledger, manifest, (refused,), now=now, source=self.source)
        preflight = Gate.preflight(state.ledger, manifest, now=now)
        if not all(check.passed for check in preflight):
            return Gate.reject(state.ledger, manifest, preflight, now=now, source=self.source)
        # A hold found only now, under the publication's lock, is a rejection like a block's:
        # nothing here can keep the staged rows for a person.
        return self._evaluate_on(connection, state, manifest, staged, now, source)[0]


def _stream(cursor: Any, size: int = 1000) -> Iterator[tuple[Any, ...]]:
    while rows := cursor.fetchmany(size):
        for row in rows:
            yield tuple(row)
