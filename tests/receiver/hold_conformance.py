"""The conformance cases of held deliveries (dogana_provider/receiver/holds.py).

ReceiverConformance (receiver_conformance.py) inherits this class, so every case runs on SQLite,
PostgreSQL and MariaDB with the suite's fixtures and helpers (receiver, source, state,
staging_left, ...). One test per rule, named after it.

The held delivery of every case: orders 1 to 3 published by a full read at 2h; then a changes
read at 4h bringing order 7, named "bad", which an expectation declared on_violation hold
refuses. A group (orders and lines read together) is held whole: see Groups below.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from activation_conformance import grant
from receiver_deliveries import NOW, Source, at

from dogana_core.gate import Outcome
from dogana_core.group import Group, recorded_digest
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import execute
from dogana_provider.receiver import Decision, Receiver
from dogana_provider.receiver.activation import SOURCE_ACTIVE
from dogana_provider.receiver.holds import DISCARDED_CHECK, NotHeld
from dogana_provider.receiver.receiver import HeldDelivery
from dogana_provider.receiver.together import GroupDecision
from dogana_provider.receiver.transactions import transaction

PERSON = "Ada Lovelace"
OTHER = "Grace Hopper"
HELD_BY = "no_bad_names"
HOLD = {"checks": {HELD_BY: {"check_statement": "name <> 'bad'", "on_violation": "hold"}}}
"""The table's one expectation: no order is named 'bad', or the delivery is held."""
WHEN = "2027-01-01 00:00:00 UTC"  # NOW, as a release or discard names it


class HoldConformance:
    """Cases on held deliveries; the fixtures and helpers are ReceiverConformance's."""

    # Helpers ---------------------------------------------------------------------------------

    def hold_delivery(self, receiver: Receiver, delivery: tuple[Path, Any]) -> Decision:
        """Decide a delivery of a table declaring HOLD."""
        return receiver.decide(*delivery)

    def held(self, receiver: Receiver, source: Source) -> tuple[Decision, tuple[Any, ...]]:
        """The held delivery, and the table's state (rows, ledger, receipts) before it."""
        receiver.register(source.contract, Expectations.from_dict(HOLD))
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        source.put(7, 7, "bad", at(3))
        decision = self.hold_delivery(receiver, source.changes(at(2), at(4)))
        assert decision.held, decision.receipt.failed
        return decision, before

    def staged(self, receiver: Receiver, decision: Decision) -> list[str]:
        return self.staging_left(receiver, decision.receipt.manifest)

    # Held ------------------------------------------------------------------------------------

    def test_a_held_delivery_publishes_nothing_records_nothing_and_keeps_its_staged_rows(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, before = self.held(receiver, source)
        assert decision.hold == f"{source.table}-1"
        assert not decision.to_publish and decision.staged is None
        assert [c.name for c in decision.receipt.failed] == [HELD_BY]
        assert self.state(receiver, source.table) == before
        assert len(self.staged(receiver, decision)) == 1
        (hold,) = receiver.holds(source.table)
        assert hold.hold_id == decision.hold and hold.held
        (held,) = hold.tables
        assert held.manifest == decision.receipt.manifest
        assert held.base_publication_id == receiver.ledger(source.table).head != "None"
        assert [c.name for c in held.checks if not c.passed] == [HELD_BY]
        receiver.verify(source.table)

    def test_a_store_made_before_holds_decides_as_before(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        """A store without the holds table (made before holds) decides and publishes without
        reading one: the decision's one read leaves the holds out (Store.decided)."""
        with transaction(receiver.connect, self.dialect) as connection:
            execute(connection, f"DROP TABLE {receiver.store.holds}")
        older = Receiver(connect, self.dialect, prefix=f"s{uid}", clock=lambda: NOW)
        source.put(1, 1, "one", at(1))
        self.publish_checked(older, source, source.full(at(2)))
        assert self.published(older, source.table) == source.expected()

    def test_a_held_delivery_is_never_swept_whatever_its_age(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        decision, _ = self.held(receiver, source)
        years_later = Receiver(
            connect, receiver.dialect, prefix=f"s{uid}", clock=lambda: NOW + timedelta(days=900)
        )
        assert years_later.sweep(timedelta(0)) == ()
        assert len(self.staged(receiver, decision)) == 1
        assert decision.hold is not None
        (receipt,) = years_later.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert self.published(receiver, source.table) == source.expected()

    def test_a_held_decision_is_never_published(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        decision, before = self.held(receiver, source)
        handed = Decision.from_dict(decision.to_dict())  # as the publish task receives it
        assert handed == decision
        publisher = self.make(connect, uid)
        with pytest.raises(HeldDelivery, match=f"held as {decision.hold}"):
            publisher.publish(handed)
        assert self.state(receiver, source.table) == before
        assert len(self.staged(receiver, decision)) == 1  # and its rows still wait

    def test_a_delivery_still_held_is_answered_with_its_hold(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, before = self.held(receiver, source)
        again = self.hold_delivery(receiver, source.changes(at(2), at(4)))
        assert again.hold == decision.hold
        assert len(receiver.holds()) == 1 and len(self.staged(receiver, decision)) == 1
        assert self.state(receiver, source.table) == before

    # Released --------------------------------------------------------------------------------

    def test_a_released_hold_is_published_as_its_acceptance_would_have_been(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, _ = self.held(receiver, source)
        ledger = receiver.ledger(source.table)
        manifest = decision.receipt.manifest
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        would = ledger.apply(manifest)
        assert receipt.base_publication_id == ledger.head
        assert (receipt.publication_id, receipt.ledger_identity) == (would.head, would.identity)
        assert receipt.transition is not None
        assert receipt.transition.plan == ledger.plan(manifest)
        assert [c.name for c in receipt.checks] == [c.name for c in decision.receipt.checks]
        assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).head == receipt.publication_id
        assert self.staged(receiver, decision) == []
        assert receiver.holds() == []

    def test_a_release_names_who_released_it_and_when(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, _ = self.held(receiver, source)
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        (released,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert released.passed
        assert f"held as {decision.hold}, released by {PERSON} at {WHEN}" in released.detail
        ended = receiver.find_hold(decision.hold)
        assert (ended.state, ended.decided_by, ended.decided_at) == ("released", PERSON, NOW)
        assert ended.outcome == "accepted"

    def test_a_hold_released_after_its_table_moved_on_is_decided_again(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, _ = self.held(receiver, source)
        # An empty changes read up to 2.5h is published meanwhile: the held read still fits.
        between = receiver.receive(*source.changes(at(2), at(2.5)))
        assert between.outcome is Outcome.ACCEPTED, between.failed
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert receipt.base_publication_id == between.publication_id  # decided on the new head
        (released,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert released.passed and f"released by {PERSON}" in released.detail
        assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 3
        assert self.staged(receiver, decision) == []

    def test_a_hold_released_after_its_table_moved_past_it_is_recorded_as_a_rejection(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, _ = self.held(receiver, source)
        # A later complete window of days 1 to 3 is published meanwhile: the held read (4h)
        # is older than that window's evidence (5h), so the ledger refuses it now.
        later = receiver.receive(*source.window(1, 3, at(5)))
        assert later.outcome is Outcome.ACCEPTED, later.failed
        before = self.state(receiver, source.table)
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == ["transition"]
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2] == [*before[2], receipt.identity]
        assert receiver.find_hold(decision.hold).outcome == "rejected"
        assert self.staged(receiver, decision) == []
        receiver.verify(source.table)

    def test_a_hold_released_after_its_table_moved_on_has_its_rows_checked_again(
        self, receiver: Receiver, source: Source
    ) -> None:
        """Decided again, never a rebased plan: the staged rows meet the published table as it
        is now, and a row check they fail now refuses them."""
        receiver.register(source.contract, Expectations.from_dict(HOLD))
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(7, 7, "bad", at(3))
        decision = receiver.decide(*source.window(5, 7, at(4)))  # order 7, on day 7
        assert decision.held and decision.hold is not None
        # Meanwhile order 7 is published on day 2: outside the held window.
        source.put(7, 2, "moved", at(3.5))
        moved = receiver.receive(*source.changes(at(2), at(3.5)))
        assert moved.outcome is Outcome.ACCEPTED, moved.failed
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == ["key_not_published_outside_window"]
        (released,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert released.passed and f"released by {PERSON}" in released.detail
        assert receiver.receipts(source.table)[-1] == receipt
        receiver.verify(source.table)

    def test_a_hold_of_a_table_no_longer_active_is_not_published_on_release(
        self, receiver: Receiver, source: Source
    ) -> None:
        steward = "Ada Steward"
        receiver.sources.require(True, by=steward)
        receiver.sources.activate(source.table, **grant())
        decision, _ = self.held(receiver, source)
        receiver.sources.deactivate(source.table, by=steward, reason="the ERP contract ended")
        before = self.state(receiver, source.table)
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2] == [*before[2], receipt.identity]

    # What a release covers later -------------------------------------------------------------
    # Order 7, named "bad", released at 4h; later reads carry it again.

    def released(self, receiver: Receiver, source: Source) -> None:
        decision, _ = self.held(receiver, source)
        assert decision.hold is not None
        (receipt,) = receiver.release(decision.hold, by=PERSON)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed

    def test_a_released_row_does_not_hold_the_next_full_read_again(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.released(receiver, source)
        receipt = self.publish_checked(receiver, source, source.full(at(5)))
        (check,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert check.passed and check.detail.startswith("met:")
        assert "all released earlier" in check.detail

    def test_a_released_row_does_not_hold_a_changes_read_rereading_it(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.released(receiver, source)
        # Since 2h, as a lookback rereads: order 7 (changed at 3h) comes again, unchanged.
        receipt = self.publish_checked(receiver, source, source.changes(at(2), at(5)))
        assert receipt.manifest.rows == 1
        (check,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert check.passed and "all released earlier" in check.detail

    def test_a_released_row_changed_since_is_checked_afresh_and_holds_again(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.released(receiver, source)
        source.put(7, 7, "bad", at(4.5))  # changed again at the source: another version
        decision = receiver.decide(*source.full(at(5)))
        assert decision.held, decision.receipt.failed
        (check,) = decision.receipt.failed
        assert check.name == HELD_BY and "1 live row" in check.detail

    def test_a_release_covers_the_rows_released_not_others_the_same_rule_faults(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.released(receiver, source)
        source.put(8, 8, "bad", at(4.5))
        decision = receiver.decide(*source.full(at(5)))
        assert decision.held and decision.hold is not None
        (check,) = decision.receipt.failed
        assert check.detail.endswith(
            "2 live rows not satisfying name <> 'bad', 1 released earlier, 1 row"
        )
        (shown,) = receiver.violations(receiver.find_hold(decision.hold), 20)
        assert shown.rows.count == 2  # a person sees every row at fault, the released one too

    def test_a_release_covers_the_rule_as_declared_then(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.released(receiver, source)
        stricter = {
            "checks": {
                HELD_BY: {"check_statement": "name NOT IN ('bad', 'worse')", "on_violation": "hold"}
            }
        }
        receiver.declare(source.table, Expectations.from_dict(stricter))
        decision = receiver.decide(*source.full(at(5)))
        assert decision.held, decision.receipt.failed

    # Discarded -------------------------------------------------------------------------------

    def test_a_discarded_hold_is_recorded_as_a_rejection_and_its_staged_rows_dropped(
        self, receiver: Receiver, source: Source
    ) -> None:
        decision, before = self.held(receiver, source)
        assert decision.hold is not None
        (receipt,) = receiver.discard(decision.hold, by=PERSON, reason="order 7 is a test order")
        assert receipt.outcome is Outcome.REJECTED
        (failed,) = receipt.failed
        assert failed.name == HELD_BY
        assert (
            f"held as {decision.hold}, discarded by {PERSON} at {WHEN}: order 7 is a test order"
            in failed.detail
        )
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2] == [*before[2], receipt.identity]
        assert self.staged(receiver, decision) == []
        ended = receiver.find_hold(decision.hold)
        assert (ended.state, ended.decided_by, ended.reason) == (
            "discarded",
            PERSON,
            "order 7 is a test order",
        )
        receiver.verify(source.table)

    def test_a_discarded_delivery_delivered_again_is_refused_as_discarded(
        self, receiver: Receiver, source: Source
    ) -> None:
        """A cleared gate or a retry hands the same manifest over again: the person's discard
        stands, naming who and when, and no new hold is made of it."""
        receiver.register(source.contract, Expectations.from_dict(HOLD))
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(7, 7, "bad", at(3))
        delivery = source.changes(at(2), at(4))
        decision = receiver.decide(*delivery)
        assert decision.hold is not None
        receiver.discard(decision.hold, by=PERSON, reason="order 7 is a test order")
        before = self.state(receiver, source.table)
        again = receiver.decide(*delivery)
        assert not again.held and not again.to_publish
        assert again.receipt.outcome is Outcome.REJECTED
        (failed,) = again.receipt.failed
        assert failed.name == DISCARDED_CHECK
        assert f"held as {decision.hold} and discarded by {PERSON} at {WHEN}" in failed.detail
        assert "order 7 is a test order" in failed.detail
        assert receiver.holds() == []
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2] == [*before[2], again.receipt.identity]
        assert self.staging_left(receiver, delivery[1]) == []

    # Ending a hold ---------------------------------------------------------------------------

    def test_a_hold_ends_once(self, receiver: Receiver, source: Source) -> None:
        decision, _ = self.held(receiver, source)
        assert decision.hold is not None
        receiver.release(decision.hold, by=PERSON)
        published = self.state(receiver, source.table)
        with pytest.raises(NotHeld, match=f"released by {PERSON}"):
            receiver.release(decision.hold, by=OTHER)
        with pytest.raises(NotHeld, match=f"released by {PERSON}"):
            receiver.discard(decision.hold, by=OTHER)
        assert self.state(receiver, source.table) == published
        assert receiver.find_hold(decision.hold).decided_by == PERSON

    def test_two_people_releasing_at_once_publish_it_once(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        decision, _ = self.held(receiver, source)
        assert decision.hold is not None
        hold_id = decision.hold
        barrier = threading.Barrier(2)
        ended: dict[str, object] = {}

        def release(by: str) -> None:
            releaser = self.make(connect, uid)  # each person's own receiver and connections
            barrier.wait(timeout=60)
            try:
                ended[by] = releaser.release(hold_id, by=by)
            except NotHeld as exc:
                ended[by] = exc

        threads = [threading.Thread(target=release, args=(by,)) for by in (PERSON, OTHER)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(type(result).__name__ for result in ended.values()) == ["NotHeld", "tuple"]
        assert receiver.verify(source.table).publications == 2  # the full read, then this one
        assert self.published(receiver, source.table) == source.expected()
        (winner,) = [by for by, result in ended.items() if isinstance(result, tuple)]
        assert receiver.find_hold(hold_id).decided_by == winner

    def test_an_unknown_hold_is_refused_changing_nothing(
        self, receiver: Receiver, source: Source
    ) -> None:
        _, before = self.held(receiver, source)
        missing = f"{source.table}-9"
        with pytest.raises(NotHeld, match=f"no hold '{missing}'"):
            receiver.release(missing, by=PERSON)
        with pytest.raises(NotHeld, match=f"no hold '{missing}'"):
            receiver.discard(missing, by=PERSON)
        assert self.state(receiver, source.table) == before
        assert len(receiver.holds()) == 1

    @pytest.mark.parametrize("by", ["", "   ", "Ada\nLovelace"])
    def test_ending_a_hold_needs_a_persons_name(
        self, receiver: Receiver, source: Source, by: str
    ) -> None:
        decision, before = self.held(receiver, source)
        assert decision.hold is not None
        with pytest.raises(ValueError, match="by: "):
            receiver.release(decision.hold, by=by)
        with pytest.raises(ValueError, match="by: "):
            receiver.discard(decision.hold, by=by)
        assert self.state(receiver, source.table) == before
        assert receiver.find_hold(decision.hold).held

    # Groups --------------------------------------------------------------------------------
    # A group of orders and lines published together at 2h, then a group of changes reads at
    # 4h bringing order 4 and line 7, named "bad", which lines' hold expectation refuses.

    def held_group(self, receiver: Receiver, uid: str, tmp_path: Path) -> HeldGroup:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        receiver.register(lines.contract, Expectations.from_dict(HOLD))
        first = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        published = receiver.receive_group(group, first)
        assert [r.outcome for r in published] == [Outcome.ACCEPTED] * 2
        before = [self.state(receiver, source.table) for source in (orders, lines)]
        orders.put(4, 4, "order4", at(3))
        lines.put(7, 7, "bad", at(3))
        deliveries = {
            orders.table: orders.changes(at(2), at(4)),
            lines.table: lines.changes(at(2), at(4)),
        }
        decision = receiver.decide_group(group, deliveries)
        assert decision.hold is not None, [r.failed for r in decision.receipts]
        return HeldGroup(group, orders, lines, deliveries, decision, decision.hold, before)

    def group_staged(self, receiver: Receiver, held: HeldGroup) -> list[str]:
        return self.staging_left(receiver, *(m for _, m in held.deliveries.values()))

    def test_a_group_with_a_violated_hold_is_held_whole_and_nothing_of_it_published(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        assert held.hold == f"{held.orders.table}-1"
        assert not held.decision.to_publish and held.decision.staged == ()
        assert [r.outcome for r in held.decision.receipts] == [Outcome.REJECTED] * 2
        (hold,) = receiver.holds()
        assert hold.hold_id == held.hold and hold.held and hold.grouped
        assert [t.table for t in hold.tables] == [held.orders.table, held.lines.table]
        assert [[c.name for c in t.held_checks] for t in hold.tables] == [[], [HELD_BY]]
        assert [receiver.holds(s.table) for s in (held.orders, held.lines)] == [[hold], [hold]]
        assert [self.state(receiver, s.table) for s in (held.orders, held.lines)] == held.before
        assert len(self.group_staged(receiver, held)) == 2
        with pytest.raises(HeldDelivery, match=f"held as {held.hold}"):
            receiver.publish_group(held.decision)
        assert [self.state(receiver, s.table) for s in (held.orders, held.lines)] == held.before

    def test_a_group_refused_for_more_than_a_hold_is_rejected_not_held(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        """Held only when every protocol check and block passes: here the manifests' instants
        differ, so the together check fails for more than the hold."""
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        receiver.register(lines.contract, Expectations.from_dict(HOLD))
        lines.put(7, 7, "bad", at(1))
        deliveries = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2.5))}
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert {c.name for c in receipts[1].failed} == {HELD_BY, "together"}
        assert "produced_at differ" in next(c for c in receipts[0].failed).detail
        assert receiver.holds() == []
        assert self.staging_left(receiver, *(m for _, m in deliveries.values())) == []
        assert [receiver.receipts(s.table)[-1] for s in (orders, lines)] == list(receipts)

    def test_a_group_still_held_is_answered_with_its_hold(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        again = receiver.decide_group(held.group, held.deliveries)
        assert again.hold == held.hold and not again.to_publish
        assert len(receiver.holds()) == 1 and len(self.group_staged(receiver, held)) == 2
        assert [self.state(receiver, s.table) for s in (held.orders, held.lines)] == held.before

    def test_a_held_group_is_never_swept_whatever_its_age(
        self, connect: Any, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        years_later = Receiver(
            connect, receiver.dialect, prefix=f"s{uid}", clock=lambda: NOW + timedelta(days=900)
        )
        assert years_later.sweep(timedelta(0)) == ()
        assert len(self.group_staged(receiver, held)) == 2
        assert receiver.holds()[0].held

    def test_a_released_group_is_published_in_one_commit_naming_who_and_when(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        heads = [receiver.ledger(s.table).head for s in (held.orders, held.lines)]
        receipts = receiver.release(held.hold, by=PERSON)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
        assert [r.table for r in receipts] == [held.orders.table, held.lines.table]
        assert [r.base_publication_id for r in receipts] == heads
        # Accepted together, as Group.apply makes it: the group replays whole.
        digests = {recorded_digest(r) for r in receipts}
        assert len(digests) == 1 and None not in digests
        (released,) = [c for c in receipts[1].checks if c.name == HELD_BY]
        assert released.passed
        assert f"held as {held.hold}, released by {PERSON} at {WHEN}" in released.detail
        for source in (held.orders, held.lines):
            assert self.published(receiver, source.table) == source.expected()
            assert receiver.verify(source.table).publications == 2
        assert self.group_staged(receiver, held) == [] and receiver.holds() == []
        ended = receiver.find_hold(held.hold)
        assert (ended.state, ended.decided_by, ended.outcome) == ("released", PERSON, "accepted")
        replayed = receiver.receive_group(held.group, held.deliveries)
        assert [r.outcome for r in replayed] == [Outcome.REPLAYED] * 2

    def test_a_held_group_released_after_a_table_moved_on_is_decided_again(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        # An empty changes read of orders up to 2.5h is published meanwhile: the held reads
        # still fit, decided again on orders' new head.
        between = receiver.receive(*held.orders.changes(at(2), at(2.5)))
        assert between.outcome is Outcome.ACCEPTED, between.failed
        lines_head = receiver.ledger(held.lines.table).head
        receipts = receiver.release(held.hold, by=PERSON)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
        assert [r.base_publication_id for r in receipts] == [between.publication_id, lines_head]
        (released,) = [c for c in receipts[1].checks if c.name == HELD_BY]
        assert released.passed and f"released by {PERSON}" in released.detail
        for source in (held.orders, held.lines):
            assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(held.orders.table).publications == 3
        assert receiver.verify(held.lines.table).publications == 2
        assert self.group_staged(receiver, held) == []

    def test_a_held_group_refused_when_decided_again_is_a_rejection_of_every_table(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        # A later complete window of orders' days 1 to 3 (5h) is published meanwhile: the held
        # orders read (4h) is older than its evidence, so the ledger refuses it now.
        later = receiver.receive(*held.orders.window(1, 3, at(5)))
        assert later.outcome is Outcome.ACCEPTED, later.failed
        before = [self.state(receiver, s.table) for s in (held.orders, held.lines)]
        receipts = receiver.release(held.hold, by=PERSON)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert "transition" in {c.name for c in receipts[0].failed}
        for source, was, receipt in zip((held.orders, held.lines), before, receipts, strict=True):
            after = self.state(receiver, source.table)
            assert after[:2] == was[:2] and after[2] == [*was[2], receipt.identity]
            receiver.verify(source.table)
        assert receiver.find_hold(held.hold).outcome == "rejected"
        assert self.group_staged(receiver, held) == []

    def test_a_discarded_group_is_a_rejection_of_every_table_and_its_staged_rows_dropped(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        receipts = receiver.discard(held.hold, by=PERSON, reason="line 7 is a test line")
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        note = f"held as {held.hold}, discarded by {PERSON} at {WHEN}: line 7 is a test line"
        for receipt in receipts:
            assert receipt.failed and all(note in c.detail for c in receipt.failed)
        assert HELD_BY in {c.name for c in receipts[1].failed}
        for source, was, receipt in zip(
            (held.orders, held.lines), held.before, receipts, strict=True
        ):
            after = self.state(receiver, source.table)
            assert after[:2] == was[:2] and after[2] == [*was[2], receipt.identity]
        assert self.group_staged(receiver, held) == []
        assert receiver.find_hold(held.hold).state == "discarded"
        with pytest.raises(NotHeld, match=f"discarded by {PERSON}"):
            receiver.release(held.hold, by=OTHER)

    def test_a_discarded_group_delivered_again_is_refused_as_discarded(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        receiver.discard(held.hold, by=PERSON)
        again = receiver.decide_group(held.group, held.deliveries)
        assert again.hold is None and not again.to_publish
        assert [r.outcome for r in again.receipts] == [Outcome.REJECTED] * 2
        refused = [c for r in again.receipts for c in r.failed if c.name == DISCARDED_CHECK]
        assert refused and all(f"discarded by {PERSON} at {WHEN}" in c.detail for c in refused)
        assert receiver.holds() == []
        assert self.group_staged(receiver, held) == []

    def test_two_people_releasing_a_group_at_once_publish_it_once(
        self, connect: Any, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        held = self.held_group(receiver, uid, tmp_path)
        barrier = threading.Barrier(2)
        ended: dict[str, object] = {}

        def release(by: str) -> None:
            releaser = self.make(connect, uid)  # each person's own receiver and connections
            barrier.wait(timeout=60)
            try:
                ended[by] = releaser.release(held.hold, by=by)
            except NotHeld as exc:
                ended[by] = exc

        threads = [threading.Thread(target=release, args=(by,)) for by in (PERSON, OTHER)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(type(result).__name__ for result in ended.values()) == ["NotHeld", "tuple"]
        for source in (held.orders, held.lines):
            assert receiver.verify(source.table).publications == 2  # the first group, this one
            assert self.published(receiver, source.table) == source.expected()
        (winner,) = [by for by, result in ended.items() if isinstance(result, tuple)]
        assert receiver.find_hold(held.hold).decided_by == winner


@dataclass(frozen=True)
class HeldGroup:
    """A held group's delivery, and each table's state (rows, ledger, receipts) before it."""

    group: Group
    orders: Source
    lines: Source
    deliveries: dict[str, tuple[Path, Any]]
    decision: GroupDecision
    hold: str
    before: list[tuple[Any, ...]]
