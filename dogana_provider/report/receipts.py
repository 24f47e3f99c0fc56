"""A receipt on one line, wherever one is printed: the gate's decision and the publisher's
publication in their task logs, and the last receipt in ``dogana status``.

The three say the same things in the same words (the outcome, the manifest by the first 12
characters of its identity, its counts, the checks that failed) and differ only in what the
moment adds: the gate what it checked, the publisher what it wrote, the status cell when.
"""

from __future__ import annotations

from typing import Literal

from dogana_core.gate import Outcome, Receipt
from dogana_provider.report.table import when

Moment = Literal["decided", "published", "status"]


def receipt_line(receipt: Receipt, moment: Moment) -> str:
    """decided: the gate's decision; published: what the publisher did with a decision;
    status: the receipt in a column of ``dogana status``."""
    manifest = receipt.manifest
    identity = f"manifest {manifest.identity[:12]}"
    counts = f"{manifest.rows} rows, {manifest.tombstones} tombstones"
    failed = ", ".join(check.name for check in receipt.failed)
    if moment == "status":
        line = f"{receipt.outcome} {when(receipt.received_at)} {manifest.shape}"
        return f"{line} (failed: {failed})" if failed else line
    if moment == "decided":
        passed = sum(1 for check in receipt.checks if check.passed)
        return (
            f"{receipt.outcome} {identity} (shape {manifest.shape!r}, {counts}, produced at "
            f"{manifest.produced_at.isoformat()}); checks {passed} passed, "
            f"{len(receipt.failed)} failed"
        )
    if receipt.outcome is Outcome.REPLAYED:
        return f"replay of {identity}: nothing published"
    if receipt.outcome is Outcome.REJECTED:
        return f"{identity} rejected when decided again"
    plan = receipt.transition.plan if receipt.transition is not None else None
    actions = "" if plan is None else f", {len(plan.actions)} actions"
    return f"published {identity} ({counts}{actions}) as {receipt.publication_id[:12]}"
