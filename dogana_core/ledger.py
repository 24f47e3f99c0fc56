"""Ledger: what a table's published rows are proven to be, region by region, and its chain.

A Ledger carries its contract, regions partitioning the window column's domain (one region when
the contract has no window column), the table's position (generation) and the head of its
publication chain. It keeps no history of accepted identities: it is the fold of the accepted
receipts, and each receipt's ledger_identity checks one step of that fold.

Ledger.apply does accounting only. It enforces Transitions 1 to 6 and 8 of the protocol, raising
RejectedDelivery naming the rule, and raises each date exactly as far as the delivery's shape
proves, never further:

    complete table or window       (t, t) over the coverage; a complete table sets the
                                   position to the one it issues, or none
    keyless append                 (t, t): the source never deletes or revises a row
    timestamp changes since s      c' = t; d' = t with tombstones where s <= d, else d
    generation or sequence changes c' = t; d' = t with tombstones where c = d, else d;
                                   the position becomes the one the read issues

Rule 7 (t <= now) needs the receiver's clock and belongs to the gate.

Why the feeds repair deletions only where c = d: a position is opaque, so the ledger cannot say
which instant it stands for. It was issued by a whole-table read that set every region's
complete_as_of to that read's boundary or later, so where d = c the region's deletions date is
no earlier than the position's instant, and every deletion after it is in the feed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property, lru_cache

from dogana_core.claims import Claims
from dogana_core.contract import Contract
from dogana_core.errors import InconsistentPublication, InvalidContract, RejectedDelivery
from dogana_core.jcs import canonicalize
from dogana_core.manifest import SHA256_HEX, Manifest
from dogana_core.plan import ApplyPlan
from dogana_core.receipt import GENESIS, Outcome, Receipt, chain
from dogana_core.region import Evidence, Region, RegionMap, before
from dogana_core.shape import Checkpoint, Shape
from dogana_core.values import Position, Scalar, check_scalar, is_domain_minimum, successor
from dogana_core.wire import Array, Nested, Optional, Text, Wire, wire_field
from dogana_core.wire import Position as PositionCodec

__all__ = ["GENESIS", "Ledger", "Region", "chain"]


Bounds = tuple[Scalar | None, Scalar | None]
"""A half-open coverage [low, high) of the window column; None is a domain end."""


@dataclass(frozen=True)
class Ledger(Wire):
    """Ledger(contract, regions, generation=None, publication_id=None); Ledger.new to start."""

    contract: Contract = wire_field(Nested(lambda: Contract))
    regions: Sequence[Region] = wire_field(Array(Nested(lambda: Region)))
    generation: Position | None = wire_field(Optional(PositionCodec()), default=None)
    publication_id: str | None = wire_field(Optional(Text(nonempty=True)), default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.contract, Contract):
            raise InvalidContract(
                f"Ledger.contract: expected a Contract, got {type(self.contract).__name__}"
            )
        regions = self.regions
        if isinstance(regions, RegionMap):
            # A map is checked whole when built and kept valid by every replace; its endpoints
            # share one type, so one endpoint tells whether it fits this contract's domain.
            if len(regions) > 1:
                _check_endpoint(regions.a_bounded_end(), self.contract)
        else:
            if isinstance(regions, str | bytes) or not isinstance(regions, Iterable):
                raise InvalidContract("Ledger.regions: expected a sequence of Region")
            object.__setattr__(
                self,
                "regions",
                RegionMap.of(tuple(regions), self.contract.window_type, "Ledger.regions"),
            )
        generation = self.generation
        if generation is not None and (
            isinstance(generation, bool)
            or not isinstance(generation, int | str)
            or generation == ""
        ):
            raise InvalidContract(
                f"Ledger.generation: {generation!r} is not an integer or a nonempty string"
            )
        if self.publication_id is None:
            if len(self.regions) != 1 or self.regions[0].known or generation is not None:
                raise InvalidContract(
                    "Ledger.publication_id: a ledger without a publication has accepted nothing, "
                    "so it "
                    "holds one unknown region and no position"
                )
        elif not isinstance(self.publication_id, str) or not SHA256_HEX.fullmatch(
            self.publication_id
        ):
            raise InvalidContract(
                f"Ledger.publication_id: {self.publication_id!r} is not a chain head (lowercase "
                "hex SHA-256)"
            )

    @classmethod
    def new(cls, contract: Contract) -> Ledger:
        """The ledger of a table nothing was accepted for: one unbounded unknown region."""
        return cls(contract, (Region(),))

    @property
    def _map(self) -> RegionMap:
        assert isinstance(self.regions, RegionMap)
        return self.regions

    @property
    def head(self) -> str:
        """The chain head a decision on this ledger builds on: the string None before any."""
        return GENESIS if self.publication_id is None else self.publication_id

    @property
    def has_history(self) -> bool:
        return self.publication_id is not None

    @cached_property
    def identity(self) -> str:
        """SHA-256 of the RFC 8785 bytes of identity_dict(), as for every wire kind.

        Written out key by key in RFC 8785 order (contract, generation, kind, publication_id,
        regions) so that the contract's bytes are encoded once per contract and each chunk of
        regions once per chunk: a step re-encodes only what it changed. Tests compare this with
        the generic computation.
        """
        digest = hashlib.sha256(b'{"contract":')
        digest.update(_contract_bytes(self.contract))
        if self.generation is not None:
            digest.update(b',"generation":' + canonicalize(self.generation))
        digest.update(b',"kind":"Ledger"')
        if self.publication_id is not None:
            digest.update(b',"publication_id":' + canonicalize(self.publication_id))
        digest.update(b',"regions":')
        self._map.feed(digest)
        digest.update(b"}")
        return digest.hexdigest()

    # Reading -------------------------------------------------------------------------------------

    def coverage(self, manifest: Manifest) -> Bounds:
        """The half-open bounds a manifest covers: the whole domain, or its closed window."""
        if manifest.window is None:
            return (None, None)
        low, high = manifest.window
        return (None if is_domain_minimum(low) else low, successor(high))

    def regions_over(
        self, low: Scalar | None = None, high: Scalar | None = None
    ) -> tuple[Region, ...]:
        """The regions meeting [low, high), cut to it; costs what it returns."""
        if low is not None and high is not None and not before(low, high):
            raise InvalidContract(f"Ledger.regions_over: [{low!r}, {high!r}) is empty")
        return tuple(self._map.over(low, high))

    def claims(
        self, now: datetime, *, limit: timedelta, window: tuple[Scalar, Scalar] | None = None
    ) -> Claims:
        """The regions cut to window (closed), each stated at now; see Claims."""
        low: Scalar | None = None
        high: Scalar | None = None
        if window is not None:
            window_type = self.contract.window_type
            if window_type is None:
                raise InvalidContract(
                    f"Ledger.claims: table {self.contract.table} has no window column"
                )
            a, b = (
                check_scalar(end, window_type, f"Ledger.claims window[{i}]")
                for i, end in enumerate(window)
            )
            if before(b, a):
                raise InvalidContract(f"Ledger.claims: window low {a!r} is after high {b!r}")
            low, high = (None if is_domain_minimum(a) else a), successor(b)
        return Claims.of_runs(now, limit, self.contract.table, self._map.runs(low, high))

    # Deciding ------------------------------------------------------------------------------------

    def plan(self, manifest: Manifest) -> ApplyPlan:
        """The operations the receiver runs if the manifest is accepted (Transitions 1 checked)."""
        self._check_manifest(manifest)
        return ApplyPlan.for_delivery(self.contract, manifest)

    def apply(self, manifest: Manifest) -> Ledger:
        """The ledger after accepting manifest; RejectedDelivery names the transition it breaks.

        Accounting only: no clock (the gate checks t <= now), no rows, no replay lookup.
        Ledger.apply is not idempotent: a repeated manifest is a replay for the receiver to
        answer from its receipts.
        """
        shape = self._check_manifest(manifest)
        t = manifest.produced_at
        low, high = self.coverage(manifest)
        covered = self._map.over(low, high)
        self._check_not_late(covered, t)
        generation = self.generation
        if shape.is_complete:
            pieces = [Region.span(low, high, t, t)]
            if not shape.is_window:
                generation = manifest.generation
        else:
            self._check_known(covered, manifest)
            if shape.checkpoint is Checkpoint.TIMESTAMP:
                pieces = self._timestamp(covered, manifest, shape)
            else:
                self._check_position(manifest, shape)
                pieces = [r.with_evidence(_feed(r.evidence, t, shape)) for r in covered]
                generation = manifest.generation
        return Ledger(
            self.contract,
            self._map.replace(low, high, pieces),
            generation,
            chain(self.publication_id, self.contract, manifest),
        )

    def _check_manifest(self, manifest: Manifest) -> Shape:
        """Transitions 1: the manifest matches its shape and contract, bounds and key types "
        "included."""
        try:
            manifest.check(self.contract)
        except InvalidContract as exc:
            raise RejectedDelivery(
                f"Transitions 1 (the manifest matches its shape and contract): {exc}"
            ) from None
        return self.contract.shape(manifest.shape)

    @staticmethod
    def _check_not_late(covered: Sequence[Region], t: datetime) -> None:
        """Transitions 2: t > complete_as_of in every affected known region."""
        for region in covered:
            if region.complete_as_of is not None and not t > region.complete_as_of:
                raise RejectedDelivery(
                    "Transitions 2 (every affected known region has t > complete_as_of): "
                    "produced_at "
                    f"{t.isoformat()} is not after complete_as_of "
                    f"{region.complete_as_of.isoformat()} of "
                    f"{_where(region)}; a late delivery cannot overwrite newer evidence"
                )

    def _check_known(self, covered: Sequence[Region], manifest: Manifest) -> None:
        """Transitions 3: a changed-only delivery covers known regions only."""
        unknown = next((region for region in covered if not region.known), None)
        if unknown is None:
            return
        if not self.contract.keyed and self._is_first_append(manifest):
            return
        why = "a changed-only read proves nothing where nothing was proven before"
        if not self.contract.keyed:
            start_at = self.contract.start_at
            why = (
                "only the first append on an untouched ledger may start at the contract's start_at "
                f"({'none declared' if start_at is None else start_at.isoformat()}); otherwise "
                "deliver "
                "a complete whole-table read first"
            )
        raise RejectedDelivery(
            f"Transitions 3 (every region a changed-only delivery covers is known): "
            f"{_where(unknown)} "
            f"is unknown; {why}"
        )

    def _is_first_append(self, manifest: Manifest) -> bool:
        return (
            not self.has_history
            and self.contract.start_at is not None
            and manifest.since == self.contract.start_at
        )

    def _timestamp(
        self, covered: Sequence[Region], manifest: Manifest, shape: Shape
    ) -> list[Region]:
        """Transitions 3 and 4 for timestamp reads, then the dates they prove."""
        t, since = manifest.produced_at, manifest.since
        assert isinstance(since, datetime)
        if not since <= t:
            raise RejectedDelivery(
                f"Transitions 4 (timestamp changes have since <= t): since {since.isoformat()} is "
                "after "
                f"produced_at {t.isoformat()}"
            )
        if not self.contract.keyed:
            # An append covers (since, t] and never overlaps, so since must be where every
            # covered region's evidence ends; the source never deletes, so (t, t) holds.
            for region in covered:
                if region.known and region.complete_as_of != since:
                    raise RejectedDelivery(
                        "Transitions 3 (every later append has since equal to complete_as_of in "
                        "every "
                        f"region it covers): since {since.isoformat()} but {_where(region)} is "
                        "complete as "
                        f"of {region.complete_as_of.isoformat()}"  # type: ignore[union-attr]
                    )
            return [Region.span(covered[0].low, covered[-1].high, t, t)]
        pieces = []
        for region in covered:
            c, d = region.evidence
            assert c is not None and d is not None
            if not since <= c:
                raise RejectedDelivery(
                    "Transitions 4 (timestamp changes have since <= complete_as_of everywhere "
                    "covered): "
                    f"since {since.isoformat()} is after complete_as_of {c.isoformat()} of "
                    f"{_where(region)}, "
                    "so changes in between would be missed"
                )
            # Every change after since is delivered, so what was complete at c >= since is
            # complete at t. Deletions after d are all delivered only with tombstones and s <= d.
            repaired = shape.has_tombstones and since <= d
            pieces.append(region.with_evidence((t, t if repaired else d)))
        return pieces

    def _check_position(self, manifest: Manifest, shape: Shape) -> None:
        """Transitions 5 (generations chain) and 6 (sequences reread, never skip or go back)."""
        held, since, issued = self.generation, manifest.since, manifest.generation
        if shape.checkpoint is Checkpoint.GENERATION:
            if held != since:
                raise RejectedDelivery(
                    "Transitions 5 (generation changes have since equal to the held generation): "
                    "since "
                    f"{since!r}, held {held!r}; a broken chain needs a full reset, a complete "
                    "whole-table "
                    "delivery issuing a generation"
                )
            return
        if held is None or isinstance(held, str):
            raise RejectedDelivery(
                "Transitions 6 (a missing or opaque position needs a complete delivery issuing "
                "one): the "
                f"ledger holds "
                f"{'no position' if held is None else f'the opaque position {held!r}'}; a "
                "sequence read needs a held integer"
            )
        assert isinstance(since, int) and isinstance(issued, int)
        if not since <= held <= issued:
            raise RejectedDelivery(
                "Transitions 6 (keyed sequence reads have since <= position <= generation): since "
                f"{since}, held position {held}, generation {issued}; a read may reread, never "
                "skip or go back"
            )

    # The chain -----------------------------------------------------------------------------------

    def follow(self, receipt: Receipt) -> Ledger:
        """Apply one accepted receipt, checking it continues the chain and leaves the ledger it "
        "names."""
        table = self.contract.table
        if receipt.table != table:
            raise InconsistentPublication(
                f"receipt is filed under table {receipt.table!r}, not {table!r}: a foreign receipt"
            )
        if receipt.outcome is not Outcome.ACCEPTED:
            raise InconsistentPublication(
                f"a {receipt.outcome} receipt is not a step of the chain: only acceptances are "
                "followed "
                "(rejections change nothing; a replay repeats an acceptance already followed)"
            )
        if receipt.base_publication_id != self.head:
            raise InconsistentPublication(
                f"receipt builds on publication {receipt.base_publication_id}, but the head is "
                f"{self.head}: "
                "a receipt is missing or out of order"
            )
        ledger = self
        if receipt.contract != self.contract:
            try:
                ledger = self.with_contract(receipt.contract)
            except InvalidContract as exc:
                raise InconsistentPublication(
                    f"receipt's contract cannot follow the ledger's: {exc}"
                ) from None
        try:
            after = ledger.apply(receipt.manifest)
        except RejectedDelivery as exc:
            raise InconsistentPublication(
                f"receipt's manifest does not apply to the ledger: {exc}"
            ) from None
        if after.publication_id != receipt.publication_id:
            raise InconsistentPublication(
                f"receipt names publication {receipt.publication_id}, the chain gives "
                f"{after.publication_id}"
            )
        if after.identity != receipt.ledger_identity:
            raise InconsistentPublication(
                f"receipt names ledger {receipt.ledger_identity}, following it gives "
                f"{after.identity}"
            )
        return after

    @classmethod
    def from_receipts(cls, contract: Contract, receipts: Iterable[Receipt]) -> Ledger:
        """The fold of the accepted receipts in order, each under its own contract, then contract.

        Rejections are skipped; a missing, reordered or foreign receipt raises
        InconsistentPublication. A contract that changes a fixed field of the history raises
        InvalidContract.
        """
        ledger: Ledger | None = None
        for index, receipt in enumerate(receipts):
            if receipt.table != contract.table:
                raise InconsistentPublication(
                    f"receipts[{index}]: filed under table {receipt.table!r}, not "
                    f"{contract.table!r}: foreign"
                )
            if not receipt.accepted:
                continue
            if ledger is None:
                ledger = cls.new(receipt.contract)
            try:
                ledger = ledger.follow(receipt)
            except InconsistentPublication as exc:
                raise InconsistentPublication(f"receipts[{index}]: {exc}") from None
        return cls.new(contract) if ledger is None else ledger.with_contract(contract)

    def with_contract(self, contract: Contract) -> Ledger:
        """This ledger under another contract: regions, position and head kept.

        Once the table has history its fixed fields (table, key, window, deleted column and the
        key and window types) are refused changed: the dates would speak of other rows.
        """
        if not isinstance(contract, Contract):
            raise InvalidContract(
                f"Ledger.with_contract: expected a Contract, got {type(contract).__name__}"
            )
        if self.has_history:
            before, after = self.contract.fixed_fields(), contract.fixed_fields()
            changed = [name for name in before if before[name] != after[name]]
            if changed:
                raise InvalidContract(
                    f"Ledger.with_contract: {', '.join(changed)} cannot change once table "
                    f"{self.contract.table} has history (Contract evolution)"
                )
        return Ledger(contract, self._map, self.generation, self.publication_id)


@lru_cache(maxsize=64)
def _contract_bytes(contract: Contract) -> bytes:
    return canonicalize(contract.identity_dict())


def _feed(evidence: Evidence, t: datetime, shape: Shape) -> Evidence:
    """The dates a generation or sequence read proves over a region it covers."""
    c, d = evidence
    return (t, t if shape.has_tombstones and c == d else d)


def _check_endpoint(end: Scalar | None, contract: Contract) -> None:
    window_type = contract.window_type
    if window_type is None:
        raise InvalidContract(
            f"Ledger.regions: table {contract.table} has no window column, so its ledger has one "
            "region"
        )
    check_scalar(end, window_type, "Ledger.regions endpoint")


def _where(region: Region) -> str:
    low = "(unbounded" if region.low is None else f"[{region.low!r}"
    high = "unbounded)" if region.high is None else f"{region.high!r})"
    return f"region {low}, {high}"
