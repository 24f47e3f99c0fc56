"""The receiver's storage: each table's contract, ledger and head, and every receipt.

It lives in the target database beside the published tables, so that rows, ledger and receipt
change in one transaction (The receiver, what it owes 1). Its tables are named from a prefix so
that several stores (or test runs) can share one database:

    {prefix}_tables     one row per table: contract (wire JSON), ledger (the index of
                        stored.py's form) and publication head.
                        Its row is the table's lock: a publisher locks it before comparing the
                        head with the receipt's base, so exactly one publisher wins each head.
    {prefix}_chunks     the ledger's regions, a chunk of them per row, named by the digest of
                        their bytes (stored.py). A publication writes the chunks its apply made
                        and deletes those it replaced, under the table's lock, so a long
                        history costs a publication what its delivery touched, not every region.
    {prefix}_summaries  each chunk's summary (stored.py's summary_form) under the chunk's
                        digest, written and deleted with the chunks in the publication's own
                        transaction: a new process states a table's claims from them without
                        decoding a region. A cache of the chunks, never a source: a chunk
                        without one (a store made before them, until its next publication
                        writes them) has its summary computed from its regions. A table of its
                        own, so that older stores keep working: created with the others.
    {prefix}_receipts   every receipt, accepted and rejected, numbered per table in the order
                        they were recorded; accepted ones also carry their publication order.
                        A replay is an answer, not a decision, and is never stored.
    {prefix}_expectations  a table's declared quality expectations (checks/expectations.py), one row
                        per table that declares any, written when its contract is registered
                        with them; no row: none declared. A table of its own, so that stores
                        made before expectations existed keep working: created with the others,
                        and read as none declared where it is missing.
    {prefix}_staging    every staging table this store created and has not yet dropped, when it
                        was created, and its state (the column recorded): LOADING while its
                        rows are loaded, WAITING for its decision's publish, RECORDED once its
                        decision is recorded. Receiver.sweep finds here what nothing will use:
                        a table whose load was killed (MariaDB commits the CREATE at once), a
                        recorded one whose drop a crash prevented (MariaDB cannot drop inside
                        the commit that records), and one whose decision nobody published.
    {prefix}_holds      every held delivery (holds.py), each table of it a row, and how it
                        ended: released or discarded, by whom, when and why. A discarded
                        manifest is found here when it comes again, and refused.
    {prefix}_released   the rows people released from holds (checks/released.py): per table,
                        expectation and rule, each row's content hash and key, who released it
                        and when. A later delivery's held expectation anti-joins them.

Beside them, the receiver's settings and its tables' activation records (activation_store.py).

Receipts are indexed by manifest identity for the replay lookup. accepted_identity repeats the
manifest identity for acceptances only (NULL otherwise), under a unique constraint: the database
itself refuses a second publication of one manifest identity (NULLs never collide, on every
supported database, so rejections may repeat).

A chunk is kept in this process once read or written (KEPT), so that a state read fetches only
the chunks it has not seen, usually the one or two the last publication made, and decodes none
an earlier read decoded: a publication reads the chunk its decision decoded, and claims over a
table read again state nothing anew. Chunks are kept by digest, their bytes checked when read,
so what is kept can never be stale: another ledger, another process's publication or another
database names other chunks, never other bytes for one.

Nothing here commits: the caller owns the transaction (transactions.py).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from dogana_core import stored
from dogana_core.contract import Contract, check_identifier
from dogana_core.errors import InconsistentPublication, InvalidContract
from dogana_core.gate import TOGETHER, Check, Outcome, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.region import Chunk, RegionMap, Summary
from dogana_core.stored import (
    SUMMARY,
    Index,
    checked,
    named,
    read_summary,
    stored_form,
    summary_form,
)
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import (
    Dialect,
    StatementFailed,
    create_index,
    declared_types,
    execute,
    fetch_all,
    fetch_one,
    run_or_fail,
)
from dogana_provider.receiver.handover import staged_from_dict, staged_to_dict
from dogana_provider.receiver.own_tables import OwnTables, table_exists
from dogana_provider.staging import Staged

# The states of a staging table ({prefix}_staging.recorded).
WAITING, RECORDED, LOADING, HELD = 0, 1, 2, 3

# The states of a hold ({prefix}_holds.state).
HOLDING, RELEASED, DISCARDED = "held", "released", "discarded"

_OWN = (
    "tables",
    "receipts",
    "receipts_manifest",
    "staging",
    "expectations",
    "chunks",
    "summaries",
    "holds",
    "released",
)
"""The store's tables and replay index, by their names after the prefix."""

SUMMARY_START = f"[{SUMMARY},"  # how each stored summary of the current form begins
FETCH = 500  # receipts read per round trip when folding; never the whole history at once
FEW = 64  # chunks fetched by name, at most; a state read missing more reads the table's all


@dataclass(frozen=True)
class TableState:
    """A table's row in the store: its contract and its ledger, whose head is the chain's."""

    table: str
    ledger: Ledger

    @property
    def contract(self) -> Contract:
        return self.ledger.contract

    @property
    def head(self) -> str:
        return self.ledger.head


@dataclass(frozen=True)
class Verified:
    """What verify proved: the stored ledger is the fold of this many stored receipts."""

    table: str
    receipts: int
    publications: int
    head: str


@dataclass(frozen=True)
class HeldTable:
    """One table of a held delivery, as it was decided: nothing of it is published."""

    table: str
    staged: Staged
    manifest: Manifest
    contract: Contract
    checks: tuple[Check, ...]
    """Every check the decision ran, the violated hold expectations failed."""
    expectations: Expectations
    """The expectations the decision ran, as declared then: a person is shown the rows that
    violate the held ones, whatever the table declares since."""
    base_publication_id: str
    """The table's head the decision was made on: a release publishes on it, or decides again."""

    @property
    def grouped(self) -> bool:
        """Whether this table was decided in a group (together.py): its checks carry the
        together check, as Group.apply makes it."""
        return TOGETHER in {check.name for check in self.checks}

    @property
    def held_checks(self) -> tuple[Check, ...]:
        """The checks that hold it, for a person to judge: its failed ones, less a group's
        together check, which fails only because some table of the group is held."""
        return tuple(c for c in self.checks if not c.passed and c.name != TOGETHER)


@dataclass(frozen=True)
class Released:
    """Who released rows of a table for one expectation, as declared then (its rule)."""

    table: str
    expectation: str
    rule: str
    hold_id: str
    by: str
    at: str


@dataclass(frozen=True)
class Hold:
    """A held delivery, kept whole until a person ends it: a row per table it holds in the
    store, one for a table's delivery, one per table, in the group's order, for a group's."""

    hold_id: str
    tables: tuple[HeldTable, ...]
    held_at: datetime
    state: str
    """HOLDING, RELEASED or DISCARDED."""
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    outcome: str | None = None
    """The outcome recorded when it ended: accepted, replayed or rejected."""

    @property
    def held(self) -> bool:
        return self.state == HOLDING

    @property
    def grouped(self) -> bool:
        """Whether it holds a group's tables (together.py releases it), even a group of one."""
        return any(held.grouped for held in self.tables)


@dataclass(frozen=True)
class Joined:
    """Another store's part of a table's read (Store.decided): its columns, a LEFT JOIN, and
    the parameters of each in the order they appear."""

    columns: str
    column_params: tuple[Any, ...]
    join: str
    join_params: tuple[Any, ...]
    width: int


@dataclass(frozen=True)
class Decided:
    """What a decision reads of a table, at one instant (Store.decided)."""

    state: TableState | None
    accepted: Receipt | None
    held: str | None
    discarded: Hold | None
    joined: tuple[Any, ...] | None
    """joined's columns, as read (None: nothing was joined)."""
    expectations: Expectations | None = None
    """The table's declared expectations (None: not read, the store may predate them)."""


class Store:
    """Statements on the store's tables, for one dialect and prefix."""

    def __init__(self, dialect: Dialect, prefix: str = "dogana") -> None:
        check_identifier(f"{prefix}_receipts", "store prefix")
        self.dialect = dialect
        self.prefix = prefix
        self.tables = dialect.quote(f"{prefix}_tables")
        self.receipts = dialect.quote(f"{prefix}_receipts")
        self.staging = dialect.quote(f"{prefix}_staging")
        self.chunks = dialect.quote(f"{prefix}_chunks")
        self.summaries = dialect.quote(f"{prefix}_summaries")
        self.expectations_table = dialect.quote(f"{prefix}_expectations")
        self.holds = dialect.quote(f"{prefix}_holds")
        self.released = dialect.quote(f"{prefix}_released")
        self._holds_exist = False
        self._summaries_exist = False
        self.own_tables: OwnTables | None = None
        """Set by the receiver's Steps: its tables looked up together (own_tables.py)."""
        self.p = dialect.placeholder
        self.own_names = tuple(f"{prefix}_{name}" for name in _OWN)
        """The names this store's tables and index take in the database."""

    # Schema ---------------------------------------------------------------------------------

    def create(self, connection: Any) -> None:
        """Create the tables and the replay index when missing; safe to repeat, and safe for
        any number of callers at once (Dialect.lock_schema)."""
        self.dialect.lock_schema(connection, self.tables)
        document = self.dialect.document_type
        statements = [
            f"CREATE TABLE IF NOT EXISTS {self.tables} ("
            "table_name VARCHAR(64) NOT NULL PRIMARY KEY, "
            f"contract {document} NOT NULL, "
            f"ledger {document} NOT NULL, "
            "publication_id VARCHAR(64) NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {self.receipts} ("
            "table_name VARCHAR(64) NOT NULL, "
            "seq BIGINT NOT NULL, "
            "publication BIGINT, "
            "manifest_identity VARCHAR(64) NOT NULL, "
            "accepted_identity VARCHAR(64), "
            "outcome VARCHAR(16) NOT NULL, "
            f"receipt {document} NOT NULL, "
            "PRIMARY KEY (table_name, seq), "
            "UNIQUE (table_name, publication), "
            "UNIQUE (table_name, accepted_identity))",
            f"CREATE TABLE IF NOT EXISTS {self.staging} ("
            "staging_table VARCHAR(64) NOT NULL PRIMARY KEY, "
            "table_name VARCHAR(64) NOT NULL, "
            "created_at VARCHAR(32) NOT NULL, "
            "recorded SMALLINT NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {self.chunks} ("
            "table_name VARCHAR(64) NOT NULL, "
            "digest VARCHAR(64) NOT NULL, "
            f"regions {document} NOT NULL, "
            "PRIMARY KEY (table_name, digest))",
            f"CREATE TABLE IF NOT EXISTS {self.summaries} ("
            "table_name VARCHAR(64) NOT NULL, "
            "digest VARCHAR(64) NOT NULL, "
            "summary VARCHAR(255) NOT NULL, "
            "PRIMARY KEY (table_name, digest))",
            f"CREATE TABLE IF NOT EXISTS {self.expectations_table} ("
            "table_name VARCHAR(64) NOT NULL PRIMARY KEY, "
            f"expectations {document} NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {self.holds} ("
            "hold_id VARCHAR(96) NOT NULL, "
            "table_name VARCHAR(64) NOT NULL, "
            "seq BIGINT NOT NULL, "
            "position SMALLINT NOT NULL, "
            "manifest_identity VARCHAR(64) NOT NULL, "
            "staging_table VARCHAR(64) NOT NULL, "
            f"manifest {document} NOT NULL, "
            f"contract {document} NOT NULL, "
            f"checks {document} NOT NULL, "
            f"expectations {document} NOT NULL, "
            f"staged {document} NOT NULL, "
            "base_publication_id VARCHAR(64) NOT NULL, "
            "held_at VARCHAR(32) NOT NULL, "
            "state VARCHAR(16) NOT NULL, "
            "decided_by VARCHAR(200), "
            "decided_at VARCHAR(32), "
            f"reason {document}, "
            "outcome VARCHAR(16), "
            "PRIMARY KEY (hold_id, table_name), "
            "UNIQUE (table_name, seq))",
            f"CREATE TABLE IF NOT EXISTS {self.released} ("
            "table_name VARCHAR(64) NOT NULL, "
            "expectation VARCHAR(200) NOT NULL, "
            "rule VARCHAR(64) NOT NULL, "
            "row_hash VARCHAR(64) NOT NULL, "
            f"row_key {document} NOT NULL, "
            "hold_id VARCHAR(96) NOT NULL, "
            "released_by VARCHAR(200) NOT NULL, "
            "released_at VARCHAR(32) NOT NULL, "
            "PRIMARY KEY (table_name, expectation, rule, row_hash))",
        ]
        _execute_all(connection, statements)
        # Every registration runs this: no SHARE lock on the receipts every publication writes.
        create_index(
            connection,
            self.dialect,
            f"{self.prefix}_receipts",
            f"{self.prefix}_receipts_manifest",
            "table_name, manifest_identity",
        )
        if self.own_tables is not None:
            self.own_tables.made(self.own_names)

    # Table rows -----------------------------------------------------------------------------

    def state(self, connection: Any, table: str, *, lock: bool = False) -> TableState | None:
        """The table's row, or None when it is not registered.

        lock=True takes the row lock (SELECT ... FOR UPDATE) where the database has one; on
        SQLite the caller's BEGIN IMMEDIATE already holds the database's write lock.
        """
        suffix = self.dialect.for_update(lock)
        row = fetch_one(
            connection,
            f"SELECT contract, ledger FROM {self.tables} WHERE table_name = {self.p}{suffix}",
            (table,),
        )
        if row is None:
            return None
        return TableState(table, self._ledger(connection, table, row[0], row[1]))

    def locked(self, connection: Any, table: str, joined: Joined) -> Decided:
        """state(lock=True) with joined (the activation, locked with the table's row: Steps.
        locked_with_activation), in one statement, where the dialect locks an outer join's
        rows; accepted and the holds are not read."""
        assert self.dialect.locks_outer_join
        rows = fetch_all(
            connection,
            f"SELECT t.contract, t.ledger, {joined.columns} FROM {self.tables} t "
            f"{joined.join} WHERE t.table_name = {self.p}{self.dialect.for_update(True)}",
            (*joined.column_params, *joined.join_params, table),
        )
        if not rows:
            return Decided(None, None, None, None, None)
        contract, ledger, *rest = rows[0]
        state = TableState(table, self._ledger(connection, table, contract, ledger))
        return Decided(state, None, None, None, tuple(rest))

    def decided(
        self, connection: Any, table: str, manifest_identity: str, joined: Joined | None
    ) -> Decided:
        """state, accepted, expectations and holds_for, with joined (the activation, Steps.
        decision), in one statement: the table's row, the manifest's acceptance and the table's
        expectations as subqueries, and the manifest's holding or discarded holds by a LEFT
        JOIN, a row for each hold's row (one, of NULLs, for none). state is None when the table
        is not registered; expectations None where its table is not known to exist."""
        p = self.p
        holds = self._has_holds(connection)
        declared = self.own_tables is not None and self.own_tables.known(
            f"{self.prefix}_expectations"
        )
        columns = [
            "t.contract, t.ledger",
            f"(SELECT r.receipt FROM {self.receipts} r WHERE r.table_name = {p} "
            f"AND r.manifest_identity = {p} AND r.accepted_identity IS NOT NULL)",
        ]
        params: list[Any] = [table, manifest_identity]
        if declared:
            columns.append(
                f"(SELECT e.expectations FROM {self.expectations_table} e WHERE e.table_name = {p})"
            )
            params.append(table)
        joins = []
        if joined is not None:
            columns.append(joined.columns)
            params += joined.column_params
            joins.append(joined.join)
        if holds:
            columns.append(", ".join(f"h.{column}" for column in _HOLD_COLUMNS.split(", ")))
        if joined is not None:
            params += joined.join_params
        if holds:
            joins.append(
                f"LEFT JOIN {self.holds} h ON h.table_name = {p} AND h.manifest_identity = {p} "
                f"AND h.state IN ({p}, {p})"
            )
            params += [table, manifest_identity, HOLDING, DISCARDED]
        params.append(table)
        order = " ORDER BY h.held_at, h.hold_id, h.position" if holds else ""
        rows = fetch_all(
            connection,
            f"SELECT {', '.join(columns)} FROM {self.tables} t {' '.join(joins)} "
            f"WHERE t.table_name = {p}{order}",
            tuple(params),
        )
        if not rows:
            return Decided(None, None, None, None, None)
        first = rows[0]
        state = TableState(table, self._ledger(connection, table, first[0], first[1]))
        accepted = None if first[2] is None else Receipt.from_json(first[2])
        expectations = None
        if declared:
            text = first[3]
            expectations = (
                Expectations()
                if text is None
                else Expectations.from_dict(json.loads(text), f"{table} expectations")
            )
        before = 3 + int(declared)
        after = before + (0 if joined is None else joined.width)
        found = self._holds_of(row[after:] for row in rows if holds and row[after] is not None)
        return Decided(
            state,
            accepted,
            next((hold.hold_id for hold in found if hold.state == HOLDING), None),
            next((hold for hold in found if hold.state == DISCARDED), None),
            None if joined is None else tuple(first[before:after]),
            expectations,
        )

    def table_names(self, connection: Any) -> list[str]:
        """Every registered table's name, in name order: one row each, read whole."""
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT table_name FROM {self.tables} ORDER BY table_name")
            return [str(name) for (name,) in cursor.fetchall()]
        finally:
            cursor.close()

    def contracts(self, connection: Any) -> list[Contract]:
        """Every registered table's contract, in the order of the tables' names."""
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT contract FROM {self.tables} ORDER BY table_name")
            return [Contract.from_json(row[0]) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def insert_table(self, connection: Any, ledger: Ledger) -> None:
        """Insert a table's row unless one exists: a registration that raced another inserts
        nothing, and the caller locks and reads the row the other committed."""
        execute(
            connection,
            f"INSERT INTO {self.tables} (table_name, contract, ledger, publication_id) "
            f"VALUES ({self.p}, {self.p}, {self.p}, {self.p}) "
            f"{self.dialect.unless_exists('table_name')}",
            (
                ledger.contract.table,
                ledger.contract.to_json(),
                self._store(connection, ledger),
                ledger.head,
            ),
        )

    def update_table(self, connection: Any, ledger: Ledger) -> None:
        execute(
            connection,
            f"UPDATE {self.tables} SET contract = {self.p}, ledger = {self.p}, "
            f"publication_id = {self.p} WHERE table_name = {self.p}",
            (
                ledger.contract.to_json(),
                self._store(connection, ledger),
                ledger.head,
                ledger.contract.table,
            ),
        )

    def delete_table(self, connection: Any, table: str) -> int:
        """Delete a table's rows from the store (its row, ledger chunks, expectations, receipts,
        ended holds and released rows); the number of receipts deleted. The caller holds the
        table's lock and has seen that it never published and holds nothing (Receiver.forget).
        Its staging tables stay noted, for sweep to drop."""
        counted = fetch_one(
            connection,
            f"SELECT COUNT(*) FROM {self.receipts} WHERE table_name = {self.p}",
            (table,),
        )
        store_tables = [self.receipts, self.chunks, self.expectations_table]
        if self._has_summaries(connection):
            store_tables.append(self.summaries)
        if self._has_holds(connection):
            store_tables.append(self.holds)
        if declared_types(connection, self.dialect, f"{self.prefix}_released"):
            store_tables.append(self.released)
        for store_table in [*store_tables, self.tables]:
            execute(connection, f"DELETE FROM {store_table} WHERE table_name = {self.p}", (table,))
        return int(counted[0]) if counted else 0

    # Expectations ---------------------------------------------------------------------------

    def set_expectations(self, connection: Any, table: str, expectations: Expectations) -> None:
        """Replace a table's declared expectations; none declared removes its row."""
        execute(
            connection,
            f"DELETE FROM {self.expectations_table} WHERE table_name = {self.p}",
            (table,),
        )
        if expectations:
            execute(
                connection,
                f"INSERT INTO {self.expectations_table} (table_name, expectations) "
                f"VALUES ({self.p}, {self.p})",
                (table, json.dumps(expectations.to_dict(), sort_keys=True)),
            )

    def expectations(self, connection: Any, table: str) -> Expectations:
        """A table's declared expectations; none where it declared none, or where the store
        predates them (its table is missing: the database refuses the statement)."""
        sql = f"SELECT expectations FROM {self.expectations_table} WHERE table_name = {self.p}"
        name = f"{self.prefix}_expectations"
        if self.own_tables is not None and self.own_tables.known(name):
            found: Any = fetch_all(connection, sql, (table,))
        else:
            found = run_or_fail(connection, self.dialect, sql, (table,))
        if isinstance(found, StatementFailed) or not found:
            return Expectations()
        return Expectations.from_dict(json.loads(found[0][0]), f"{table} expectations")

    # The stored ledger ------------------------------------------------------------------------

    def _store(self, connection: Any, ledger: Ledger) -> str:
        """Write the chunks ledger has and the stored ones lack, delete those it no longer
        has; return its index. The caller holds the table's lock."""
        index, chunks = stored_form(ledger)
        table = ledger.contract.table
        stored, summaries = self._stored(connection, table)
        added, gone = sorted(chunks.keys() - stored), sorted(stored - chunks.keys())
        # A chunk gone and one added are one row rewritten: one statement where a DELETE and
        # an INSERT were two. No stored row has the added digest (stored was read under the
        # table's lock), so the rewrite meets no other.
        for old, name in zip(gone, added, strict=False):
            execute(
                connection,
                f"UPDATE {self.chunks} SET digest = {self.p}, regions = {self.p} "
                f"WHERE table_name = {self.p} AND digest = {self.p}",
                (name, chunks[name].decode("utf-8"), table, old),
            )
        for name in added[len(gone) :]:
            # A registration racing another (insert_table) may find the other's chunk: its
            # bytes are these, since a digest names them.
            execute(
                connection,
                f"INSERT INTO {self.chunks} (table_name, digest, regions) "
                f"VALUES ({self.p}, {self.p}, {self.p}) "
                f"{self.dialect.unless_exists('table_name', 'digest')}",
                (table, name, chunks[name].decode("utf-8")),
            )
        for name in gone[len(added) :]:
            execute(
                connection,
                f"DELETE FROM {self.chunks} WHERE table_name = {self.p} AND digest = {self.p}",
                (table, name),
            )
        kept = named(ledger)
        if summaries is not None:
            self._summarize(connection, table, kept, summaries)
        KEPT.keep(kept.items())
        return index

    def _summarize(
        self, connection: Any, table: str, chunks: dict[str, Chunk], found: dict[str, str]
    ) -> None:
        """Make the stored summaries (found) those of chunks: write the missing ones and those
        in another form, delete those of chunks gone. A publication writes the summaries of the
        chunks its apply made; the first after a store had none writes every chunk's, decoding
        each chunk that has none yet, once."""
        # Read in full only when a state read needs it; here its form is enough.
        wrong = {name for name, text in found.items() if not text.startswith(SUMMARY_START)}
        gone = sorted(found.keys() - chunks.keys())
        added = sorted(chunks.keys() - found.keys())
        # As _store's chunks: a summary gone and one added are one row rewritten, and so is a
        # summary in another form, in place; no stored row has an added digest.
        pairs = [(name, name) for name in sorted(wrong & chunks.keys())]
        for old, name in [*pairs, *zip(gone, added, strict=False)]:
            execute(
                connection,
                f"UPDATE {self.summaries} SET digest = {self.p}, summary = {self.p} "
                f"WHERE table_name = {self.p} AND digest = {self.p}",
                (name, summary_form(chunks[name]), table, old),
            )
        for name in gone[len(added) :]:
            execute(
                connection,
                f"DELETE FROM {self.summaries} WHERE table_name = {self.p} AND digest = {self.p}",
                (table, name),
            )
        for name in added[len(gone) :]:
            execute(
                connection,
                f"INSERT INTO {self.summaries} (table_name, digest, summary) "
                f"VALUES ({self.p}, {self.p}, {self.p}) "
                f"{self.dialect.unless_exists('table_name', 'digest')}",
                (table, name, summary_form(chunks[name])),
            )

    def _stored(self, connection: Any, table: str) -> tuple[set[str], dict[str, str] | None]:
        """The digests of the table's stored chunks, and its stored summaries by digest (None
        where the store has no summaries table yet), in one statement."""
        chunks = f"SELECT 0, digest, NULL FROM {self.chunks} WHERE table_name = {self.p}"
        if not self._has_summaries(connection):
            return {str(name) for (_, name, _) in fetch_all(connection, chunks, (table,))}, None
        rows = fetch_all(
            connection,
            f"{chunks} UNION ALL SELECT 1, digest, summary FROM {self.summaries} "
            f"WHERE table_name = {self.p}",
            (table, table),
        )
        digests = {str(name) for kind, name, _ in rows if int(kind) == 0}
        return digests, {str(name): str(text) for kind, name, text in rows if int(kind) == 1}

    def _ledger(
        self, connection: Any, table: str, contract: str, text: str, *, kept: bool = True
    ) -> Ledger:
        """A table's ledger from its row's contract and index and its chunks; kept=False reads
        every chunk from the database."""
        if text.startswith('{"contract":'):
            # Stored as wire JSON before stored.py's form; the next publication stores it anew.
            return Ledger.from_json(text)
        index = _index(text) if kept else Index.read(text)
        chunks: dict[str, bytes | Chunk] = dict(KEPT.get(index.digests)) if kept else {}
        summaries: dict[str, Summary] = {}
        missing = [name for name in index.digests if name not in chunks]
        if missing:
            for name, regions, stored_summary in self._read_chunks(connection, table, missing):
                if name in missing:
                    chunks[name] = checked(name, regions.encode("utf-8"))
                    summary = None if stored_summary is None else read_summary(stored_summary)
                    if summary is not None:
                        summaries[name] = summary
        ledger = index.ledger(_contract(contract), chunks, summaries)
        if missing:
            read = named(ledger)
            KEPT.keep((name, read[name]) for name in missing)
        return ledger

    def _read_chunks(
        self, connection: Any, table: str, names: list[str]
    ) -> list[tuple[str, str, str | None]]:
        """The chunks' digests and bytes, each with its stored summary (None: none stored)."""
        if self._has_summaries(connection):
            sql = (
                f"SELECT c.digest, c.regions, s.summary FROM {self.chunks} c "
                f"LEFT JOIN {self.summaries} s "
                "ON s.table_name = c.table_name AND s.digest = c.digest "
                f"WHERE c.table_name = {self.p}"
            )
        else:
            sql = f"SELECT c.digest, c.regions, NULL FROM {self.chunks} c "
            sql += f"WHERE c.table_name = {self.p}"
        params: tuple[Any, ...] = (table,)
        if len(names) <= FEW:
            sql += f" AND c.digest IN ({', '.join(self.p for _ in names)})"
            params += tuple(names)
        cursor = connection.cursor()
        try:
            cursor.execute(sql, params)
            return [
                (str(name), str(regions), None if text is None else str(text))
                for name, regions, text in cursor.fetchall()
            ]
        finally:
            cursor.close()

    # Receipts -------------------------------------------------------------------------------

    def save(self, connection: Any, receipt: Receipt) -> None:
        """Record an acceptance or a rejection; the caller holds the table's row lock."""
        if receipt.replayed:
            raise ValueError("a replay repeats a stored acceptance; it is not stored again")
        table = receipt.table
        seq, publications = fetch_one(
            connection,
            # Two MAXes, each its own subquery, so that each is read from the end of its index
            # (a COUNT, or two aggregates in one SELECT, read every receipt of the table): the
            # publications are numbered from 1 without gaps, so their MAX is their count.
            f"SELECT (SELECT MAX(seq) FROM {self.receipts} WHERE table_name = {self.p}), "
            f"(SELECT MAX(publication) FROM {self.receipts} WHERE table_name = {self.p})",
            (table, table),
        ) or (None, None)
        seq, publications = seq or 0, publications or 0
        accepted = receipt.outcome is Outcome.ACCEPTED
        identity = receipt.manifest.identity
        execute(
            connection,
            f"INSERT INTO {self.receipts} (table_name, seq, publication, manifest_identity, "
            f"accepted_identity, outcome, receipt) VALUES "
            f"({', '.join(self.p for _ in range(7))})",
            (
                table,
                int(seq) + 1,
                int(publications) + 1 if accepted else None,
                identity,
                identity if accepted else None,
                str(receipt.outcome),
                receipt.to_json(),
            ),
        )

    def accepted(self, connection: Any, table: str, manifest_identity: str) -> Receipt | None:
        """The acceptance of this manifest identity on this table, if any (the replay lookup)."""
        row = fetch_one(
            connection,
            f"SELECT receipt FROM {self.receipts} "
            f"WHERE table_name = {self.p} AND manifest_identity = {self.p} "
            f"AND accepted_identity IS NOT NULL",
            (table, manifest_identity),
        )
        return None if row is None else Receipt.from_json(row[0])

    def last_accepted(self, connection: Any, table: str) -> Receipt | None:
        """The table's latest acceptance, the one its published rows are as of."""
        row = fetch_one(
            connection,
            f"SELECT receipt FROM {self.receipts} WHERE table_name = {self.p} "
            f"AND publication = (SELECT MAX(publication) FROM {self.receipts} "
            f"WHERE table_name = {self.p})",
            (table, table),
        )
        return None if row is None else Receipt.from_json(row[0])

    def receipts_of(self, connection: Any, table: str) -> Iterator[Receipt]:
        """Every stored receipt of a table in the order recorded, read a batch at a time.

        Consume it before the next statement on the connection (MySQLdb's streaming cursor
        holds the connection until its result is read).
        """
        cursor = self.dialect.streaming_cursor(connection)
        try:
            cursor.execute(
                f"SELECT receipt FROM {self.receipts} WHERE table_name = {self.p} ORDER BY seq",
                (table,),
            )
            while rows := cursor.fetchmany(FETCH):
                for (text,) in rows:
                    yield Receipt.from_json(text)
        finally:
            cursor.close()

    def latest(
        self, connection: Any, table: str, count: int
    ) -> tuple[list[Receipt], int, Receipt | None]:
        """The table's last count receipts (newest first), its number of publications and the
        receipt of the last one.

        Each read at an index's end (publications are numbered from 1 without gaps), so a long
        history costs no more than a short one.
        """
        cursor = connection.cursor()
        try:
            cursor.execute(
                f"SELECT receipt FROM {self.receipts} WHERE table_name = {self.p} "
                f"ORDER BY seq DESC LIMIT {int(count)}",
                (table,),
            )
            latest = [Receipt.from_json(text) for (text,) in cursor.fetchall()]
        finally:
            cursor.close()
        row = fetch_one(
            connection,
            f"SELECT receipt, publication FROM {self.receipts} WHERE table_name = {self.p} "
            f"AND publication IS NOT NULL ORDER BY publication DESC LIMIT 1",
            (table,),
        )
        if row is None:
            return latest, 0, None
        return latest, int(row[1]), Receipt.from_json(row[0])

    # Staging tables -------------------------------------------------------------------------

    def add_staging(
        self, connection: Any, staging: str, table: str, created_at: str, *, loaded: bool = False
    ) -> None:
        """Note a staging table LOADING before creating it: a crash after the CREATE leaves it
        found. loaded=True notes it WAITING at once, for a loader whose CREATE and rows commit
        with the note, or not at all (transactional DDL): no one can see it LOADING."""
        execute(
            connection,
            f"INSERT INTO {self.staging} (staging_table, table_name, created_at, recorded) "
            f"VALUES ({self.p}, {self.p}, {self.p}, {WAITING if loaded else LOADING})",
            (staging, table, created_at),
        )

    def staging_loaded(self, connection: Any, staging: str) -> None:
        """The staging table's rows are all loaded: WAITING for its decision's publish.

        Called in the transaction that loads them, so the mark commits with the last rows.
        """
        execute(
            connection,
            f"UPDATE {self.staging} SET recorded = {WAITING} WHERE staging_table = {self.p}",
            (staging,),
        )

    def staging_recorded(self, connection: Any, staging: str) -> None:
        """The staging table's decision is recorded (or replayed): its rows serve no one now.

        Called in the transaction that saves the receipt, so the mark commits with it.
        """
        execute(
            connection,
            f"UPDATE {self.staging} SET recorded = {RECORDED} WHERE staging_table = {self.p}",
            (staging,),
        )

    def staging_held(self, connection: Any, staging: str) -> None:
        """The staging table's rows belong to a hold now: kept, whatever their age, until a
        person releases or discards it. Called in the transaction that records the hold."""
        execute(
            connection,
            f"UPDATE {self.staging} SET recorded = {HELD} WHERE staging_table = {self.p}",
            (staging,),
        )

    def staging_state(self, connection: Any, staging: str) -> int | None:
        """A noted staging table's state, or None when it is no longer noted."""
        row = fetch_one(
            connection,
            f"SELECT recorded FROM {self.staging} WHERE staging_table = {self.p}",
            (staging,),
        )
        return None if row is None else int(row[0])

    def remove_staging(self, connection: Any, staging: str) -> None:
        execute(
            connection, f"DELETE FROM {self.staging} WHERE staging_table = {self.p}", (staging,)
        )

    def staging_tables(self, connection: Any) -> list[tuple[str, str, str, int]]:
        """Every noted staging table: (staging table, table, created_at, state); none before
        the store is created (a receiver nothing was registered with yet).

        A handful of rows (one per decision in flight), so read whole.
        """
        if not table_exists(connection, self.dialect, f"{self.prefix}_staging", self.own_tables):
            return []
        cursor = connection.cursor()
        try:
            cursor.execute(
                f"SELECT staging_table, table_name, created_at, recorded FROM {self.staging} "
                "ORDER BY created_at"
            )
            return [(str(a), str(b), str(c), int(d)) for a, b, c, d in cursor.fetchall()]
        finally:
            cursor.close()

    # Holds ----------------------------------------------------------------------------------

    def next_hold(self, connection: Any, table: str) -> int:
        """The number of the table's next hold, from 1; the caller holds the table's lock."""
        row = fetch_one(
            connection, f"SELECT MAX(seq) FROM {self.holds} WHERE table_name = {self.p}", (table,)
        )
        return int(row[0] or 0) + 1 if row is not None else 1

    def add_hold(
        self, connection: Any, hold_id: str, seq: int, position: int, held: HeldTable, at: str
    ) -> None:
        """Record one table of a held delivery; the caller holds the table's lock."""
        execute(
            connection,
            f"INSERT INTO {self.holds} (hold_id, table_name, seq, position, manifest_identity, "
            "staging_table, manifest, contract, checks, expectations, staged, "
            "base_publication_id, held_at, state) VALUES "
            f"({', '.join(self.p for _ in range(14))})",
            (
                hold_id,
                held.table,
                seq,
                position,
                held.manifest.identity,
                held.staged.table,
                held.manifest.to_json(),
                held.contract.to_json(),
                json.dumps([check.to_dict() for check in held.checks]),
                json.dumps(held.expectations.to_dict()),
                json.dumps(staged_to_dict(held.staged)),
                held.base_publication_id,
                at,
                HOLDING,
            ),
        )

    def end_hold(
        self,
        connection: Any,
        hold_id: str,
        state: str,
        by: str,
        at: str,
        reason: str | None,
        outcome: str,
    ) -> None:
        """Record a held delivery's end: released or discarded, by whom, when, why, and the
        outcome recorded for it; the caller holds its tables' locks."""
        execute(
            connection,
            f"UPDATE {self.holds} SET state = {self.p}, decided_by = {self.p}, "
            f"decided_at = {self.p}, reason = {self.p}, outcome = {self.p} "
            f"WHERE hold_id = {self.p} AND state = {self.p}",
            (state, by, at, reason, outcome, hold_id, HOLDING),
        )

    def holds_for(
        self, connection: Any, table: str, manifest_identity: str
    ) -> tuple[str | None, Hold | None]:
        """held_for and discarded together, in one read of the manifest's holds on the table."""
        if not self._has_holds(connection):
            return None, None
        found = self._holds(
            connection,
            f"table_name = {self.p} AND manifest_identity = {self.p} "
            f"AND state IN ({self.p}, {self.p})",
            (table, manifest_identity, HOLDING, DISCARDED),
        )
        held = next((hold.hold_id for hold in found if hold.state == HOLDING), None)
        return held, next((hold for hold in found if hold.state == DISCARDED), None)

    def held_for(self, connection: Any, table: str, manifest_identity: str) -> str | None:
        """The hold still holding this manifest identity on this table, if any."""
        if not self._has_holds(connection):
            return None
        row = fetch_one(
            connection,
            f"SELECT hold_id FROM {self.holds} WHERE table_name = {self.p} "
            f"AND manifest_identity = {self.p} AND state = {self.p}",
            (table, manifest_identity, HOLDING),
        )
        return None if row is None else str(row[0])

    def discarded(self, connection: Any, table: str, manifest_identity: str) -> Hold | None:
        """The hold that discarded this manifest identity on this table, if a person did: a
        discarded delivery is refused whenever it comes again."""
        if not self._has_holds(connection):
            return None
        found = self._holds(
            connection,
            f"table_name = {self.p} AND manifest_identity = {self.p} AND state = {self.p}",
            (table, manifest_identity, DISCARDED),
        )
        return found[0] if found else None

    def hold(self, connection: Any, hold_id: str) -> Hold | None:
        """A hold by its id, ended or not; None when there is none."""
        if not self._has_holds(connection):
            return None
        found = self._holds(connection, f"hold_id = {self.p}", (hold_id,))
        return found[0] if found else None

    def holds_of(
        self, connection: Any, table: str | None = None, *, held: bool = True
    ) -> list[Hold]:
        """The holds (still held ones only, unless held=False), oldest first, those holding
        table when it is given; none before the store has a holds table.

        A handful of rows (a hold waits for a person), so read whole.
        """
        if not self._has_holds(connection):
            return []
        where, params = ["1 = 1"], []
        if table is not None:
            where.append(
                f"hold_id IN (SELECT hold_id FROM {self.holds} WHERE table_name = {self.p})"
            )
            params.append(table)
        if held:
            where.append(f"state = {self.p}")
            params.append(HOLDING)
        return self._holds(connection, " AND ".join(where), tuple(params))

    # Released rows (checks/released.py) ----------------------------------------------------

    def release_rows(
        self,
        connection: Any,
        released: Released,
        staged: str,
        faulted: tuple[str, tuple[Any, ...]],
        identity: tuple[str, str],
    ) -> None:
        """Record as released every staged row the condition faulted, by its content hash
        (identity: the SQL of its key and its hash), in one INSERT ... SELECT; a row released
        before for the same rule keeps its first record. The caller holds the table's lock."""
        key, hashed = identity
        p = self.p
        bound = self.dialect.cast_text(p, length=200)  # a bound value, typed for the SELECT
        execute(
            connection,
            f"INSERT INTO {self.released} (table_name, expectation, rule, row_hash, row_key, "
            "hold_id, released_by, released_at) "
            f"SELECT {bound}, {bound}, {bound}, found.h, "
            f"MIN(found.k), {bound}, {bound}, {bound} "
            f"FROM (SELECT {hashed} AS h, {key} AS k FROM {self.dialect.quote(staged)} "
            f"WHERE {faulted[0]}) found WHERE NOT EXISTS (SELECT 1 FROM {self.released} r "
            f"WHERE r.table_name = {p} AND r.expectation = {p} AND r.rule = {p} "
            "AND r.row_hash = found.h) GROUP BY found.h",
            (
                released.table,
                released.expectation,
                released.rule,
                released.hold_id,
                released.by,
                released.at,
                *faulted[1],
                released.table,
                released.expectation,
                released.rule,
            ),
        )

    def unreleased(
        self, table: str, expectation: str, rule: str, hashed: str
    ) -> tuple[str, tuple[Any, ...]]:
        """The SQL condition of a staged row no release covers for this rule (hashed: the SQL
        of its content hash), and its parameters: an anti-join, never a row read."""
        p = self.p
        return (
            f"NOT EXISTS (SELECT 1 FROM {self.released} r WHERE r.table_name = {p} "
            f"AND r.expectation = {p} AND r.rule = {p} AND r.row_hash = {hashed})",
            (table, expectation, rule),
        )

    def has_released(self, connection: Any) -> bool:
        """Whether the released rows' table exists: a store made before it has none until the
        next registration or hold creates it, and then nothing was released."""
        return table_exists(connection, self.dialect, f"{self.prefix}_released", self.own_tables)

    def _has_holds(self, connection: Any) -> bool:
        """Whether the holds table exists: a store made before holds has none until the next
        registration (create) or hold. Once seen, it is not looked up again."""
        if not self._holds_exist:
            self._holds_exist = table_exists(
                connection, self.dialect, f"{self.prefix}_holds", self.own_tables
            )
        return self._holds_exist

    def _has_summaries(self, connection: Any) -> bool:
        """Whether the chunks' summaries table exists: a store made before it has none until
        the next registration (create). Once seen, it is not looked up again."""
        if not self._summaries_exist:
            self._summaries_exist = table_exists(
                connection, self.dialect, f"{self.prefix}_summaries", self.own_tables
            )
        return self._summaries_exist

    def _holds(self, connection: Any, where: str, params: tuple[Any, ...]) -> list[Hold]:
        cursor = connection.cursor()
        try:
            cursor.execute(
                f"SELECT {_HOLD_COLUMNS} FROM {self.holds} WHERE {where} "
                "ORDER BY held_at, hold_id, position",
                params,
            )
            rows = cursor.fetchall()
        finally:
            cursor.close()
        return self._holds_of(rows)

    @staticmethod
    def _holds_of(rows: Iterable[Sequence[Any]]) -> list[Hold]:
        """The holds of rows of _HOLD_COLUMNS, in their order, a hold's rows together."""
        holds: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows:
            holds.setdefault(str(row[0]), []).append(tuple(row))
        return [_hold(hold_id, rows) for hold_id, rows in holds.items()]

    # Verification ---------------------------------------------------------------------------

    def verify(self, connection: Any, table: str) -> Verified:
        """Prove the stored ledger is Ledger.from_receipts over the stored receipts.

        Raises InconsistentPublication naming what differs: an unregistered table, a head that
        is not the stored ledger's, a fold that fails, or a fold that differs from the ledger.
        """
        row = fetch_one(
            connection,
            f"SELECT contract, ledger, publication_id FROM {self.tables} "
            f"WHERE table_name = {self.p}",
            (table,),
        )
        if row is None:
            raise InconsistentPublication(f"table {table!r} is not registered in this store")
        head = row[2]
        try:
            stored = self._ledger(connection, table, row[0], row[1], kept=False)
            RegionMap.of(tuple(stored.regions), stored.contract.window_type)  # decodes them all
        except InvalidContract as exc:
            raise InconsistentPublication(f"table {table!r}: the stored ledger: {exc}") from None
        if stored.head != head:
            raise InconsistentPublication(
                f"table {table!r}: the stored head {head} is not the stored ledger's {stored.head}"
            )
        counted = {"receipts": 0, "publications": 0}

        def counting() -> Iterator[Receipt]:
            for receipt in self.receipts_of(connection, table):
                counted["receipts"] += 1
                counted["publications"] += receipt.accepted
                yield receipt

        folded = Ledger.from_receipts(stored.contract, counting())
        if folded != stored or folded.identity != stored.identity:
            raise InconsistentPublication(
                f"table {table!r}: the stored ledger {stored.identity} (head {stored.head}) is not "
                f"the fold of its {counted['receipts']} receipts, {folded.identity} "
                f"(head {folded.head})"
            )
        return Verified(table, counted["receipts"], counted["publications"], head)


class Kept:
    """Chunks by digest, the most recently used up to a total size, for every thread.

    A chunk is charged its bytes while its regions are not decoded, and DECODED times its
    bytes once they are (its Region objects and their values), as a get finds it.
    """

    DECODED = 4

    def __init__(self, size: int) -> None:
        self.size = size
        # name: [chunk, its charge, whether it was charged decoded]
        self._chunks: OrderedDict[str, list[Any]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, names: Iterable[str]) -> dict[str, Chunk]:
        found = {}
        with self._lock:
            for name in names:
                kept = self._chunks.get(name)
                if kept is not None:
                    chunk = kept[0]
                    if not kept[2] and chunk.decoded:
                        self._held -= kept[1]
                        kept[1:] = [self._charge(chunk), True]
                        self._held += kept[1]
                    self._chunks.move_to_end(name)
                    found[name] = chunk
            self._trim()
        return found

    def keep(self, chunks: Iterable[tuple[str, Chunk]]) -> None:
        with self._lock:
            for name, chunk in chunks:
                if name not in self._chunks:
                    self._chunks[name] = [chunk, self._charge(chunk), chunk.decoded]
                    self._held += self._chunks[name][1]
                self._chunks.move_to_end(name)
            self._trim()

    def clear(self) -> None:
        """Forget every chunk, as a new process starts without any."""
        with self._lock:
            self._chunks.clear()
            self._held = 0

    def _charge(self, chunk: Chunk) -> int:
        return len(chunk.canonical) * (self.DECODED if chunk.decoded else 1)

    def _trim(self) -> None:
        while self._held > self.size and self._chunks:
            self._held -= self._chunks.popitem(last=False)[1][1]


KEPT = Kept(64 * 2**20)
"""This process's chunks: a ledger of 20,000 daily regions is about 3 MiB of bytes, and four
times that with every region decoded (claims over the whole table decode them all)."""


def forget() -> None:
    """Forget what this process keeps of stored ledgers (their chunks, indexes and contracts),
    as a new process starts without it, to measure a step as a new task's process runs it.
    Nothing else needs it: what is kept is named by what it holds, never stale."""
    KEPT.clear()
    _index.cache_clear()
    _contract.cache_clear()
    stored.forget()


@lru_cache(maxsize=256)
def _contract(text: str) -> Contract:
    # A contract is immutable and its text is read at every decision.
    return Contract.from_json(text)


@lru_cache(maxsize=64)
def _index(text: str) -> Index:
    # Publish reads the index decide read, unless another publication came between.
    return Index.read(text)


def stamp(moment: datetime) -> str:
    """A UTC instant as fixed-width text, so that text order is time order on every database."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


_HOLD_COLUMNS = (
    "hold_id, table_name, staging_table, manifest, contract, checks, expectations, staged, "
    "base_publication_id, held_at, state, decided_by, decided_at, reason, outcome"
)


def _hold(hold_id: str, rows: list[tuple[Any, ...]]) -> Hold:
    tables = tuple(
        HeldTable(
            table=str(row[1]),
            staged=staged_from_dict(json.loads(row[7])),
            manifest=Manifest.from_json(row[3]),
            contract=_contract(row[4]),
            checks=tuple(Check.from_dict(check) for check in json.loads(row[5])),
            expectations=Expectations.from_dict(json.loads(row[6])),
            base_publication_id=str(row[8]),
        )
        for row in rows
    )
    first = rows[0]
    return Hold(
        hold_id,
        tables,
        datetime.fromisoformat(first[9]),
        str(first[10]),
        decided_by=None if first[11] is None else str(first[11]),
        decided_at=None if first[12] is None else datetime.fromisoformat(first[12]),
        reason=None if first[13] is None else str(first[13]),
        outcome=None if first[14] is None else str(first[14]),
    )


def _execute_all(connection: Any, statements: list[str]) -> None:
    for sql in statements:
        execute(connection, sql)
