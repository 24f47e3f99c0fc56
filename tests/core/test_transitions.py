"""Transitions 1 to 6 and 8, and the dates each shape proves: one test per rule.

Ledger.apply does accounting only. Each refusal raises RejectedDelivery naming its rule; each
acceptance raises a date exactly as far as the delivery's declarations prove, never further.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import pytest
from ledger_fixtures import (
    EVENTS,
    FEED,
    HOUR,
    LOG,
    MONDAY,
    ORDERS,
    SUNDAY,
    chain_of,
    day,
    make,
)

from dogana_core import Contract, InvalidContract, Manifest, RejectedDelivery, Shape
from dogana_core.ledger import Ledger, Region
from dogana_core.plan import Action, ActionKind, ApplyPlan


def full(contract: Contract, t: datetime, **fields: object) -> Manifest:
    return make(contract, "full", t, **fields)


def window(
    contract: Contract, t: datetime, low: object, high: object, shape: str = "day"
) -> Manifest:
    return make(contract, shape, t, window=(low, high))


def dates(ledger: Ledger, value: object) -> tuple[datetime | None, datetime | None]:
    """The dates of the region holding value."""
    (region,) = ledger.regions_over(value, _next(value))
    return region.evidence


def _next(value: object) -> object:
    from dogana_core.values import successor

    return successor(value)  # type: ignore[arg-type]


def orders_full_at(t: datetime) -> Ledger:
    return Ledger.new(ORDERS).apply(full(ORDERS, t))


# Transitions 1 -----------------------------------------------------------------------------------


def test_manifest_must_match_its_shape_and_contract() -> None:
    ledger = Ledger.new(ORDERS)
    other_table = Manifest("customers", "full", SUNDAY)
    with pytest.raises(RejectedDelivery, match=r"Transitions 1.*table"):
        ledger.apply(other_table)
    with pytest.raises(RejectedDelivery, match=r"Transitions 1.*no shape"):
        ledger.apply(Manifest("orders", "weekly", SUNDAY))


def test_manifest_bounds_must_have_the_window_type() -> None:
    ledger = orders_full_at(SUNDAY)
    wrong_bounds = Manifest("orders", "day", MONDAY, window=(1, 2))
    with pytest.raises(RejectedDelivery, match=r"Transitions 1.*expected date"):
        ledger.apply(wrong_bounds)


# Transitions 2 -----------------------------------------------------------------------------------


def test_late_full_cannot_overwrite_newer_window() -> None:
    ledger = orders_full_at(SUNDAY).apply(window(ORDERS, MONDAY, day(5), day(5)))
    late_full = full(ORDERS, SUNDAY + HOUR)
    with pytest.raises(RejectedDelivery, match=r"Transitions 2.*late delivery cannot overwrite"):
        ledger.apply(late_full)


def test_delivery_at_the_same_boundary_as_known_evidence_is_refused() -> None:
    ledger = orders_full_at(SUNDAY)
    with pytest.raises(RejectedDelivery, match="Transitions 2"):
        ledger.apply(window(ORDERS, SUNDAY, day(5), day(5)))


def test_only_affected_known_regions_must_be_older() -> None:
    newer_elsewhere = Ledger.new(ORDERS).apply(window(ORDERS, MONDAY, day(1), day(1)))
    older_window = window(ORDERS, SUNDAY, day(9), day(9))
    assert dates(newer_elsewhere.apply(older_window), day(9)) == (SUNDAY, SUNDAY)


# Transitions 3 -----------------------------------------------------------------------------------


def test_changed_only_delivery_covers_known_regions_only() -> None:
    changes = make(ORDERS, "changes", MONDAY, since=SUNDAY)
    with pytest.raises(RejectedDelivery, match=r"Transitions 3.*unknown"):
        Ledger.new(ORDERS).apply(changes)
    partly_known = Ledger.new(ORDERS).apply(window(ORDERS, SUNDAY, day(1), day(31)))
    with pytest.raises(RejectedDelivery, match="Transitions 3"):
        partly_known.apply(changes)


def test_window_changes_need_their_window_known() -> None:
    ledger = Ledger.new(ORDERS).apply(window(ORDERS, SUNDAY, day(1), day(3)))
    inside = make(ORDERS, "recent", MONDAY, window=(day(2), day(3)), since=SUNDAY)
    assert dates(ledger.apply(inside), day(2)) == (MONDAY, SUNDAY)
    overhanging = make(ORDERS, "recent", MONDAY, window=(day(3), day(4)), since=SUNDAY)
    with pytest.raises(RejectedDelivery, match="Transitions 3"):
        ledger.apply(overhanging)


def test_first_keyless_append_on_untouched_ledger_starts_at_start_at() -> None:
    assert EVENTS.start_at == SUNDAY
    first = make(EVENTS, "append", MONDAY, since=SUNDAY, rows=10)
    ledger = Ledger.new(EVENTS).apply(first)
    assert [region.evidence for region in ledger.regions] == [(MONDAY, MONDAY)]


def test_first_keyless_append_since_other_than_start_at_is_refused() -> None:
    elsewhere = make(EVENTS, "append", MONDAY, since=SUNDAY + HOUR)
    with pytest.raises(RejectedDelivery, match=r"Transitions 3.*start_at"):
        Ledger.new(EVENTS).apply(elsewhere)


def test_keyless_append_without_start_at_needs_a_complete_read_first() -> None:
    no_start = Contract(
        "clicks", (), {"append": Shape.changes(), "full": Shape.complete()}, types={}
    )
    append = make(no_start, "append", MONDAY, since=SUNDAY)
    with pytest.raises(RejectedDelivery, match=r"Transitions 3.*none declared"):
        Ledger.new(no_start).apply(append)
    ledger = Ledger.new(no_start).apply(make(no_start, "full", SUNDAY))
    assert ledger.apply(append).regions[0].evidence == (MONDAY, MONDAY)


def test_first_append_exception_is_for_untouched_ledgers_only() -> None:
    # A complete window makes the ledger touched; the rest of the table stays unknown, even
    # though the window's evidence ends exactly at start_at.
    ledger = Ledger.new(EVENTS).apply(window(EVENTS, SUNDAY, day(1), day(1)))
    append = make(EVENTS, "append", MONDAY, since=SUNDAY)
    with pytest.raises(RejectedDelivery, match="Transitions 3"):
        ledger.apply(append)


def test_later_append_has_since_equal_to_complete_as_of() -> None:
    ledger = Ledger.new(EVENTS).apply(make(EVENTS, "append", MONDAY, since=SUNDAY))
    gap = make(EVENTS, "append", MONDAY + 2 * HOUR, since=MONDAY + HOUR)
    overlap = make(EVENTS, "append", MONDAY + 2 * HOUR, since=MONDAY - HOUR)
    for wrong in (gap, overlap):
        with pytest.raises(RejectedDelivery, match=r"Transitions 3.*since equal to complete_as_of"):
            ledger.apply(wrong)
    following = make(EVENTS, "append", MONDAY + 2 * HOUR, since=MONDAY)
    assert ledger.apply(following).regions[0].evidence == (MONDAY + 2 * HOUR,) * 2


def test_append_after_a_window_moved_ahead_needs_a_complete_whole_table_read() -> None:
    ledger = Ledger.new(EVENTS).apply(make(EVENTS, "full", SUNDAY))
    ledger = ledger.apply(window(EVENTS, MONDAY, day(5), day(5)))
    for since in (SUNDAY, MONDAY):
        with pytest.raises(RejectedDelivery, match="Transitions 3"):
            ledger.apply(make(EVENTS, "append", MONDAY + HOUR, since=since))
    reset = ledger.apply(make(EVENTS, "full", MONDAY + HOUR))
    appended = reset.apply(make(EVENTS, "append", MONDAY + 2 * HOUR, since=MONDAY + HOUR))
    assert [region.evidence for region in appended.regions] == [(MONDAY + 2 * HOUR,) * 2]


# Transitions 4 -----------------------------------------------------------------------------------


def test_timestamp_changes_have_since_no_later_than_produced_at() -> None:
    ledger = orders_full_at(SUNDAY)
    backwards = make(ORDERS, "changes", MONDAY, since=MONDAY + HOUR)
    with pytest.raises(RejectedDelivery, match=r"Transitions 4.*since .* is after produced_at"):
        ledger.apply(backwards)
    # since = t is no later: a keyless table's first append, read at its start_at, proves (t, t).
    at_once = make(EVENTS, "append", SUNDAY, since=SUNDAY)
    assert [region.evidence for region in Ledger.new(EVENTS).apply(at_once).regions] == [
        (SUNDAY, SUNDAY)
    ]


def test_timestamp_changes_have_since_no_later_than_every_covered_complete_as_of() -> None:
    ledger = orders_full_at(SUNDAY)
    skipping = make(ORDERS, "changes", MONDAY, since=SUNDAY + HOUR)
    with pytest.raises(RejectedDelivery, match=r"Transitions 4.*since .* is after complete_as_of"):
        ledger.apply(skipping)
    overlapping = make(ORDERS, "changes", MONDAY, since=SUNDAY - HOUR)
    assert dates(ledger.apply(overlapping), day(1)) == (MONDAY, SUNDAY)


def test_timestamp_since_must_fit_the_oldest_covered_region() -> None:
    ledger = orders_full_at(SUNDAY).apply(window(ORDERS, SUNDAY + HOUR, day(3), day(3)))
    # since = SUNDAY + HOUR fits day 3 but skips changes after SUNDAY elsewhere.
    with pytest.raises(RejectedDelivery, match="Transitions 4"):
        ledger.apply(make(ORDERS, "changes", MONDAY, since=SUNDAY + HOUR))
    assert dates(ledger.apply(make(ORDERS, "changes", MONDAY, since=SUNDAY)), day(3)) == (
        MONDAY,
        SUNDAY + HOUR,
    )


# Transitions 5 -----------------------------------------------------------------------------------


def test_generation_changes_have_since_equal_to_the_held_generation() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1"))
    assert ledger.generation == "g1"
    chained = ledger.apply(make(FEED, "feed", MONDAY, since="g1", generation="g2"))
    assert chained.generation == "g2"
    broken = make(FEED, "feed", MONDAY + HOUR, since="g1", generation="g3")
    with pytest.raises(RejectedDelivery, match=r"Transitions 5.*full reset"):
        chained.apply(broken)


def test_broken_generation_chain_needs_a_full_reset() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY))
    assert ledger.generation is None
    feed = make(FEED, "feed", MONDAY, since="g1", generation="g2")
    with pytest.raises(RejectedDelivery, match="Transitions 5"):
        ledger.apply(feed)
    reset = ledger.apply(full(FEED, SUNDAY + HOUR, generation="g1"))
    assert reset.apply(feed).generation == "g2"


# Transitions 6 -----------------------------------------------------------------------------------


def log_at(position: int) -> Ledger:
    return Ledger.new(LOG).apply(full(LOG, SUNDAY, generation=position))


def test_keyed_sequence_reads_may_reread() -> None:
    reread = make(LOG, "tail", MONDAY, since=90, generation=120)
    assert log_at(100).apply(reread).generation == 120


def test_keyed_sequence_reads_never_skip() -> None:
    skipping = make(LOG, "tail", MONDAY, since=101, generation=120)
    with pytest.raises(RejectedDelivery, match=r"Transitions 6.*never skip"):
        log_at(100).apply(skipping)


def test_keyed_sequence_reads_never_go_back() -> None:
    backwards = make(LOG, "tail", MONDAY, since=80, generation=99)
    with pytest.raises(RejectedDelivery, match=r"Transitions 6.*go back"):
        log_at(100).apply(backwards)
    assert log_at(100).apply(make(LOG, "tail", MONDAY, since=100, generation=100)).generation == 100


def test_missing_position_needs_a_complete_delivery_issuing_one() -> None:
    no_position = Ledger.new(LOG).apply(full(LOG, SUNDAY))
    tail = make(LOG, "tail", MONDAY, since=0, generation=5)
    with pytest.raises(RejectedDelivery, match=r"Transitions 6.*no position"):
        no_position.apply(tail)


def test_opaque_position_needs_a_complete_delivery_issuing_one() -> None:
    # The contract moved from generations to sequences: the held string means nothing to a
    # sequence read.
    generations = Contract(
        "log",
        ("id",),
        {"full": Shape.complete(), "feed": Shape.changes(checkpoint="generation", tombstones=True)},
        deleted_column="gone",
        types={"id": "int", "gone": "bool"},
    )
    ledger = Ledger.new(generations).apply(full(generations, SUNDAY, generation="g1"))
    evolved = ledger.with_contract(LOG)
    with pytest.raises(RejectedDelivery, match=r"Transitions 6.*opaque position 'g1'"):
        evolved.apply(make(LOG, "tail", MONDAY, since=0, generation=5))
    reset = evolved.apply(full(LOG, SUNDAY + HOUR, generation=7))
    assert reset.apply(make(LOG, "tail", MONDAY, since=7, generation=9)).generation == 9


# Transitions 8 -----------------------------------------------------------------------------------


def test_each_acceptance_extends_the_publication_chain() -> None:
    first, second = full(ORDERS, SUNDAY), window(ORDERS, MONDAY, day(2), day(2))
    one = Ledger.new(ORDERS).apply(first)
    two = one.apply(second)
    assert one.publication_id == chain_of("None", ORDERS, first)
    assert two.publication_id == chain_of(one.publication_id, ORDERS, second)


def test_disjoint_windows_commute_on_evidence_never_on_the_chain() -> None:
    base = orders_full_at(SUNDAY)
    a, b = window(ORDERS, MONDAY, day(1), day(2)), window(ORDERS, MONDAY + HOUR, day(5), day(5))
    ab, ba = base.apply(a).apply(b), base.apply(b).apply(a)
    assert ab.regions == ba.regions
    assert ab.publication_id != ba.publication_id


# The dates each shape proves ---------------------------------------------------------------------


def test_complete_table_proves_both_dates_at_its_boundary() -> None:
    ledger = orders_full_at(SUNDAY).apply(make(ORDERS, "changes", MONDAY, since=SUNDAY))
    reset = ledger.apply(full(ORDERS, MONDAY + HOUR))
    assert [region.evidence for region in reset.regions] == [(MONDAY + HOUR,) * 2]


def test_complete_table_sets_the_position_it_issues_or_none() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1"))
    assert ledger.apply(full(FEED, MONDAY, generation="g9")).generation == "g9"
    assert ledger.apply(full(FEED, MONDAY)).generation is None


def test_complete_window_proves_its_window_only_and_keeps_the_position() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1"))
    after = ledger.apply(window(FEED, MONDAY, day(3), day(4)))
    assert after.generation == "g1"
    assert dates(after, day(3)) == dates(after, day(4)) == (MONDAY, MONDAY)
    assert dates(after, day(2)) == dates(after, day(5)) == (SUNDAY, SUNDAY)


def test_timestamp_changes_without_tombstones_raise_completeness_only() -> None:
    after = orders_full_at(SUNDAY).apply(make(ORDERS, "changes", MONDAY, since=SUNDAY))
    assert dates(after, day(1)) == (MONDAY, SUNDAY)


def test_timestamp_tombstones_repair_deletions_when_since_is_not_after_deletions_as_of() -> None:
    ledger = orders_full_at(SUNDAY)
    after = ledger.apply(make(ORDERS, "tombstones", MONDAY, since=SUNDAY, tombstones=2))
    assert dates(after, day(1)) == (MONDAY, MONDAY)


def test_timestamp_tombstones_keep_deletions_when_since_is_after_deletions_as_of() -> None:
    patched = orders_full_at(SUNDAY).apply(make(ORDERS, "changes", MONDAY, since=SUNDAY))
    later = make(ORDERS, "tombstones", MONDAY + HOUR, since=MONDAY, tombstones=1)
    # Deletions between Sunday and Monday were never delivered.
    assert dates(patched.apply(later), day(1)) == (MONDAY + HOUR, SUNDAY)


def test_window_changes_touch_their_window_only() -> None:
    ledger = orders_full_at(SUNDAY)
    after = ledger.apply(
        make(ORDERS, "recent_tombstones", MONDAY, window=(day(3), day(3)), since=SUNDAY)
    )
    assert dates(after, day(3)) == (MONDAY, MONDAY)
    assert dates(after, day(2)) == dates(after, day(4)) == (SUNDAY, SUNDAY)


def test_keyless_append_proves_both_dates_since_the_source_never_deletes() -> None:
    ledger = Ledger.new(EVENTS).apply(make(EVENTS, "full", SUNDAY))
    after = ledger.apply(make(EVENTS, "append", MONDAY, since=SUNDAY, rows=3))
    assert [region.evidence for region in after.regions] == [(MONDAY, MONDAY)]


def test_feed_tombstones_repair_deletions_only_where_both_dates_were_equal() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1"))
    ledger = ledger.apply(make(FEED, "changes", SUNDAY + HOUR, since=SUNDAY))  # patched
    ledger = ledger.apply(window(FEED, SUNDAY + 2 * HOUR, day(3), day(3)))  # exact again
    after = ledger.apply(make(FEED, "feed", MONDAY, since="g1", generation="g2", tombstones=1))
    assert dates(after, day(3)) == (MONDAY, MONDAY)
    assert dates(after, day(1)) == (MONDAY, SUNDAY)


def test_sequence_tombstones_repair_deletions_only_where_both_dates_were_equal() -> None:
    after = log_at(100).apply(make(LOG, "tail", MONDAY, since=100, generation=110, tombstones=1))
    assert after.regions[0].evidence == (MONDAY, MONDAY)
    plain = log_at(100).apply(make(LOG, "tail_plain", MONDAY, since=100, generation=110))
    assert plain.regions[0].evidence == (MONDAY, SUNDAY)
    again = plain.apply(make(LOG, "tail", MONDAY + HOUR, since=110, generation=111))
    assert again.regions[0].evidence == (MONDAY + HOUR, SUNDAY)


def test_feeds_without_tombstones_keep_deletions_as_of() -> None:
    ledger = Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1"))
    after = ledger.apply(make(FEED, "feed_plain", MONDAY, since="g1", generation="g2"))
    assert after.regions[0].evidence == (MONDAY, SUNDAY)


def test_apply_is_accounting_only_and_not_idempotent() -> None:
    # A repeated manifest is a replay the receiver answers from its receipts; to the ledger it
    # is a late delivery.
    once = orders_full_at(SUNDAY)
    with pytest.raises(RejectedDelivery, match="Transitions 2"):
        once.apply(full(ORDERS, SUNDAY))


# Plans -------------------------------------------------------------------------------------------


def test_complete_table_plans_replace_all() -> None:
    plan = Ledger.new(ORDERS).plan(full(ORDERS, SUNDAY))
    assert plan == ApplyPlan((Action(ActionKind.REPLACE_ALL, key=("id",)),))


def test_complete_window_plans_replace_window_of_its_closed_window() -> None:
    plan = Ledger.new(ORDERS).plan(window(ORDERS, SUNDAY, day(1), day(7)))
    assert plan.actions == (Action(ActionKind.REPLACE_WINDOW, (day(1), day(7)), ("id",)),)


def test_keyless_replacement_matches_no_keys() -> None:
    plan = Ledger.new(EVENTS).plan(window(EVENTS, SUNDAY, day(1), day(1)))
    assert plan.actions == (Action(ActionKind.REPLACE_WINDOW, (day(1), day(1))),)
    assert plan.actions[0].key == ()


def test_changes_plan_upserts_and_tombstones() -> None:
    plain = Ledger.new(ORDERS).plan(make(ORDERS, "changes", MONDAY, since=SUNDAY))
    assert [action.operation for action in plain.actions] == [ActionKind.UPSERT]
    tombs = Ledger.new(ORDERS).plan(make(ORDERS, "tombstones", MONDAY, since=SUNDAY))
    assert [action.operation for action in tombs.actions] == [
        ActionKind.UPSERT,
        ActionKind.TOMBSTONE,
    ]
    assert all(action.key == ("id",) for action in tombs.actions)


def test_keyless_append_plans_append_without_matching() -> None:
    plan = Ledger.new(EVENTS).plan(make(EVENTS, "append", MONDAY, since=SUNDAY))
    assert plan.actions == (Action(ActionKind.APPEND),)


def test_plan_refuses_a_manifest_that_does_not_fit() -> None:
    with pytest.raises(RejectedDelivery, match="Transitions 1"):
        Ledger.new(ORDERS).plan(Manifest("orders", "nope", SUNDAY))


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"operation": ActionKind.REPLACE_WINDOW}, "named by replace_window"),
        ({"operation": ActionKind.REPLACE_ALL, "window": (1, 2)}, "named by replace_window"),
        ({"operation": ActionKind.UPSERT}, "matches rows by key"),
        ({"operation": ActionKind.TOMBSTONE}, "matches rows by key"),
        ({"operation": ActionKind.APPEND, "key": ("id",)}, "without matching"),
        (
            {
                "operation": ActionKind.REPLACE_WINDOW,
                "window": (date(2026, 1, 2), date(2026, 1, 1)),
            },
            "not a closed window",
        ),
        ({"operation": "merge"}, "not an action kind"),
    ],
)
def test_action_refuses_what_its_operation_cannot_do(fields: dict[str, object], rule: str) -> None:
    from dogana_core import InvalidContract

    with pytest.raises(InvalidContract, match=rule):
        Action(**fields)  # type: ignore[arg-type]


def test_apply_plan_holds_at_least_one_action() -> None:
    from dogana_core import InvalidContract

    with pytest.raises(InvalidContract, match="at least one Action"):
        ApplyPlan(())


def test_region_helper_sanity() -> None:
    assert Region.closed(day(1), day(1)) == Region(day(1), day(2), False, True)


# Each refusal names its rule ---------------------------------------------------------------------

REFUSALS = {
    "1": (
        lambda: Ledger.new(ORDERS),
        lambda: Manifest("orders", "weekly", SUNDAY),
        "Transitions 1 (the manifest matches its shape and contract): Contract orders: no shape "
        "named 'weekly'",
    ),
    "2": (
        lambda: orders_full_at(SUNDAY).apply(window(ORDERS, MONDAY, day(5), day(5))),
        lambda: full(ORDERS, SUNDAY + HOUR),
        "Transitions 2 (every affected known region has t > complete_as_of): produced_at "
        "2026-10-18T01:00:00+00:00 is not after complete_as_of 2026-10-19T00:00:00+00:00 of region "
        "[datetime.date(2026, 10, 5), datetime.date(2026, 10, 6)); a late delivery cannot "
        "overwrite newer evidence",
    ),
    "3, keyed": (
        lambda: Ledger.new(ORDERS),
        lambda: make(ORDERS, "changes", MONDAY, since=SUNDAY),
        "Transitions 3 (every region a changed-only delivery covers is known): region (unbounded, "
        "unbounded) is unknown; a changed-only read proves nothing where nothing was proven "
        "before",
    ),
    "3, first append": (
        lambda: Ledger.new(EVENTS),
        lambda: make(EVENTS, "append", MONDAY, since=SUNDAY + HOUR),
        "Transitions 3 (every region a changed-only delivery covers is known): region (unbounded, "
        "unbounded) is unknown; only the first append on an untouched ledger may start at the "
        "contract's start_at (2026-10-18T00:00:00+00:00); otherwise deliver a complete "
        "whole-table read first",
    ),
    "3, no start_at": (
        lambda: Ledger.new(EVENTS.replace(start_at=None)),
        lambda: make(EVENTS.replace(start_at=None), "append", MONDAY, since=SUNDAY),
        "Transitions 3 (every region a changed-only delivery covers is known): region (unbounded, "
        "unbounded) is unknown; only the first append on an untouched ledger may start at the "
        "contract's start_at (none declared); otherwise deliver a complete whole-table read "
        "first",
    ),
    "3, later append": (
        lambda: Ledger.new(EVENTS).apply(make(EVENTS, "append", MONDAY, since=SUNDAY)),
        lambda: make(EVENTS, "append", MONDAY + 2 * HOUR, since=MONDAY + HOUR),
        "Transitions 3 (every later append has since equal to complete_as_of in every region it "
        "covers): since 2026-10-19T01:00:00+00:00 but region (unbounded, unbounded) is complete "
        "as of 2026-10-19T00:00:00+00:00",
    ),
    "4, since <= t": (
        lambda: orders_full_at(SUNDAY),
        lambda: make(ORDERS, "changes", MONDAY, since=MONDAY + HOUR),
        "Transitions 4 (timestamp changes have since <= t): since 2026-10-19T01:00:00+00:00 is "
        "after produced_at 2026-10-19T00:00:00+00:00",
    ),
    "4, since <= complete_as_of": (
        lambda: orders_full_at(SUNDAY).apply(window(ORDERS, SUNDAY + HOUR, day(3), day(3))),
        lambda: make(ORDERS, "changes", MONDAY, since=SUNDAY + 2 * HOUR),
        "Transitions 4 (timestamp changes have since <= complete_as_of everywhere covered): since "
        "2026-10-18T02:00:00+00:00 is after complete_as_of 2026-10-18T00:00:00+00:00 of region "
        "(unbounded, datetime.date(2026, 10, 3)), so changes in between would be missed",
    ),
    "5": (
        lambda: Ledger.new(FEED).apply(full(FEED, SUNDAY, generation="g1")),
        lambda: make(FEED, "feed", MONDAY, since="g0", generation="g2"),
        "Transitions 5 (generation changes have since equal to the held generation): since 'g0', "
        "held 'g1'; a broken chain needs a full reset, a complete whole-table delivery issuing a "
        "generation",
    ),
    "6, no position": (
        lambda: Ledger.new(LOG).apply(full(LOG, SUNDAY)),
        lambda: make(LOG, "tail", MONDAY, since=0, generation=5),
        "Transitions 6 (a missing or opaque position needs a complete delivery issuing one): the "
        "ledger holds no position; a sequence read needs a held integer",
    ),
    "6, skip": (
        lambda: log_at(100),
        lambda: make(LOG, "tail", MONDAY, since=101, generation=120),
        "Transitions 6 (keyed sequence reads have since <= position <= generation): since 101, "
        "held position 100, generation 120; a read may reread, never skip or go back",
    ),
}


@pytest.mark.parametrize("rule", list(REFUSALS))
def test_each_refusal_names_its_rule_and_what_broke_it(rule: str) -> None:
    """RejectedDelivery names the rule as the spec words it, then the values that break it."""
    ledger, manifest, message = REFUSALS[rule]
    with pytest.raises(RejectedDelivery) as refused:
        ledger().apply(manifest())
    assert str(refused.value) == message


# Action and ApplyPlan refuse by field, and hold what they are given as their own types ---------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Action("wipe"), "Action.operation: 'wipe' is not an action kind"),
        (lambda: Action("upsert", key="id"), "Action.key: 'id' must be a tuple of column names"),
        (
            lambda: Action("upsert", key=("id", "")),
            "Action.key: ('id', '') must be a tuple of column names",
        ),
        (
            lambda: Action("append", key=("id",)),
            "Action.key: append inserts without matching; it names no key",
        ),
        (
            lambda: Action("upsert", (date(2026, 1, 1), date(2026, 1, 2)), key=("id",)),
            "Action.window: named by replace_window, and only by it",
        ),
        (lambda: ApplyPlan([]), "ApplyPlan.actions: a plan holds at least one Action"),
    ],
)
def test_an_action_or_plan_is_refused_naming_the_field(build: Any, message: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        build()
    assert str(refused.value) == message


def test_an_action_and_a_plan_hold_an_action_kind_and_tuples() -> None:
    action = Action("replace_window", [date(2026, 1, 1), date(2026, 1, 2)], key=["id"])  # type: ignore[arg-type]
    assert action.operation is ActionKind.REPLACE_WINDOW
    assert action.window == (date(2026, 1, 1), date(2026, 1, 2))
    assert type(action.window) is tuple and action.key == ("id",)
    plan = ApplyPlan([action])  # type: ignore[arg-type]
    assert type(plan.actions) is tuple and plan.actions == (action,)
