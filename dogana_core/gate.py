"""The gate: one decision per manifest, recorded as a Receipt.

Gate.evaluate decides a delivery from three core checks, in this order:

    manifest        the declarations agree with each other and the contract (Transitions 1)
    receiver_time   produced_at <= now, the receiver's time (Transitions 7)
    transition      the ledger admits the read (Transitions 2 to 6)

then the receiver's outcomes (its checks of the rows against the manifest) and the joint checks
of a group. Any failed check rejects. dogana names no receiver check and runs none.

A Receipt records one decision: the manifest, the contract in force, the checks, the outcome,
received_at, an optional source, the chain head the decision built on (base_publication_id),
the head it leaves (publication_id) and the identity of the ledger it leaves. An acceptance
carries a Transition: the plan and the regions over the coverage afterwards, so a receipt grows
with its coverage, never with the ledger, the history, rows or deleted keys. A rejection leaves
ledger and publication as they were.

Neither identity on a receipt is ever empty. Before the first acceptance a table's chain head is
the chain's genesis string "None" (the previous head of the first publication), and a rejection
on an untouched ledger names it as both base_publication_id and publication_id.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from enum import StrEnum

from dogana_core.contract import Contract
from dogana_core.errors import InvalidContract, RejectedDelivery
from dogana_core.ledger import GENESIS, Ledger, chain
from dogana_core.manifest import SHA256_HEX, Manifest
from dogana_core.plan import ApplyPlan
from dogana_core.region import Region
from dogana_core.values import check_text, utc
from dogana_core.wire import (
    Array,
    Boolean,
    Choice,
    DateTimeTag,
    Nested,
    Optional,
    Text,
    Wire,
    wire_field,
)

CORE_CHECKS = ("manifest", "receiver_time", "transition")
"""The gate's own checks, in the order it runs them."""

TOGETHER = "together"
"""The joint check's name on every receipt of a group delivery (dogana_core.group)."""

RESERVED_CHECKS = (*CORE_CHECKS, TOGETHER)
"""The spec's core check names: no receiver outcome may take one, since a receipt carrying a
passed together check names the group it was accepted with."""


@dataclass(frozen=True)
class Check(Wire):
    """One check's result: its name, whether it passed, and a detail for a reader."""

    name: str = wire_field(Text(nonempty=True))
    passed: bool = wire_field(Boolean())
    detail: str = wire_field(Text(), default="")

    def __post_init__(self) -> None:
        if not check_text(self.name, "Check.name"):
            raise InvalidContract("Check.name: a check has a name")
        if not isinstance(self.passed, bool):
            raise InvalidContract(f"Check.passed: {self.passed!r} is not true or false")
        check_text(self.detail, "Check.detail")


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REPLAYED = "replayed"


@dataclass(frozen=True)
class Transition(Wire):
    """What an acceptance does: the plan, and the regions over the coverage afterwards."""

    plan: ApplyPlan = wire_field(Nested(lambda: ApplyPlan))
    regions: tuple[Region, ...] = wire_field(Array(Nested(lambda: Region)))

    def __post_init__(self) -> None:
        if not isinstance(self.plan, ApplyPlan):
            raise InvalidContract("Transition.plan: expected an ApplyPlan")
        regions = tuple(self.regions)
        if not regions or not all(
            isinstance(region, Region) and region.known for region in regions
        ):
            raise InvalidContract("Transition.regions: an acceptance proves every region it covers")
        for index, (left, right) in enumerate(itertools.pairwise(regions)):
            if left.high is None or left.high != right.low:
                raise InvalidContract(
                    f"Transition.regions[{index + 1}]: the regions over a coverage are sorted and "
                    "contiguous"
                )
        object.__setattr__(self, "regions", regions)


def _is_head(value: object) -> bool:
    return value == GENESIS or (isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None)


@dataclass(frozen=True)
class Receipt(Wire):
    """One decision on one manifest. Filed under contract.table, whatever the manifest names."""

    manifest: Manifest = wire_field(Nested(lambda: Manifest))
    contract: Contract = wire_field(Nested(lambda: Contract))
    checks: tuple[Check, ...] = wire_field(Array(Nested(lambda: Check)))
    outcome: Outcome = wire_field(Choice(Outcome))
    received_at: datetime = wire_field(DateTimeTag())
    _: KW_ONLY
    source: str | None = wire_field(Optional(Text()), default=None)
    base_publication_id: str = wire_field(Text(nonempty=True))
    publication_id: str = wire_field(Text(nonempty=True))
    ledger_identity: str = wire_field(Text(nonempty=True))
    transition: Transition | None = wire_field(Optional(Nested(lambda: Transition)), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.manifest, Manifest):
            raise InvalidContract("Receipt.manifest: expected a Manifest")
        if not isinstance(self.contract, Contract):
            raise InvalidContract("Receipt.contract: expected the Contract in force")
        checks = tuple(self.checks)
        if not checks or not all(isinstance(check, Check) for check in checks):
            raise InvalidContract("Receipt.checks: a decision records at least one Check")
        set_(self, "checks", checks)
        try:
            outcome = Outcome(self.outcome)
        except ValueError:
            raise InvalidContract(f"Receipt.outcome: {self.outcome!r} is not an outcome") from None
        set_(self, "outcome", outcome)
        set_(self, "received_at", utc(self.received_at, "Receipt.received_at"))
        if self.source is not None:
            check_text(self.source, "Receipt.source")
        for name in ("base_publication_id", "publication_id"):
            if not _is_head(getattr(self, name)):
                raise InvalidContract(
                    f"Receipt.{name}: {getattr(self, name)!r} is neither a chain head nor the "
                    "genesis 'None'"
                )
        if not isinstance(self.ledger_identity, str) or not SHA256_HEX.fullmatch(
            self.ledger_identity
        ):
            raise InvalidContract(
                f"Receipt.ledger_identity: {self.ledger_identity!r} is not an identity"
            )
        failed = [check.name for check in checks if not check.passed]
        if outcome is Outcome.REJECTED:
            if not failed:
                raise InvalidContract(
                    "Receipt.outcome: a rejection names at least one failed check"
                )
            if self.transition is not None:
                raise InvalidContract(
                    "Receipt.transition: a rejection changes nothing, so it has no transition"
                )
            if self.publication_id != self.base_publication_id:
                raise InvalidContract(
                    "Receipt.publication_id: a rejection leaves the publication as it was"
                )
            return
        if failed:
            raise InvalidContract(
                f"Receipt.outcome: {outcome}, but check(s) {', '.join(failed)} failed"
            )
        if not isinstance(self.transition, Transition):
            raise InvalidContract(
                f"Receipt.transition: an {outcome} receipt carries its Transition"
            )
        expected = chain(self.base_publication_id, self.contract, self.manifest)
        if self.publication_id != expected:
            raise InvalidContract(
                f"Receipt.publication_id: {self.publication_id} does not extend "
                f"{self.base_publication_id} "
                f"with this contract and manifest (expected {expected})"
            )

    @property
    def accepted(self) -> bool:
        """True for an acceptance and for its replay."""
        return self.outcome is not Outcome.REJECTED

    @property
    def replayed(self) -> bool:
        return self.outcome is Outcome.REPLAYED

    @property
    def table(self) -> str:
        """The table this receipt is filed under: the contract's, even when the manifest names "
        "another."""
        return self.contract.table

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if not check.passed)

    def identity_source(self) -> Receipt:
        """A replay is identified as the acceptance it repeats."""
        return self.replace(outcome=Outcome.ACCEPTED) if self.replayed else self

    def replay(self) -> Receipt:
        """The answer to a repeated accepted manifest: this receipt, outcome replayed.

        Everything else is kept, received_at included, so the replay's identity is the original
        acceptance's and the receiver can tell it apart only by its outcome.
        """
        if self.outcome is not Outcome.ACCEPTED:
            raise InvalidContract(
                f"Receipt.replay: only an acceptance is replayed, this is {self.outcome}"
            )
        return self.replace(outcome=Outcome.REPLAYED)


class Gate:
    """The decisions; every method is a pure function of its arguments."""

    @staticmethod
    def preflight(ledger: Ledger, manifest: Manifest, *, now: datetime) -> tuple[Check, ...]:
        """The three core checks alone: manifest, receiver_time and transition."""
        return _core(ledger, manifest, utc(now, "Gate now"))[0]

    @staticmethod
    def evaluate(
        ledger: Ledger,
        manifest: Manifest,
        outcomes: Iterable[Check] = (),
        *,
        now: datetime,
        source: str | None = None,
        joint: Iterable[Check] = (),
    ) -> Receipt:
        """Decide a delivery: the core checks, the receiver's outcomes, then the joint checks."""
        now = utc(now, "Gate now")
        core, after = _core(ledger, manifest, now)
        received = _receiver_checks(outcomes, "outcomes", RESERVED_CHECKS)
        together = _receiver_checks(joint, "joint", CORE_CHECKS)
        checks = (*core, *received, *together)
        if after is None or not all(check.passed for check in checks):
            return Gate.reject(ledger, manifest, checks, now=now, source=source)
        low, high = ledger.coverage(manifest)
        return Receipt(
            manifest,
            ledger.contract,
            checks,
            Outcome.ACCEPTED,
            now,
            base_publication_id=ledger.head,
            publication_id=after.head,
            ledger_identity=after.identity,
            source=source,
            transition=Transition(ledger.plan(manifest), after.regions_over(low, high)),
        )

    @staticmethod
    def reject(
        ledger: Ledger,
        manifest: Manifest,
        checks: Iterable[Check],
        *,
        now: datetime,
        source: str | None = None,
    ) -> Receipt:
        """Record a rejection with these checks, at least one failed; the ledger is unchanged."""
        return Receipt(
            manifest,
            ledger.contract,
            tuple(checks),
            Outcome.REJECTED,
            utc(now, "Gate now"),
            base_publication_id=ledger.head,
            publication_id=ledger.head,
            ledger_identity=ledger.identity,
            source=source,
        )


def _core(
    ledger: Ledger, manifest: Manifest, now: datetime
) -> tuple[tuple[Check, Check, Check], Ledger | None]:
    """The core checks, and the ledger the manifest leaves when the transition passes."""
    try:
        manifest.check(ledger.contract)
        fits = Check("manifest", True, "the declarations agree with each other and the contract")
    except InvalidContract as exc:
        fits = Check("manifest", False, str(exc))
    t = manifest.produced_at
    on_time = Check(
        "receiver_time",
        t <= now,
        f"produced_at {t.isoformat()} {'is not after' if t <= now else 'is after'} the receiver's "
        "time "
        f"{now.isoformat()}",
    )
    after: Ledger | None = None
    if not fits.passed:
        transition = Check(
            "transition", False, "not evaluated: the manifest does not fit the contract"
        )
    else:
        try:
            after = ledger.apply(manifest)
            transition = Check("transition", True, "the ledger admits the read")
        except RejectedDelivery as exc:
            transition = Check("transition", False, str(exc))
    return (fits, on_time, transition), after


def _receiver_checks(
    checks: Iterable[Check], what: str, reserved: tuple[str, ...]
) -> tuple[Check, ...]:
    checks = tuple(checks)
    for check in checks:
        if not isinstance(check, Check):
            raise InvalidContract(
                f"Gate.evaluate {what}: expected Check values, got {type(check).__name__}"
            )
        if check.name in reserved:
            raise InvalidContract(f"Gate.evaluate {what}: {check.name!r} is a core check's name")
    return checks
