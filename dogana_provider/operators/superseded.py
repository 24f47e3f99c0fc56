"""A delivery superseded by a newer publication: refused and recorded, and its run green.

Two runs of one DAG can deliver one table at once: a catch-up (scheduled) run beside a manual
one, two manual runs, any DAG whose max_active_runs is above one. Each plans, reads the source
and decides; the one that publishes first moves the table's ledger past the other's read, whose
boundary is then not after the table's complete_as_of. The protocol refuses that read
(Transitions 2: a late delivery cannot overwrite newer evidence), and the receiver records the
rejection, as it records every decision. Yet the other run asked for something, its
Requirement, which the first run's publication already gives: nothing is missing, and nobody
should be paged.

Such a delivery is superseded, when all of these hold:

    - its receipt is a rejection whose only failed check is the transition: the ledger moved.
      A rejection for anything else (a row check, a block, a hold, the manifest) is not;
    - the plan task upstream stated the run's Requirement (pushed under REQUIREMENT) for its
      table, with the head the plan read;
    - the table's head is no longer that head: another publication came between;
    - the table's ledger now meets the requirement (plan_delivery has nothing to read).

The receipt stays what the protocol makes it, a rejection naming the transition: its outcomes
are accepted, rejected and replayed, and a fourth would be a new wire format. So a superseded
delivery is recorded exactly as any refused one, and only the task's end differs: it is skipped
(AirflowSkipException, so the tasks downstream skip and no Asset event claims a publication that
did not happen), its reason naming the publication that met the run's requirement. A late
delivery that is not covered (a pushed delivery with no plan, or a run whose requirement the
ledger still lacks) fails its task as any rejection does.

A group read together is refused as one: the table the ledger moved past fails the transition,
its siblings the together check alone. It is superseded when every table is covered as above
(the plan states one Planned per table) and the tables are exact at one instant no earlier than
the plan asked, as the group's plan needs; a group any table of which still lacks its
requirement, or whose tables were published apart at instants of their own, fails.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow.sdk import XComArg
from airflow.sdk.exceptions import XComNotFound

from dogana_core.errors import DoganaError
from dogana_core.gate import TOGETHER, Outcome, Receipt
from dogana_core.group import Group, plan_together
from dogana_core.planner import Requirement, plan_delivery
from dogana_provider.connectors.contract import ReleasedPosition
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.report.table import iso_window

REQUIREMENT = "requirement"
"""The plan task's XCom key for what the run asked of its table, and the head it planned on."""
TRANSITION = "transition"


@dataclass(frozen=True)
class Planned:
    """What a run's plan task asked of one table, and the table's head when it planned."""

    requirement: Requirement
    planned_on: str

    def to_dict(self) -> dict[str, Any]:
        return {"requirement": self.requirement.to_dict(), "planned_on": self.planned_on}

    @classmethod
    def from_dict(cls, data: Any) -> Planned:
        return cls(Requirement.from_dict(data["requirement"]), str(data["planned_on"]))


def planned(task: Any, context: Any) -> list[Planned]:
    """What the nearest plan tasks upstream asked (several for a mapped plan, one per table);
    none when no plan task is upstream (a pushed delivery) or it stated nothing. A plan task is
    one whose class states requirements under REQUIREMENT (PlanDeliveryOperator.states)."""
    stated: list[Planned] = []
    for plan in plan_tasks(task):
        try:
            value = XComArg(plan, key=REQUIREMENT).resolve(context)
        except XComNotFound:
            continue
        stated += [Planned.from_dict(item) for item in _stated(value)]
    return stated


def plan_tasks(task: Any) -> list[Any]:
    """The nearest plan tasks upstream of a task, none for a pushed delivery."""
    found: list[Any] = []
    seen: set[str] = set()
    queue = deque(task.upstream_list)
    while queue and not found:
        for _ in range(len(queue)):  # one level of the DAG at a time: the nearest plan wins
            upstream = queue.popleft()
            if upstream.task_id in seen:
                continue
            seen.add(upstream.task_id)
            kind = getattr(upstream, "operator_class", type(upstream))
            if getattr(kind, "states", None) == REQUIREMENT:
                found.append(upstream)
            else:
                queue.extend(upstream.upstream_list)
    return found


def _stated(value: Any) -> list[Any]:
    """The Planned dicts in a plan's XCom: one for a table, a list for a group, and a list of
    either for a mapped plan."""
    if isinstance(value, dict):
        return [value]
    if value is None or isinstance(value, (str, bytes)):
        return []
    return [item for each in value for item in _stated(each)]


def superseded(hook: DoganaHook, receipt: Receipt, stated: Sequence[Planned]) -> str | None:
    """Why a rejected delivery is superseded, naming the publication that met the run's
    requirement; None when it is not (its task fails as any rejection's)."""
    failed = {check.name for check in receipt.failed}
    if receipt.outcome is not Outcome.REJECTED or failed != {TRANSITION}:
        return None
    covered = _covered(hook, receipt, stated)
    return None if covered is None else _reason(receipt, *covered)


def superseded_group(
    hook: DoganaHook, receipts: Sequence[Receipt], stated: Sequence[Planned]
) -> str | None:
    """Why a rejected group delivery is superseded, naming each table's publication; None when
    it is not. A group is refused as one (dogana_core.group): a table refused only because a
    sibling was fails the together check alone. So every receipt fails only the transition or
    together, at least one the transition, every table is covered as a single table is, and the
    group is exact at one instant no earlier than its plan asked."""
    if not receipts or any(r.outcome is not Outcome.REJECTED for r in receipts):
        return None
    failed = [{check.name for check in receipt.failed} for receipt in receipts]
    if any(not names or not names <= {TRANSITION, TOGETHER} for names in failed):
        return None
    if not any(TRANSITION in names for names in failed):
        return None
    covered = [_covered(hook, receipt, stated) for receipt in receipts]
    plans = [item[0] for item in covered if item is not None]
    if len(plans) != len(receipts) or not _exact_together(hook, receipts, plans):
        return None
    reasons = [_reason(r, *item) for r, item in zip(receipts, covered, strict=True) if item]
    return "group superseded: " + " | ".join(reasons)


def stale_read(
    hook: DoganaHook, table: str, refused: ReleasedPosition, stated: Sequence[Planned]
) -> tuple[str, bool] | None:
    """Why a read refused for a released position is a stale plan, and whether the run's
    requirement is met already (superseded: skip) or not (plan again); None when the receiver
    has not published up to the released position, and the changes between are lost."""
    with hook.committed() as connection:
        state = hook.receiver.store.state(connection, table)
        last = hook.receiver.store.last_accepted(connection, table)
    position = None if state is None else state.ledger.generation
    if (
        state is None
        or last is None
        or not isinstance(position, int)
        or not isinstance(refused.released, int)
        or position < refused.released
    ):
        return None
    read = (
        f"{table}: this run's plan read from position {refused.since}, and the log has released "
        f"the changes up to {refused.released}; publication {last.publication_id[:12]} (manifest "
        f"{last.manifest.identity[:12]}, produced at {last.manifest.produced_at.isoformat()}) "
        f"published up to {position} since: the changes between are published, nothing is lost"
    )
    mine = [item for item in stated if item.requirement.table == table]
    try:
        met = len(mine) == 1 and plan_delivery(state.ledger, mine[0].requirement) is None
    except DoganaError:  # no shape could establish it: the planner cannot say it is met
        met = False
    if met:
        met_by = requirement_line(mine[0].requirement)
        return f"read superseded: {read}, and it meets this run's requirement ({met_by})", True
    return (
        f"stale plan: {read}. Plan again (clear this run's plan task, or trigger the DAG): "
        "the new plan reads from the published position; no full read is needed",
        False,
    )


def _covered(
    hook: DoganaHook, receipt: Receipt, stated: Sequence[Planned]
) -> tuple[Planned, Receipt] | None:
    """The run's plan for the receipt's table and the table's last acceptance, when another
    publication came since that plan and the table's ledger now meets the plan's requirement."""
    mine = [item for item in stated if item.requirement.table == receipt.table]
    if len(mine) != 1:
        return None
    (plan,) = mine
    with hook.committed() as connection:
        state = hook.receiver.store.state(connection, receipt.table)
        last = hook.receiver.store.last_accepted(connection, receipt.table)
    if state is None or last is None or state.head == plan.planned_on:
        return None
    try:
        if plan_delivery(state.ledger, plan.requirement) is not None:
            return None
    except DoganaError:  # no shape could establish it: the planner cannot say it is met
        return None
    return plan, last


def _exact_together(
    hook: DoganaHook, receipts: Sequence[Receipt], plans: Sequence[Planned]
) -> bool:
    """Whether the group is exact at one instant no earlier than its plan asked: each table
    meeting its own part may still be exact at instants of its own, read apart."""
    group = Group(tuple(receipt.contract for receipt in receipts))
    at_least = min(plan.requirement.complete_as_of for plan in plans)
    windows = {plan.requirement.table: plan.requirement.window for plan in plans}
    try:
        return plan_together(group, hook.ledgers(group.tables), at_least, windows=windows) is None
    except DoganaError:  # no shapes could establish it: the planner cannot say it is met
        return False


def _reason(receipt: Receipt, plan: Planned, last: Receipt) -> str:
    # The together check's detail repeats every table's refusal: its name says enough here.
    refused = "; ".join(
        f"{check.name}: {check.detail}" if check.name != TOGETHER else check.name
        for check in receipt.failed
    )
    return (
        f"{receipt.table}: delivery {receipt.manifest.identity[:12]} (produced at "
        f"{receipt.manifest.produced_at.isoformat()}) superseded by publication "
        f"{last.publication_id[:12]} (manifest {last.manifest.identity[:12]}, produced at "
        f"{last.manifest.produced_at.isoformat()}), published since this run planned, which "
        f"already meets this run's requirement ({requirement_line(plan.requirement)}); its "
        f"rejection is recorded ({refused}) and nothing of it is published"
    )


def requirement_line(requirement: Requirement) -> str:
    """A requirement as a person reads it in a log line."""
    deletions = requirement.deletions_as_of
    return (
        f"complete as of {requirement.complete_as_of.isoformat()}"
        + ("" if deletions is None else f", deletions as of {deletions.isoformat()}")
        + (
            " over the whole table"
            if requirement.window is None
            else f" over window {iso_window(requirement.window)}"
        )
    )
