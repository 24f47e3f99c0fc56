"""The parts of the four steps that one table's path (receiver.py) and a group's (together.py)
share: reading and locking a table's state and its activation, staging a file, checking its rows,
saving a rejection, applying an acceptance, and dropping a staging table.

Both paths hold one Steps and call only its public methods, so neither reaches into the other;
receiver.py composes together.py, never the reverse.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from dogana_core.contract import Contract
from dogana_core.errors import InvalidContract
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_provider.checks import expectations, released
from dogana_provider.checks import rows as checks
from dogana_provider.checks.expectations import (
    Consequence,
    Expectations,
    Result,
    RowCountExpectation,
)
from dogana_provider.dialects import Dialect
from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver.actions import (
    create_published,
    execute_plan,
    index_staged_keys,
    widen_columns,
)
from dogana_provider.receiver.activation import SOURCE_ACTIVE, Activation, SourceState, Status
from dogana_provider.receiver.activation_store import EXPIRED, SourceStore
from dogana_provider.receiver.lineage_store import Edge, LineageStore
from dogana_provider.receiver.own_tables import OwnTables
from dogana_provider.receiver.store import Hold, Store, TableState, stamp
from dogana_provider.receiver.transactions import Connect, transaction, unlent
from dogana_provider.schema import conformance
from dogana_provider.schema.versions import SchemaVersions
from dogana_provider.staging import PARALLEL_LOADS, Staged, create_table, drop, stage_file
from dogana_provider.staging.parts import Parts, load_parts, parts_of
from dogana_provider.staging.sqlite import attaching, preloaded

STAGING_PREFIX = "dogana_stage_"


@dataclass(frozen=True)
class Checked:
    """A staged delivery's row checks and its expectations' results (expectations.Result)."""

    rows: list[Check]
    results: list[Result]

    @property
    def checks(self) -> list[Check]:
        """What the gate evaluates: the row checks, then one Check per expectation (or the one
        saying none is declared). A violated hold fails until Receiver.hold decides it."""
        return [*self.rows, *expectations.checks_of(self.results)]


@dataclass(frozen=True)
class Deciding:
    """What Receiver.decide reads of a table, at one instant (Steps.decision)."""

    state: TableState
    accepted: Receipt | None
    activation: Activation
    held: str | None
    discarded: Hold | None
    expectations: Expectations | None
    """The table's declared expectations (None: to be read where the rows are checked)."""


class UnknownTable(LookupError):
    """A delivery or a read for a table no contract was registered for."""


@dataclass(frozen=True)
class Steps:
    """One database's store, reached through connect(), with the receiver's clock and source."""

    connect: Connect
    dialect: Dialect
    store: Store
    clock: Callable[[], datetime]
    source: str | None = None

    @property
    def own_names(self) -> tuple[str, ...]:
        """Every table (and index) the receiver keeps of its own under its prefix: no contract's
        table may take one of these names, and dropping a store drops them all."""
        return (
            *self.store.own_names,
            *self.sources.own_names,
            *self.lineage.own_names,
            *self.schema_versions.own_names,
        )

    @property
    def created_names(self) -> tuple[str, ...]:
        """The tables and indexes a registration creates when missing (Receiver.register)."""
        return (*self.store.own_names, *self.sources.own_names, *self.lineage.own_names)

    def created(self, connection: Any) -> bool:
        """Whether every table and index a registration creates exists (own_tables.py)."""
        return self.own_tables.exist(connection, self.created_names)

    @cached_property
    def own_tables(self) -> OwnTables:
        """Every own table and index, looked up together by the stores (own_tables.py)."""
        return OwnTables(self.dialect, self.own_names)

    def __post_init__(self) -> None:
        for store in (self.store, self.sources, self.lineage, self.schema_versions):
            store.own_tables = self.own_tables

    def state(self, connection: Any, table: str) -> TableState:
        state = self.store.state(connection, table)
        if state is None:
            raise UnknownTable(f"no contract is registered for table {table!r}")
        return state

    def decision(self, connection: Any, table: str, manifest_identity: str) -> Deciding:
        """What a decision reads, in one statement: the table's state, the manifest's
        acceptance, its holds and the table's activation (Store.decided)."""
        read = self.store.decided(
            connection, table, manifest_identity, self.sources.joined(connection, table)
        )
        if read.state is None:
            raise UnknownTable(f"no contract is registered for table {table!r}")
        required, record = (
            (False, None)
            if read.joined is None
            else self.sources.required_and_record_of(read.joined)
        )
        activation = Activation(table, required, record)
        return Deciding(
            read.state, read.accepted, activation, read.held, read.discarded, read.expectations
        )

    def locked_state(self, connection: Any, table: str) -> TableState:
        state = self.store.state(connection, table, lock=True)
        if state is None:
            raise UnknownTable(f"table {table!r} was unregistered before publishing")
        return state

    def locked_with_activation(self, connection: Any, table: str) -> tuple[TableState, Activation]:
        """locked_state, then activation(lock=True): in one statement where the dialect locks
        the rows of an outer join (Store.locked), else in two, the table's row locked first."""
        joined = self.sources.joined(connection, table)
        if joined is None or not self.dialect.locks_outer_join:
            state = self.locked_state(connection, table)
            return state, self.activation(connection, table, lock=True)
        read = self.store.locked(connection, table, joined)
        if read.state is None:
            raise UnknownTable(f"table {table!r} was unregistered before publishing")
        assert read.joined is not None
        required, record = self.sources.required_and_record_of(read.joined)
        return read.state, Activation(table, required, record)

    def save_rejection(self, connection: Any, receipt: Receipt) -> None:
        # The lock numbers receipts without gaps or duplicates under concurrent writers.
        self.store.state(connection, receipt.table, lock=True)
        self.save_refused(connection, receipt)

    def save_refused(self, connection: Any, receipt: Receipt) -> None:
        """Save a rejection under the table's lock; one refused for an expired authorization
        also records the expiry in the log, once (note_expiry)."""
        self.store.save(connection, receipt)
        if SOURCE_ACTIVE in {check.name for check in receipt.failed}:
            self.note_expiry(connection, receipt.table, receipt.received_at)

    # Activation (activation.py) --------------------------------------------------------------

    @cached_property
    def sources(self) -> SourceStore:
        return SourceStore(self.dialect, self.store.prefix)

    # Lineage (lineage_store.py) -------------------------------------------------------------

    @cached_property
    def lineage(self) -> LineageStore:
        return LineageStore(self.dialect, self.store.prefix)

    def activation(self, connection: Any, table: str, *, lock: bool = False) -> Activation:
        """Whether the receiver requires activation, and the table's record; lock=True locks
        the record, so that a deactivation waits for the publication that read it."""
        required, record = self.sources.required_and_record(connection, table, lock=lock)
        return Activation(table, required, record)

    def inactive(
        self, ledger: Ledger, manifest: Manifest, state: SourceState, now: datetime
    ) -> Receipt:
        """The rejection of a delivery for a table the receiver may not publish: the core
        checks against the ledger, then SOURCE_ACTIVE saying what is missing or the expiry."""
        refused = state.check()
        assert refused is not None and not refused.passed
        checks = (*Gate.preflight(ledger, manifest, now=now), refused)
        return Gate.reject(ledger, manifest, checks, now=now, source=self.source)

    def note_expiry(self, connection: Any, table: str, now: datetime) -> None:
        """Record in the log that the table's authorization expired, once per authorization:
        who granted it and when it lapsed (the log's at is the expiry, not when it was seen)."""
        state = self.activation(connection, table, lock=True).at(now)
        if state.status is not Status.EXPIRED or state.record is None:
            return
        record = state.record
        assert record.expires_at is not None and record.granted_by is not None
        if self.sources.last_event(connection, table) == (EXPIRED, record.expires_at):
            return
        self.sources.append(
            connection,
            table,
            EXPIRED,
            record.granted_by,
            record.expires_at,
            now,
            {"granted_at": record.granted_at and record.granted_at.isoformat()},
        )

    def staging_name(self, manifest: Manifest) -> str:
        """A new staging table's name for manifest; its decision is marked under way
        (scratch.deciding) by this name before stage creates it."""
        return f"{STAGING_PREFIX}{manifest.identity[:16]}_{secrets.token_hex(4)}"

    def stage(
        self, path: str, manifest: Manifest, contract: Contract, name: str | None = None
    ) -> Staged:
        """Step 3's load: the file's rows in a new staging table (name, or a new one),
        committed for publish."""
        name = self.staging_name(manifest) if name is None else name
        parts = parts_of(path, contract) if self.dialect in PARALLEL_LOADS else None
        if parts is not None:
            staged = self._stage_parts(parts, contract, name)
            if staged is not None:
                return staged
        # SQLite reads the file into a private one first, attached to the transaction's
        # connection, from which its rows are copied in one statement (staging/sqlite.py).
        with preloaded(path, contract, self.dialect) as loaded:
            connect = self.connect if loaded is None else attaching(self.connect, loaded)
            if not self.dialect.transactional_ddl:
                # Its named lock ends with its session, so this transaction's connection is
                # closed after it: a new one, while the idle one waits at a reader's level for
                # the evaluation that follows.
                connect = unlent(connect)
            with transaction(connect, self.dialect) as connection:
                # Owned and noted first: where CREATE TABLE commits at once (MariaDB), a crash
                # after it leaves the table LOADING where sweep finds it, and its loader gone.
                self.dialect.lock_name(connection, name)
                # Where the CREATE commits with the rows (transactional DDL), nobody can see
                # the table LOADING: it is noted loaded at once.
                joined = self.dialect.transactional_ddl
                created_at = stamp(self.clock())
                self.store.add_staging(connection, name, contract.table, created_at, loaded=joined)
                staged = stage_file(
                    connection, self.dialect, name, path, contract, preloaded=loaded
                )
                if staged.unreadable is None:
                    create_published(connection, self.dialect, staged, contract)
                    index_staged_keys(connection, self.dialect, staged, contract)
                    if not joined:
                        self.store.staging_loaded(connection, name)
                else:  # stage_file dropped it already
                    self.store.remove_staging(connection, name)
        return staged

    def _stage_parts(self, parts: Parts, contract: Contract, name: str) -> Staged | None:
        """stage's load of a parted delivery by one loader per part at once (staging/parts.py);
        None, the table dropped, when a part is refused: one loader stages it then, and its
        refusal names file, column and rule."""
        # Committed first, for the loaders' sessions to see it: noted LOADING, which sweep
        # keeps while the decision's mark (scratch.deciding) is held, and drops after.
        with transaction(self.connect, self.dialect) as connection:
            self.dialect.lock_name(connection, name)
            self.store.add_staging(connection, name, contract.table, stamp(self.clock()))
            create_table(connection, self.dialect, name, parts.types)
        try:
            loaded = load_parts(
                lambda: transaction(self.connect, self.dialect),
                self.dialect,
                name,
                parts,
                contract,
            )
        except BaseException:
            with suppress(Exception):
                self._drop_staging(name)
            raise
        if loaded is None:
            self._drop_staging(name)
            return None
        rows, sha256 = loaded
        staged = Staged(parts.folder, name, parts.types, parts.columns, rows, sha256)
        with transaction(self.connect, self.dialect) as connection:
            create_published(connection, self.dialect, staged, contract)
            index_staged_keys(connection, self.dialect, staged, contract)
            self.store.staging_loaded(connection, name)
        return staged

    def _drop_staging(self, name: str) -> None:
        with transaction(self.connect, self.dialect) as connection:
            drop(connection, self.dialect, name)
            self.store.remove_staging(connection, name)

    def row_checks(
        self,
        connection: Any,
        state: TableState,
        manifest: Manifest,
        staged: Staged,
        declared: Expectations | None = None,
    ) -> Checked:
        """Every named row check of a staged file against the table's contract (checks/rows.py),
        then each of the table's expectations (checks/expectations.py), in one scan of its rows;
        declared: the expectations, where the decision read them already (Steps.decision)."""
        if declared is None:
            declared = self.store.expectations(connection, state.table)
        last_rows = None
        if any(isinstance(item, RowCountExpectation) for item in declared):
            last = self.store.last_accepted(connection, state.table)
            last_rows = None if last is None else last.manifest.rows
        try:
            found, results = expectations.verify(
                connection,
                self.dialect,
                staged,
                state.contract,
                manifest,
                declared,
                published=state.contract.table,
                last_rows=last_rows,
            )
        except InvalidContract as exc:
            # checks.verify plans from the shape; a manifest naming no shape of the contract is
            # refused by preflight first, so this is a contract that changed under us.
            why = f"the rows could not be checked: {exc}"
            return Checked([checks.uncheckable(exc)], expectations.unrunnable(declared, why))
        found = self.widened_types(connection, state, manifest, staged, found)
        conforming = conformance.check(
            connection,
            self.dialect,
            self.schema_versions,
            staged,
            state.contract,
            manifest.identity,
        )
        if conforming is not None:
            found.append(conforming)
        return Checked(found, [self.unreleased(connection, state, staged, r) for r in results])

    def widened_types(
        self,
        connection: Any,
        state: TableState,
        manifest: Manifest,
        staged: Staged,
        found: list[Check],
    ) -> list[Check]:
        """found, its failed column_types judged again with the columns the delivery's schema
        version widens (schema/versions.py): a widening its policy allowed is no difference."""
        types = str(checks.CheckName.COLUMN_TYPES)
        if all(check.passed or check.name != types for check in found):
            return found
        proposal = self.schema_versions.proposal(connection, state.table, manifest.identity)
        widened = {} if proposal is None else proposal.widened()
        if not widened:
            return found
        again = checks.column_types(
            connection, self.dialect, staged, state.contract, state.table, widened=widened
        )
        return [again if types == check.name else check for check in found]

    def unreleased(
        self, connection: Any, state: TableState, staged: Staged, result: Result
    ) -> Result:
        """A violated hold judged without the rows a person released earlier
        (checks/released.py)."""
        if not result.violated or result.consequence is not Consequence.HOLD:
            return result
        if not self.store.has_released(connection):
            return result
        hashed = released.row_hash(connection, self.dialect, staged, state.contract)
        condition = self.store.unreleased(
            state.table, result.name, released.rule(result.expectation), hashed
        )
        return expectations.unreleased(
            connection, self.dialect, staged, result, contract=state.contract, released=condition
        )

    def apply_accepted(
        self,
        connection: Any,
        state: TableState,
        receipt: Receipt,
        staged: Staged,
        *,
        swap: bool = False,
        origin: Origin | None = None,
        declared: dict[str, str] | None = None,
    ) -> None:
        """Step 4's writes for an acceptance on a locked state: the plan on the published table,
        ledger.follow(receipt), the receipt and its lineage edge from origin (where the rows
        came from, when the publisher says); the caller's transaction commits them.

        swap lets a whole-table replacement swap the staging table in (actions.py); a group's
        publication copies its rows, table by table. declared: the published columns' declared
        types, read in this transaction (add_missing_columns), or None to read them here."""
        ledger = state.ledger.follow(receipt)
        assert receipt.transition is not None
        if self.dialect.transactional_ddl:  # else before the transaction (add_missing_columns)
            widen_columns(connection, self.dialect, staged, state.contract, declared)
        execute_plan(
            connection,
            self.dialect,
            receipt.transition.plan,
            staged,
            state.contract,
            swap=swap,
            declared=declared,
        )
        self.store.update_table(connection, ledger)
        self.store.save(connection, receipt)
        self.lineage.record(connection, Edge.of(receipt, origin, self.clock()))
        self.schema_versions.publish(connection, receipt, stamp(receipt.received_at))

    @cached_property
    def schema_versions(self) -> SchemaVersions:
        """The tables' schema versions (schema/versions.py), published with their deliveries."""
        return SchemaVersions(self.dialect, self.store.prefix)

    def drop(self, connection: Any, staged: Staged) -> None:
        if staged.unreadable is None:  # stage_file already dropped an unreadable file's table
            drop(connection, self.dialect, staged.table)
        self.store.remove_staging(connection, staged.table)

    def discard(self, staged: tuple[Staged, ...]) -> None:
        """Drop staging tables in a transaction of their own (nothing is recorded)."""
        # A table dropped first: where DROP commits at once, no transaction is begun before it.
        first_drop = bool(staged) and staged[0].unreadable is None
        with transaction(self.connect, self.dialect, ddl_first=first_drop) as connection:
            for files in staged:
                self.drop(connection, files)
