"""The gate and its receipts ("Plans, checks and receipts"), one test per rule.

Gate.evaluate decides from three core checks (manifest, receiver_time, transition), then the
receiver's outcomes and the joint checks; any failure rejects. A Receipt records the decision
and never holds the ledger, the history, rows or deleted keys.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from ledger_fixtures import HOUR, MONDAY, ORDERS, SUNDAY, chain_of, day, make

from dogana_core import InvalidContract, Manifest, Shape
from dogana_core.gate import Check, Gate, Outcome, Receipt, Transition
from dogana_core.ledger import Ledger, Region
from dogana_core.plan import Action, ActionKind, ApplyPlan

ROWS_OK = Check("rows", True, "3 rows, as declared")
ROWS_BAD = Check("rows", False, "2 rows, 3 declared")


def full(t: datetime = SUNDAY) -> Manifest:
    return make(ORDERS, "full", t, rows=3)


def window(t: datetime, low: int, high: int) -> Manifest:
    return make(ORDERS, "day", t, window=(day(low), day(high)), rows=1)


def accepted_full() -> tuple[Ledger, Receipt]:
    ledger = Ledger.new(ORDERS)
    receipt = Gate.evaluate(ledger, full(), (ROWS_OK,), now=SUNDAY)
    assert receipt.outcome is Outcome.ACCEPTED
    return ledger.follow(receipt), receipt


# The core checks ---------------------------------------------------------------------------------


def test_gate_decides_from_three_core_checks_in_order() -> None:
    receipt = Gate.evaluate(Ledger.new(ORDERS), full(), now=SUNDAY)
    assert [check.name for check in receipt.checks] == ["manifest", "receiver_time", "transition"]
    assert receipt.accepted


def test_preflight_returns_the_core_checks_alone() -> None:
    checks = Gate.preflight(Ledger.new(ORDERS), full(), now=SUNDAY)
    assert [(check.name, check.passed) for check in checks] == [
        ("manifest", True),
        ("receiver_time", True),
        ("transition", True),
    ]


def test_manifest_check_fails_when_the_declarations_do_not_fit_the_contract() -> None:
    wrong = Manifest("orders", "full", SUNDAY, window=(day(1), day(1)))
    receipt = Gate.evaluate(Ledger.new(ORDERS), wrong, now=MONDAY)
    assert not receipt.accepted
    assert {c.name: c.passed for c in receipt.checks} == {
        "manifest": False,
        "receiver_time": True,
        "transition": False,
    }
    assert "not evaluated" in receipt.checks[2].detail


def test_produced_at_later_than_the_receivers_now_is_rejected() -> None:
    late = Gate.evaluate(Ledger.new(ORDERS), full(MONDAY), now=MONDAY - timedelta(microseconds=1))
    assert late.outcome is Outcome.REJECTED
    assert [c.name for c in late.failed] == ["receiver_time"]
    assert Gate.evaluate(Ledger.new(ORDERS), full(MONDAY), now=MONDAY).accepted


def test_a_failed_manifest_check_carries_the_refusal_naming_what_is_wrong() -> None:
    wrong = Manifest("orders", "full", SUNDAY, window=(day(1), day(1)))
    with pytest.raises(InvalidContract) as refused:
        wrong.check(ORDERS)
    receipt = Gate.evaluate(Ledger.new(ORDERS), wrong, now=MONDAY)
    assert receipt.checks[0].detail == str(refused.value) != ""
    assert receipt.checks[2].detail == "not evaluated: the manifest does not fit the contract"


def test_receiver_time_detail_states_produced_at_against_the_receivers_time() -> None:
    on_time = Gate.preflight(Ledger.new(ORDERS), full(MONDAY), now=MONDAY)[1]
    late = Gate.preflight(Ledger.new(ORDERS), full(MONDAY), now=SUNDAY)[1]
    assert on_time.detail == (
        f"produced_at {MONDAY.isoformat()} is not after the receiver's time {MONDAY.isoformat()}"
    )
    assert late.detail == (
        f"produced_at {MONDAY.isoformat()} is after the receiver's time {SUNDAY.isoformat()}"
    )


def test_transition_check_fails_when_the_ledger_does_not_admit_the_read() -> None:
    ledger, _ = accepted_full()
    receipt = Gate.evaluate(ledger, full(SUNDAY), now=MONDAY)
    assert [c.name for c in receipt.failed] == ["transition"]
    assert "Transitions 2" in receipt.failed[0].detail


def test_a_failed_receiver_outcome_rejects() -> None:
    receipt = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_OK, ROWS_BAD), now=SUNDAY)
    assert receipt.outcome is Outcome.REJECTED
    assert receipt.checks[3:] == (ROWS_OK, ROWS_BAD)


def test_a_failed_joint_check_rejects_after_the_receivers_outcomes() -> None:
    together = Check("together", False, "orders was rejected")
    receipt = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_OK,), now=SUNDAY, joint=(together,))
    assert receipt.outcome is Outcome.REJECTED
    assert [c.name for c in receipt.checks] == [
        "manifest",
        "receiver_time",
        "transition",
        "rows",
        "together",
    ]


def test_receiver_checks_cannot_take_a_core_checks_name() -> None:
    with pytest.raises(InvalidContract, match="core check"):
        Gate.evaluate(Ledger.new(ORDERS), full(), (Check("transition", True),), now=SUNDAY)


def test_reject_records_a_failure_the_receiver_found() -> None:
    ledger = Ledger.new(ORDERS)
    checks = (*Gate.preflight(ledger, full(), now=SUNDAY), Check("content_hash", False, "differs"))
    receipt = Gate.reject(ledger, full(), checks, now=SUNDAY, source="sftp://drop/orders.csv")
    assert receipt.outcome is Outcome.REJECTED
    assert receipt.checks == checks
    assert receipt.source == "sftp://drop/orders.csv"


def test_a_rejection_names_at_least_one_failed_check() -> None:
    with pytest.raises(InvalidContract, match="at least one failed check"):
        Gate.reject(Ledger.new(ORDERS), full(), (ROWS_OK,), now=SUNDAY)


# Receipts ----------------------------------------------------------------------------------------


def test_acceptance_names_the_chain_head_and_the_ledger_it_leaves() -> None:
    ledger = Ledger.new(ORDERS)
    receipt = Gate.evaluate(ledger, full(), now=SUNDAY, source="pull")
    after = ledger.apply(full())
    assert receipt.base_publication_id == "None"
    assert receipt.publication_id == after.publication_id == chain_of("None", ORDERS, full())
    assert receipt.ledger_identity == after.identity
    assert receipt.received_at == SUNDAY
    assert receipt.contract == ORDERS
    assert receipt.manifest == full()


def test_rejection_leaves_ledger_and_publication_as_they_were() -> None:
    ledger, _ = accepted_full()
    receipt = Gate.evaluate(ledger, full(MONDAY), (ROWS_BAD,), now=MONDAY)
    assert receipt.base_publication_id == receipt.publication_id == ledger.publication_id
    assert receipt.ledger_identity == ledger.identity
    assert receipt.transition is None


def test_a_receipt_records_its_source_whatever_the_decision() -> None:
    rejected = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=SUNDAY, source="pull")
    accepted = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_OK,), now=SUNDAY, source="pull")
    assert rejected.source == accepted.source == "pull"


def test_rejection_on_an_untouched_ledger_names_the_genesis_head() -> None:
    ledger = Ledger.new(ORDERS)
    receipt = Gate.evaluate(ledger, full(), (ROWS_BAD,), now=SUNDAY)
    assert receipt.base_publication_id == receipt.publication_id == "None"
    assert receipt.ledger_identity == ledger.identity


@pytest.mark.parametrize("name", ["base_publication_id", "publication_id", "ledger_identity"])
def test_neither_identity_on_a_receipt_is_ever_empty(name: str) -> None:
    _, receipt = accepted_full()
    with pytest.raises(InvalidContract, match=name):
        receipt.replace(**{name: ""})


def test_acceptance_carries_the_plan_and_the_regions_over_its_coverage() -> None:
    ledger, _ = accepted_full()
    receipt = Gate.evaluate(ledger, window(MONDAY, 3, 4), now=MONDAY)
    assert receipt.transition == Transition(
        ApplyPlan((Action(ActionKind.REPLACE_WINDOW, (day(3), day(4)), ("id",)),)),
        (Region.closed(day(3), day(4), MONDAY, MONDAY),),
    )


def test_a_transitions_regions_are_a_tuple_however_they_are_given() -> None:
    plan = ApplyPlan((Action(ActionKind.REPLACE_ALL),))
    regions = [Region(None, None, complete_as_of=SUNDAY, deletions_as_of=SUNDAY)]
    given = Transition(plan, regions)  # type: ignore[arg-type]
    assert given.regions == tuple(regions)
    assert given == Transition(plan, tuple(regions))
    assert hash(given) == hash(Transition(plan, tuple(regions)))


def test_transition_regions_show_every_region_the_coverage_meets() -> None:
    ledger, _ = accepted_full()
    ledger = ledger.apply(window(MONDAY, 5, 5))
    receipt = Gate.evaluate(
        ledger,
        make(ORDERS, "recent", MONDAY + HOUR, window=(day(4), day(6)), since=SUNDAY),
        now=MONDAY + HOUR,
    )
    assert receipt.transition is not None
    assert [r.evidence for r in receipt.transition.regions] == [
        (MONDAY + HOUR, SUNDAY),
        (MONDAY + HOUR, MONDAY),
        (MONDAY + HOUR, SUNDAY),
    ]
    assert receipt.transition.regions[0].low == day(4)
    assert receipt.transition.regions[-1].high == day(7)


def test_a_receipt_grows_with_its_coverage_never_with_the_ledger() -> None:
    ledger, _ = accepted_full()
    later = SUNDAY + timedelta(days=30)
    sizes = []
    for n in range(1, 200):
        if n in (2, 20, 199):
            receipt = Gate.evaluate(ledger, window(later, 100, 100), now=later)
            sizes.append(len(receipt.to_json()))
        # Windows at different instants: the ledger grows by a region each time.
        ledger = ledger.apply(window(SUNDAY + n * HOUR, n % 60 + 1, n % 60 + 1))
    assert len(ledger.regions) > 50
    assert len(set(sizes)) == 1
    document = json.loads(receipt.to_json())
    assert set(document) == {
        "version",
        "kind",
        "manifest",
        "contract",
        "checks",
        "outcome",
        "received_at",
        "source",
        "base_publication_id",
        "publication_id",
        "ledger_identity",
        "transition",
    }


def test_a_receipt_is_filed_under_the_contracts_table_even_when_the_manifest_names_another() -> (
    None
):
    stray = Manifest("customers", "full", SUNDAY)
    receipt = Gate.evaluate(Ledger.new(ORDERS), stray, now=SUNDAY)
    assert receipt.outcome is Outcome.REJECTED
    assert receipt.table == "orders"
    assert receipt.manifest.table == "customers"


def test_a_receipts_identity_covers_its_checks() -> None:
    a = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_OK,), now=SUNDAY)
    b = Gate.evaluate(Ledger.new(ORDERS), full(), (Check("rows", True, "3 rows"),), now=SUNDAY)
    assert a.identity != b.identity


def test_accepted_is_true_for_acceptances_and_replays_replayed_only_for_replays() -> None:
    _, accepted = accepted_full()
    replayed = accepted.replay()
    rejected = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=SUNDAY)
    assert (accepted.accepted, accepted.replayed) == (True, False)
    assert (replayed.accepted, replayed.replayed) == (True, True)
    assert (rejected.accepted, rejected.replayed) == (False, False)


def test_a_replays_identity_is_the_acceptance_it_repeats() -> None:
    _, accepted = accepted_full()
    replayed = accepted.replay()
    assert replayed.outcome is Outcome.REPLAYED
    assert replayed.identity == accepted.identity
    assert replayed.identity_dict()["outcome"] == "accepted"
    assert replayed.to_dict()["outcome"] == "replayed"


def test_only_an_acceptance_is_replayed() -> None:
    rejected = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=SUNDAY)
    with pytest.raises(InvalidContract, match="only an acceptance"):
        rejected.replay()


def test_a_receipt_holds_its_decision_normalized_whatever_form_it_is_given_in() -> None:
    _, accepted = accepted_full()
    rejected = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=SUNDAY)
    again = rejected.replace(
        checks=list(rejected.checks),
        outcome="rejected",
        received_at=SUNDAY.astimezone(timezone(timedelta(hours=2))),
    )
    assert again == rejected
    assert again.checks == rejected.checks
    assert again.outcome is Outcome.REJECTED
    assert not again.accepted
    assert again.received_at.tzinfo is UTC
    assert accepted.replace(outcome="accepted").outcome is Outcome.ACCEPTED


def test_a_receipt_cannot_hold_an_inconsistent_decision() -> None:
    _, accepted = accepted_full()
    with pytest.raises(InvalidContract, match="failed"):
        accepted.replace(checks=(*accepted.checks, ROWS_BAD))
    with pytest.raises(InvalidContract, match="carries its Transition"):
        accepted.replace(transition=None)
    with pytest.raises(InvalidContract, match="does not extend"):
        accepted.replace(manifest=full(MONDAY))
    rejected = Gate.evaluate(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=SUNDAY)
    with pytest.raises(InvalidContract, match="no transition"):
        rejected.replace(transition=accepted.transition)
    with pytest.raises(InvalidContract, match="leaves the publication"):
        rejected.replace(publication_id=accepted.publication_id)


def test_gate_refuses_a_naive_now() -> None:
    with pytest.raises(InvalidContract, match="naive"):
        Gate.evaluate(Ledger.new(ORDERS), full(), now=datetime(2026, 10, 18))


NAIVE_NOW = datetime(2026, 10, 18)
DECISIONS_AT_NOW = {
    "evaluate": lambda: Gate.evaluate(Ledger.new(ORDERS), full(), now=NAIVE_NOW),
    "preflight": lambda: Gate.preflight(Ledger.new(ORDERS), full(), now=NAIVE_NOW),
    "reject": lambda: Gate.reject(Ledger.new(ORDERS), full(), (ROWS_BAD,), now=NAIVE_NOW),
}


@pytest.mark.parametrize("decision", list(DECISIONS_AT_NOW))
def test_every_gate_decision_refuses_a_naive_now_naming_it(decision: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        DECISIONS_AT_NOW[decision]()
    assert str(refused.value) == (
        "Gate now: naive datetime 2026-10-18T00:00:00 carries no UTC offset"
    )


@pytest.mark.parametrize("what", ["outcomes", "joint"])
def test_receiver_checks_must_be_check_values_naming_what_was_given(what: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        Gate.evaluate(Ledger.new(ORDERS), full(), now=SUNDAY, **{what: ("rows passed",)})
    assert str(refused.value) == f"Gate.evaluate {what}: expected Check values, got str"


# Wire round trips --------------------------------------------------------------------------------


def test_check_transition_and_receipt_round_trip_through_json() -> None:
    ledger, accepted = accepted_full()
    rejected = Gate.evaluate(ledger, full(MONDAY), (ROWS_BAD,), now=MONDAY, source="push")
    for value in (ROWS_BAD, accepted.transition, accepted, accepted.replay(), rejected):
        assert value is not None
        again = type(value).from_json(value.to_json())
        assert again == value
        assert again.identity == value.identity


def test_action_and_apply_plan_round_trip_through_json() -> None:
    plan = ApplyPlan(
        (
            Action(ActionKind.REPLACE_WINDOW, (day(1), day(2)), ("id",)),
            Action(ActionKind.UPSERT, key=("a", "b")),
            Action(ActionKind.APPEND),
        )
    )
    assert ApplyPlan.from_json(plan.to_json()) == plan
    assert Action.from_dict(plan.actions[0].to_dict()) == plan.actions[0]


def test_receipt_json_schema_describes_its_wire_form() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _, accepted = accepted_full()
    jsonschema.validate(json.loads(accepted.to_json()), Receipt.json_schema())
    jsonschema.validate(json.loads(accepted.replay().to_json()), Receipt.json_schema())


def test_a_receipt_works_for_a_keyless_contract_too() -> None:
    from ledger_fixtures import EVENTS

    receipt = Gate.evaluate(
        Ledger.new(EVENTS), make(EVENTS, "append", MONDAY, since=SUNDAY), now=MONDAY
    )
    assert receipt.accepted
    assert receipt.transition is not None
    assert receipt.transition.plan.actions == (Action(ActionKind.APPEND),)
    assert Shape.changes().checkpoint == "timestamp"


# Each malformed decision is refused naming the field ---------------------------------------------


def _decisions() -> tuple[Receipt, Receipt]:
    ledger = Ledger.new(ORDERS)
    accepted = Gate.evaluate(ledger, full(), (ROWS_OK,), now=SUNDAY)
    rejected = Gate.evaluate(ledger, full(), (ROWS_BAD,), now=SUNDAY)
    return accepted, rejected


def _gap() -> Transition:
    plan = _decisions()[0].transition
    assert plan is not None
    known = {"complete_as_of": SUNDAY, "deletions_as_of": SUNDAY}
    return Transition(
        plan.plan, (Region(None, day(2), **known), Region(day(3), None, False, **known))
    )


SIZE_BAD = Check("size", False, "bytes differ")
MALFORMED = {
    "Check.name": (lambda: Check("", True), "Check.name: a check has a name"),
    "Check.passed": (lambda: Check("rows", 1), "Check.passed: 1 is not true or false"),  # type: ignore[arg-type]
    "Check.name, not text": (lambda: Check(7, True), "Check.name: expected a string, got int"),  # type: ignore[arg-type]
    "Check.detail": (
        lambda: Check("rows", True, "\ud800"),
        "Check.detail: string holds a lone surrogate",
    ),
    "Transition.plan": (
        lambda: Transition("plan", _decisions()[0].transition.regions),  # type: ignore[arg-type, union-attr]
        "Transition.plan: expected an ApplyPlan",
    ),
    "Transition.regions, none": (
        lambda: _decisions()[0].transition.replace(regions=()),  # type: ignore[union-attr]
        "Transition.regions: an acceptance proves every region it covers",
    ),
    "Transition.regions, unknown": (
        lambda: _decisions()[0].transition.replace(regions=(Region(),)),  # type: ignore[union-attr]
        "Transition.regions: an acceptance proves every region it covers",
    ),
    "Transition.regions, a gap": (
        _gap,
        "Transition.regions[1]: the regions over a coverage are sorted and contiguous",
    ),
    "Receipt.manifest": (
        lambda: _decisions()[0].replace(manifest="m"),
        "Receipt.manifest: expected a Manifest",
    ),
    "Receipt.contract": (
        lambda: _decisions()[0].replace(contract="c"),
        "Receipt.contract: expected the Contract in force",
    ),
    "Receipt.checks, none": (
        lambda: _decisions()[0].replace(checks=()),
        "Receipt.checks: a decision records at least one Check",
    ),
    "Receipt.checks, not checks": (
        lambda: _decisions()[0].replace(checks=(*_decisions()[0].checks, "rows")),
        "Receipt.checks: a decision records at least one Check",
    ),
    "Receipt.outcome": (
        lambda: _decisions()[0].replace(outcome="maybe"),
        "Receipt.outcome: 'maybe' is not an outcome",
    ),
    "Receipt.received_at": (
        lambda: _decisions()[0].replace(received_at=datetime(2026, 10, 18)),
        "Receipt.received_at: naive datetime 2026-10-18T00:00:00 carries no UTC offset",
    ),
    "Receipt.source": (
        lambda: _decisions()[0].replace(source=3),
        "Receipt.source: expected a string, got int",
    ),
    "Receipt.base_publication_id": (
        lambda: _decisions()[0].replace(base_publication_id="x"),
        "Receipt.base_publication_id: 'x' is neither a chain head nor the genesis 'None'",
    ),
    "Receipt.publication_id": (
        lambda: _decisions()[1].replace(publication_id="y"),
        "Receipt.publication_id: 'y' is neither a chain head nor the genesis 'None'",
    ),
    "Receipt.ledger_identity": (
        lambda: _decisions()[0].replace(ledger_identity="z"),
        "Receipt.ledger_identity: 'z' is not an identity",
    ),
    "an acceptance with failed checks": (
        lambda: _decisions()[0].replace(checks=(*_decisions()[0].checks, ROWS_BAD, SIZE_BAD)),
        "Receipt.outcome: accepted, but check(s) rows, size failed",
    ),
    "an acceptance without its transition": (
        lambda: _decisions()[0].replace(transition=None),
        "Receipt.transition: an accepted receipt carries its Transition",
    ),
    "a rejection without a failed check": (
        lambda: _decisions()[1].replace(checks=_decisions()[0].checks),
        "Receipt.outcome: a rejection names at least one failed check",
    ),
    "a rejection with a transition": (
        lambda: _decisions()[1].replace(transition=_decisions()[0].transition),
        "Receipt.transition: a rejection changes nothing, so it has no transition",
    ),
    "a rejection moving the publication": (
        lambda: _decisions()[1].replace(publication_id=_decisions()[0].publication_id),
        "Receipt.publication_id: a rejection leaves the publication as it was",
    ),
    "a replay of a rejection": (
        lambda: _decisions()[1].replay(),
        "Receipt.replay: only an acceptance is replayed, this is rejected",
    ),
    "a replay of a replay": (
        lambda: _decisions()[0].replay().replay(),
        "Receipt.replay: only an acceptance is replayed, this is replayed",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_decision_is_refused_naming_the_field(case: str) -> None:
    build, message = MALFORMED[case]
    with pytest.raises(InvalidContract) as refused:
        build()
    assert str(refused.value) == message


def test_an_acceptance_names_the_head_its_chain_step_gives() -> None:
    accepted, _ = _decisions()
    monday = full(MONDAY)
    with pytest.raises(InvalidContract) as refused:
        accepted.replace(manifest=monday)
    assert str(refused.value) == (
        f"Receipt.publication_id: {accepted.publication_id} does not extend None with this "
        f"contract and manifest (expected {chain_of('None', ORDERS, monday)})"
    )


def test_a_receipt_filed_under_the_contracts_table_lists_its_failed_checks() -> None:
    _, rejected = _decisions()
    assert rejected.table == "orders"
    assert rejected.failed == (ROWS_BAD,)
    assert not rejected.accepted and not rejected.replayed
