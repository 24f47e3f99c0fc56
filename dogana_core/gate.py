"""The gate: one decision per manifest, recorded as a Receipt.

Gate.evaluate decides a delivery from three core checks, in this order:

    manifest        the declarations agree with each other and the contract (Transitions 1)
    receiver_time   produced_at <= now, the receiver's time (Transitions 7)
    transition      the ledger admits the read (Transitions 2 to 6)

then the receiver's outcomes (its checks of the rows against the manifest) and the joint checks
of a group. Any failed check rejects. dogana names no receiver check and runs none.

Every decision is a Receipt (dogana_core.receipt, re-exported here with Check, Outcome and
Transition): an acceptance carries the ledger it leaves, a rejection leaves ledger and
publication as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from dogana_core.errors import InvalidContract, RejectedDelivery
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.receipt import Check, Outcome, Receipt, Transition
from dogana_core.values import utc

__all__ = [
    "CORE_CHECKS",
    "RESERVED_CHECKS",
    "TOGETHER",
    "Check",
    "Gate",
    "Outcome",
    "Receipt",
    "Transition",
]

CORE_CHECKS = ("manifest", "receiver_time", "transition")
"""The gate's own checks, in the order it runs them."""

TOGETHER = "together"
"""The joint check's name on every receipt of a group delivery (dogana_core.group)."""

RESERVED_CHECKS = (*CORE_CHECKS, TOGETHER)
"""The spec's core check names: no receiver outcome may take one, since a receipt carrying a
passed together check names the group it was accepted with."""


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
