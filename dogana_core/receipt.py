"""Receipt: one decision on one manifest, and the publication chain it extends.

A Receipt records one decision: the manifest, the contract in force, the checks, the outcome,
received_at, an optional source, the chain head the decision built on (base_publication_id),
the head it leaves (publication_id) and the identity of the ledger it leaves. An acceptance
carries a Transition: the plan and the regions over the coverage afterwards, so a receipt grows
with its coverage, never with the ledger, the history, rows or deleted keys. A rejection leaves
ledger and publication as they were.

Neither identity on a receipt is ever empty. Before the first acceptance a table's chain head is
the chain's genesis string "None" (the previous head of the first publication), and a rejection
on an untouched ledger names it as both base_publication_id and publication_id.

The gate makes receipts and the ledger follows them, so both import this module and neither
imports the other for it: dogana_core.gate and dogana_core.ledger re-export these names.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from enum import StrEnum

from dogana_core.contract import Contract
from dogana_core.errors import InvalidContract
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

__all__ = ["GENESIS", "Check", "Outcome", "Receipt", "Transition", "chain"]

GENESIS = "None"
"""The previous head of the first publication: the string None, as the chain's recipe states."""


def chain(previous: str | None, contract: Contract, manifest: Manifest) -> str:
    """The next head: SHA-256 of UTF-8 f"{previous}:{contract.identity}:{manifest.identity}"."""
    text = f"{GENESIS if previous is None else previous}:{contract.identity}:{manifest.identity}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
