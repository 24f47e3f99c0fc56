"""Tables read together: one instant for several tables, decided and replayed as one.

A region is exact at p when its dates are (p, p); claims are exact at p when every region is, and
Claims.exact_as_of is that p. The protocol's theorem: if every region a query reads, in every
table, is exact at the same p, the query answers as the source would have at p, joins, unions,
negation and exact aggregates included (given that both sides compare and compute alike and the
rules the source keeps between its tables hold between the published ones).

The premise, which dogana cannot verify: every delivery comes from ONE consistent read of the
source at p, stamped p. One read is one snapshot of every table:

- PostgreSQL: REPEATABLE READ or SERIALIZABLE, or one exported snapshot (pg_export_snapshot)
  shared by the workers; READ COMMITTED, the default, takes a new snapshot per statement;
- MySQL and MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT;
- Oracle: a read-only transaction, or every query AS OF one SCN;
- SQL Server: SNAPSHOT isolation (READ COMMITTED, the default, is not one read).

Separate export jobs are not one read, and one produced_at for them, such as one date in their
file names, fabricates the instant. Equal table dates do not make an instant either: they are
minima, and a window proven later than the rest of its table gives equal minima and no common
instant.

Group(contracts) names the tables read together; Group.claims states them together;
Group.apply decides one delivery per table as one (all accepted or all rejected, joined by the
together check); Group.replay answers a repeated group from the receipts recorded when it was
accepted together; plan_together plans one snapshot that makes the group exact. A group adds no
wire kind: each table keeps its own receipts and chain.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.contract import Contract
from dogana_core.errors import InvalidContract, PlanningError
from dogana_core.gate import TOGETHER as TOGETHER
from dogana_core.gate import Check, Gate, Outcome, Receipt
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.planner import (
    ExtractionRequest,
    Requirement,
    Window,
    cheapest_read,
    window_for,
)
from dogana_core.values import DATETIME_MAX, utc

T = TypeVar("T")

_DIGEST = re.compile(r"\bdigest ([0-9a-f]{64})\b")


@dataclass(frozen=True)
class Group:
    """Tables read together: Group(contracts), each table once whatever its letter case.

    A table belongs to one group, since deliveries accepted together replay together: a parent
    with several children is one group (check_disjoint refuses two groups sharing a table).

    Exactness across the group rests on one premise dogana cannot verify: every delivery of one
    group delivery comes from one consistent read of the source (REPEATABLE READ, SERIALIZABLE or
    one exported snapshot on PostgreSQL; START TRANSACTION WITH CONSISTENT SNAPSHOT on MySQL and
    MariaDB; a read-only transaction or AS OF one SCN on Oracle; SNAPSHOT isolation on SQL
    Server), stamped with that read's instant. READ COMMITTED, the default of PostgreSQL, Oracle
    and SQL Server, takes a new snapshot per statement and is not one read; nor are separate
    export jobs.

    Arguments keyed by table (ledgers, manifests, windows, outcomes, sources) accept a mapping
    from table name, in any letter case; ledgers and manifests may also be given as an iterable,
    each matched by the table it names.
    """

    contracts: tuple[Contract, ...]

    def __post_init__(self) -> None:
        contracts = self.contracts
        if isinstance(contracts, Contract) or not isinstance(contracts, Iterable):
            raise InvalidContract("Group.contracts: expected the contracts of the tables")
        contracts = tuple(contracts)
        if not contracts:
            raise InvalidContract("Group.contracts: a group names at least one table")
        seen: dict[str, str] = {}
        for contract in contracts:
            if not isinstance(contract, Contract):
                raise InvalidContract(
                    f"Group.contracts: expected Contract values, got {type(contract).__name__}"
                )
            folded = contract.table.casefold()
            if folded in seen:
                raise InvalidContract(
                    f"Group.contracts: table {contract.table!r} is named twice (as "
                    f"{seen[folded]!r}); a group names each table once whatever its letter case"
                )
            seen[folded] = contract.table
        object.__setattr__(self, "contracts", contracts)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(contract.table for contract in self.contracts)

    def __contains__(self, table: object) -> bool:
        return isinstance(table, str) and self._find(table) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.contracts)

    def contract(self, table: str) -> Contract:
        """The contract of table, whatever its letter case."""
        found = self._find(table)
        if found is None:
            raise InvalidContract(f"Group: table {table!r} is not in the group {list(self.tables)}")
        return found

    def _find(self, table: str) -> Contract | None:
        folded = table.casefold()
        return next((c for c in self.contracts if c.table.casefold() == folded), None)

    # Claims --------------------------------------------------------------------------------------

    def claims(
        self,
        ledgers: Mapping[str, Ledger] | Iterable[Ledger],
        now: datetime,
        *,
        limit: timedelta,
        windows: Mapping[str, Any] | None = None,
    ) -> Claims:
        """Every table's regions together, each table cut to its window, stated at now.

        The two dates are the minima across every table's regions, lower bounds on each input,
        not one snapshot: only exact_as_of states a common instant, and only under the premise
        of one consistent read (see Group). A table without a window is read whole.
        """
        by_table = self.ledgers(ledgers)
        cut = self.windows(windows)
        now = utc(now, "Group.claims now")
        return Claims.joined(
            now,
            limit,
            (
                ledger.claims(now, limit=limit, window=cut.get(table))
                for table, ledger in by_table.items()
            ),
        )

    # Deciding ------------------------------------------------------------------------------------

    def apply(
        self,
        ledgers: Mapping[str, Ledger] | Iterable[Ledger],
        manifests: Mapping[str, Manifest] | Iterable[Manifest],
        *,
        now: datetime,
        outcomes: Mapping[str, Iterable[Check]] | None = None,
        sources: Mapping[str, str | None] | None = None,
    ) -> tuple[Receipt, ...]:
        """Decide one manifest per table as one delivery: every receipt accepted, or every one
        rejected, in the group's table order.

        1. Each table is decided alone, as Gate.evaluate does, with the receiver's checks of
           that table's rows (outcomes) and its source.
        2. The together check passes when every manifest has the same produced_at and every
           table is accepted alone. Its detail digests every manifest identity
           (together_digest), so a receipt carrying it was accepted with exactly those
           deliveries.
        3. That check joins every receipt: each table is decided again with it as the joint
           check, so one rejection rejects them all.

        On acceptance the receiver saves every table's rows, ledger and receipt in one commit, or
        nothing. The same produced_at is necessary, not sufficient: the rows must come from one
        consistent read of the source at that instant (see Group).
        """
        by_table = self.ledgers(ledgers)
        delivered = self._manifests(manifests)
        checks = self._keyed(outcomes, "outcomes")
        origin = self._keyed(sources, "sources")
        now = utc(now, "Group.apply now")

        def decide(table: str, joint: tuple[Check, ...]) -> Receipt:
            return Gate.evaluate(
                by_table[table],
                delivered[table],
                tuple(checks.get(table, ())),
                now=now,
                source=origin.get(table),
                joint=joint,
            )

        alone = {table: decide(table, ()) for table in self.tables}
        together = _together_check(alone, delivered)
        return tuple(decide(table, (together,)) for table in self.tables)

    # Replay --------------------------------------------------------------------------------------

    def replay(
        self,
        manifests: Mapping[str, Manifest] | Iterable[Manifest],
        recorded: Iterable[Receipt],
    ) -> tuple[Receipt, ...] | None:
        """The recorded answer to a repeated group, or None when it is a new decision.

        A group replays whole: when, for every table, recorded holds the acceptance of that
        table's manifest carrying a passed together check whose digest is this group's, the
        answer is those receipts as replays, in the group's table order. Anything else (a
        manifest accepted alone, in another group, rejected or never seen) is a new decision, and
        the group needs a new read.

        recorded is the receiver's receipts, any superset of the ones that matter (for example
        those found by looking each manifest's identity up). The receiver verifies every
        declared content_hash against the bytes before answering with a replay.
        """
        delivered = self._manifests(manifests)
        digest = together_digest(delivered.values())
        found: dict[str, Receipt] = {}
        for receipt in recorded:
            if not isinstance(receipt, Receipt):
                raise InvalidContract(
                    f"Group.replay: expected Receipt values, got {type(receipt).__name__}"
                )
            contract = self._find(receipt.table)
            if contract is None or receipt.outcome is not Outcome.ACCEPTED:
                continue
            table = contract.table
            if receipt.manifest.identity != delivered[table].identity:
                continue
            if recorded_digest(receipt) == digest:
                found[table] = receipt
        if len(found) != len(self.contracts):
            return None
        return tuple(found[table].replay() for table in self.tables)

    # Arguments keyed by table --------------------------------------------------------------------

    def ledgers(self, ledgers: Mapping[str, Ledger] | Iterable[Ledger]) -> dict[str, Ledger]:
        """One ledger per table, keyed by the group's spelling of the table, in group order."""
        if isinstance(ledgers, Mapping):
            by_table = self._keyed(ledgers, "ledgers")
        else:
            by_table = self._matched(ledgers, "ledgers", Ledger, _ledger_table)
        self._require_every(by_table, "ledgers", "one ledger per table")
        for table, ledger in by_table.items():
            if not isinstance(ledger, Ledger):
                raise InvalidContract(
                    f"Group ledgers[{table!r}]: expected a Ledger, got {type(ledger).__name__}"
                )
            if ledger.contract.table.casefold() != table.casefold():
                raise InvalidContract(
                    f"Group ledgers[{table!r}]: this is the ledger of table "
                    f"{ledger.contract.table!r}, not of {table!r}"
                )
        return by_table

    def windows(self, windows: Mapping[str, Any] | None) -> dict[str, Window]:
        """Each named table's closed window, checked against its contract's window column."""
        keyed = self._keyed(windows, "windows")
        return {
            table: window_for(self.contract(table), window, f"Group windows[{table!r}]")
            for table, window in keyed.items()
            if window is not None
        }

    def _manifests(
        self, manifests: Mapping[str, Manifest] | Iterable[Manifest]
    ) -> dict[str, Manifest]:
        if isinstance(manifests, Mapping):
            by_table = self._keyed(manifests, "manifests")
        else:
            by_table = self._matched(manifests, "manifests", Manifest, _manifest_table)
        self._require_every(by_table, "manifests", "one manifest per table")
        for table, manifest in by_table.items():
            if not isinstance(manifest, Manifest):
                raise InvalidContract(
                    f"Group manifests[{table!r}]: expected a Manifest, got "
                    f"{type(manifest).__name__}"
                )
        return by_table

    def _keyed(self, values: Mapping[str, T] | None, what: str) -> dict[str, T]:
        """values re-keyed by the group's spelling of each table, in group order."""
        if values is None:
            return {}
        if not isinstance(values, Mapping):
            raise InvalidContract(f"Group {what}: expected a mapping from table name")
        out: dict[str, T] = {}
        for name, value in values.items():
            if not isinstance(name, str):
                raise InvalidContract(f"Group {what}: keys are table names, got {name!r}")
            table = self.contract(name).table
            if table in out:
                raise InvalidContract(
                    f"Group {what}: table {table!r} is named twice (letter case aside)"
                )
            out[table] = value
        return {table: out[table] for table in self.tables if table in out}

    def _matched(
        self, values: Iterable[T], what: str, kind: type, table_of: Callable[[T], str]
    ) -> dict[str, T]:
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise InvalidContract(f"Group {what}: expected a mapping or an iterable")
        out: dict[str, T] = {}
        for value in values:
            if not isinstance(value, kind):
                raise InvalidContract(
                    f"Group {what}: expected {kind.__name__} values, got {type(value).__name__}"
                )
            table = self.contract(table_of(value)).table
            if table in out:
                raise InvalidContract(f"Group {what}: two for table {table!r}; one per table")
            out[table] = value
        return {table: out[table] for table in self.tables if table in out}

    def _require_every(self, by_table: Mapping[str, object], what: str, rule: str) -> None:
        missing = [table for table in self.tables if table not in by_table]
        if missing:
            raise InvalidContract(f"Group {what}: {rule}; missing {missing}")


def _ledger_table(ledger: Ledger) -> str:
    return ledger.contract.table


def _manifest_table(manifest: Manifest) -> str:
    return manifest.table


def check_disjoint(groups: Iterable[Group]) -> None:
    """Refuse groups sharing a table: a table belongs to one group, since deliveries accepted
    together replay together."""
    owner: dict[str, tuple[int, str]] = {}
    for index, group in enumerate(groups):
        for table in group.tables:
            folded = table.casefold()
            if folded in owner and owner[folded][0] != index:
                raise InvalidContract(
                    f"groups[{index}]: table {table!r} already belongs to groups"
                    f"[{owner[folded][0]}] (as {owner[folded][1]!r}); a table belongs to one group"
                )
            owner[folded] = (index, table)


# The together check -----------------------------------------------------------------------------


def together_digest(manifests: Iterable[Manifest]) -> str:
    """The digest of a group delivery: SHA-256 of the UTF-8 of its manifests' identities, sorted
    and joined by ":". Order-free, so it names the set of deliveries, not how they were passed."""
    identities = sorted(manifest.identity for manifest in manifests)
    return hashlib.sha256(":".join(identities).encode("utf-8")).hexdigest()


def recorded_digest(receipt: Receipt) -> str | None:
    """The digest of the group a receipt was accepted with: its passed together check's, if any."""
    for check in receipt.checks:
        if check.name == TOGETHER and check.passed:
            match = _DIGEST.search(check.detail)
            if match is not None:
                return match[1]
    return None


def _together_check(alone: Mapping[str, Receipt], manifests: Mapping[str, Manifest]) -> Check:
    digest = together_digest(manifests.values())
    instants = sorted({manifest.produced_at for manifest in manifests.values()})
    rejected = [table for table, receipt in alone.items() if not receipt.accepted]
    problems: list[str] = []
    if len(instants) > 1:
        stamps = ", ".join(
            f"{table} {manifest.produced_at.isoformat()}" for table, manifest in manifests.items()
        )
        problems.append(f"the manifests' produced_at differ ({stamps})")
    for table in rejected:
        failed = ", ".join(check.name for check in alone[table].failed)
        problems.append(f"table {table} is rejected alone ({failed})")
    if problems:
        return Check(TOGETHER, False, f"not together: {'; '.join(problems)}; digest {digest}")
    return Check(
        TOGETHER,
        True,
        f"{len(manifests)} table(s) accepted together at produced_at "
        f"{instants[0].isoformat()}; digest {digest}",
    )


# Planning together ------------------------------------------------------------------------------


def plan_together(
    group: Group,
    ledgers: Mapping[str, Ledger] | Iterable[Ledger],
    at_least: datetime,
    *,
    windows: Mapping[str, Any] | None = None,
) -> tuple[ExtractionRequest, ...] | None:
    """One snapshot that makes the group exact at one instant no earlier than at_least.

    None when Group.claims over the windows are already exact at an instant no earlier than
    at_least. Otherwise one request per table, in the group's table order, all with one until:
    the earliest admissible boundary, no earlier than at_least and later than every
    complete_as_of the chosen reads cover. Each is the cheapest read (ties broken by name) that
    reaches (until, until) over its table's window, which rehearsing it against the ledger
    proves: a complete delivery, a keyless append, timestamp tombstones with since no later than
    the deletions date, generation or sequence tombstones where both dates were already equal.
    A table without changes delivers an empty read of a tombstone changes shape.

    The extractor reads every table in ONE consistent snapshot taken at or after until and stamps
    every manifest with that snapshot's instant: REPEATABLE READ, SERIALIZABLE or one exported
    snapshot on PostgreSQL; START TRANSACTION WITH CONSISTENT SNAPSHOT on MySQL and MariaDB; a
    read-only transaction or AS OF one SCN on Oracle; SNAPSHOT isolation on SQL Server. Separate
    reads stamped alike fabricate the instant. Raises PlanningError when a table has no shape that
    reaches exactness.
    """
    at_least = utc(at_least, "plan_together at_least")
    by_table = group.ledgers(ledgers)
    cut = group.windows(windows)
    exact = group.claims(by_table, DATETIME_MAX, limit=NO_LIMIT, windows=cut).exact_as_of
    if exact is not None and exact >= at_least:
        return None
    # Each table's cheapest exact read no earlier than until, at its own earliest boundary. A read
    # that covers later evidence moves until later for every table; at a later until a cheaper
    # read may become admissible, so choose again until every table reads at the same until.
    # until only grows, through the finitely many boundaries the ledgers hold, so this ends.
    until = at_least
    while True:
        chosen: list[ExtractionRequest] = []
        for table, ledger in by_table.items():
            requirement = Requirement.exact(table, until, window=cut.get(table))
            try:
                chosen.append(cheapest_read(ledger, requirement, exact=True))
            except PlanningError as exc:
                raise PlanningError(f"plan_together: table {table}: {exc}") from None
        latest = max(request.until for request in chosen)
        if latest == until:
            return tuple(chosen)
        until = latest
