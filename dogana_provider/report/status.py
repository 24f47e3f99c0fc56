"""What a receiver holds now: every table's claims, rows, last receipts, activation (pending,
active until X, expired at X, or not required: receiver/activation.py), the deliveries held
for a person (receiver/holds.py) and, when asked, its lineage (its sources and the last
publications' edges: receiver/lineage_store.py), in one committed state.

Read through DoganaHook.committed, the read transaction the ClaimsSensor's ledgers come from, so
a group's tables are never shown at two instants. `dogana status` prints it, and the Airflow UI
page (dogana_provider/ui) draws it.

A table with a window column is stated over the span delivered so far, from the first region
with dates to the last: the values beyond it were never promised, and stating them would call
every rolling window unknown. Gaps inside the span stay unknown and are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.gate import Receipt
from dogana_core.ledger import Ledger
from dogana_core.region import Region
from dogana_provider.checks.expectations import NONE_DETAIL, Expectations, Reported, reported
from dogana_provider.dialects import declared_types
from dogana_provider.receiver.activation import Activation, SourceState
from dogana_provider.receiver.lineage_store import MOST, Edge, Feeding
from dogana_provider.receiver.receiver import UnknownTable
from dogana_provider.receiver.store import Hold

if TYPE_CHECKING:  # the hook imports Airflow, which `dogana` loads only to open a receiver
    from dogana_provider.hooks.dogana import DoganaHook


@dataclass(frozen=True)
class TableStatus:
    """One table of the receiver, as of ReceiverStatus.at."""

    table: str
    ledger: Ledger
    claims: Claims
    span: tuple[Region, ...]  # the regions stated: the delivered span of a windowed table
    rows: int | None  # rows in the published table; None before its first publication
    publications: int
    receipts: tuple[Receipt, ...]  # the last ones recorded, newest first
    last_publication: Receipt | None
    activation: SourceState
    declared: Expectations = field(default_factory=Expectations)  # quality expectations
    held: tuple[Hold, ...] = ()  # deliveries waiting for a person to release or discard them
    # What fed it, the most recent first, and its last publications' lineage edges, newest
    # first (receiver/lineage_store.py); None when not read (read_status's lineage=0).
    sources: tuple[Feeding, ...] | None = None
    runs: tuple[Edge, ...] | None = None

    @property
    def expectations(self) -> Reported:
        """What the last publication's receipt says of its expectations (none_declared when
        none was declared, or before the first publication)."""
        if self.last_publication is None:
            return Reported(False)
        return reported(self.last_publication)

    @property
    def age(self) -> timedelta | None:
        """How long ago the table was last complete: rows added since may be missing."""
        complete = self.claims.complete_as_of
        return None if complete is None else max(self.claims.now - complete, timedelta(0))

    @property
    def windowed(self) -> bool:
        return self.ledger.contract.window_column is not None

    def to_dict(self) -> dict[str, Any]:
        claims = self.claims
        return {
            "table": self.table,
            "state": str(claims.state),
            "complete_as_of": _iso(claims.complete_as_of),
            "deletions_as_of": _iso(claims.deletions_as_of),
            "exact_as_of": _iso(claims.exact_as_of),
            "age_seconds": None if self.age is None else self.age.total_seconds(),
            "rows": self.rows,
            "publications": self.publications,
            "publication_id": self.ledger.publication_id,
            "claims": claims.to_dict(),
            "receipts": [receipt_summary(r) for r in self.receipts],
            "expectations": {
                "declared": self.declared.to_dict() if self.declared else NONE_DETAIL,
                "last_publication": self.expectations.summary,
            },
            "activation": activation_summary(self.activation),
            "held": [
                {"hold_id": hold.hold_id, "held_at": _iso(hold.held_at)} for hold in self.held
            ],
            "lineage": None
            if self.sources is None or self.runs is None
            else {
                "sources": [feeding.to_dict() for feeding in self.sources],
                "recent_runs": [edge.to_dict() for edge in self.runs],
            },
        }


@dataclass(frozen=True)
class ReceiverStatus:
    receiver: str  # how the receiver was named: a connection id, or a URL without its password
    dialect: str
    at: datetime
    tables: tuple[TableStatus, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "receiver": self.receiver,
            "dialect": self.dialect,
            "at": self.at.isoformat(),
            "tables": [table.to_dict() for table in self.tables],
        }


def read_status(
    hook: DoganaHook,
    now: datetime,
    *,
    tables: Sequence[str] | None = None,
    receipts: int = 1,
    name: str | None = None,
    lineage: int = 0,
) -> ReceiverStatus:
    """Every registered table (or those named) with its claims at now, in one committed state;
    with lineage > 0, its sources and the lineage edges of its last lineage publications.

    A table named but not registered raises UnknownTable, as it does for the sensor.
    """
    receiver = hook.receiver
    store, dialect = receiver.store, receiver.dialect
    found: list[TableStatus] = []
    with hook.committed() as connection:
        required = receiver.steps.sources.required(connection)
        records = receiver.steps.sources.records(connection)
        for table in store.table_names(connection) if tables is None else tables:
            state = store.state(connection, table)
            if state is None:
                raise UnknownTable(
                    f"no contract is registered for table {table!r} in receiver "
                    f"{name or hook.receiver_conn_id!r}"
                )
            latest, publications, last = store.latest(connection, table, receipts)
            rows = None
            if declared_types(connection, dialect, table):
                cursor = connection.cursor()
                try:
                    cursor.execute(f"SELECT COUNT(*) FROM {dialect.quote(table)}")
                    rows = int(cursor.fetchone()[0])
                finally:
                    cursor.close()
            span = delivered_span(state.ledger)
            claims = Claims.at(now, NO_LIMIT, [(table, region) for region in span])
            declared = store.expectations(connection, table)
            activation = Activation(table, required, records.get(table)).at(now)
            held = tuple(store.holds_of(connection, table))
            edges, recent = receiver.steps.lineage, min(lineage, MOST)
            sources = tuple(edges.sources_of(connection, table, recent)) if recent else None
            runs = tuple(edges.edges(connection, output=table, limit=recent)) if recent else None
            found.append(
                TableStatus(
                    table,
                    state.ledger,
                    claims,
                    span,
                    rows,
                    publications,
                    tuple(latest),
                    last,
                    activation=activation,
                    declared=declared,
                    held=held,
                    sources=sources,
                    runs=runs,
                )
            )
    return ReceiverStatus(name or hook.receiver_conn_id, str(dialect), now, tuple(found))


def delivered_span(ledger: Ledger) -> tuple[Region, ...]:
    """The regions a status states: all of them, or a windowed table's from first to last known."""
    regions = tuple(ledger.regions)
    if ledger.contract.window_column is None:
        return regions
    known = [i for i, region in enumerate(regions) if region.complete_as_of is not None]
    if not known:
        return regions
    return regions[known[0] : known[-1] + 1]


def receipt_summary(receipt: Receipt) -> dict[str, Any]:
    """A receipt as a person scans it: what was delivered, the outcome, the failed checks."""
    manifest = receipt.manifest
    return {
        "outcome": str(receipt.outcome),
        "shape": manifest.shape,
        "produced_at": _iso(manifest.produced_at),
        "received_at": _iso(receipt.received_at),
        "rows": manifest.rows,
        "tombstones": manifest.tombstones,
        "window": None if manifest.window is None else [str(end) for end in manifest.window],
        "source": receipt.source,
        "publication_id": receipt.publication_id,
        "checks": [check.to_dict() for check in receipt.checks],
        "failed": [check.name for check in receipt.checks if not check.passed],
    }


def activation_summary(state: SourceState) -> dict[str, Any]:
    """A table's activation as JSON: the state, the line a person reads, and the record."""
    record = state.record
    return {
        "required": state.required,
        "status": str(state.status),
        "line": state.line(),
        "detail": state.detail(),
        "owner": None if record is None else record.owner,
        "authorized_by": None if record is None else record.granted_by,
        "expires_at": _iso(state.expires_at),
        "licence": None if record is None else record.licence,
        "purposes": [] if record is None else list(record.purposes),
        "provenance": None if record is None else record.provenance,
    }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
