"""Tables together: Group, Group.claims, Group.apply, replay, plan_together, reaching (p, p)."""

from __future__ import annotations

import hashlib
import inspect
from datetime import datetime, timedelta
from typing import Any

import pytest
from planning_fixtures import (
    EVENTS,
    HOUR,
    MICROSECOND,
    NO_LIMIT,
    ORDERS,
    at,
    day,
    fulfil,
    log,
    orders,
)

from dogana_core import Contract, InvalidContract, Manifest, PlanningError, Shape
from dogana_core.gate import Check, Gate, Outcome, Receipt
from dogana_core.group import (
    TOGETHER,
    Group,
    check_disjoint,
    plan_together,
    recorded_digest,
    together_digest,
)
from dogana_core.ledger import Ledger
from dogana_core.planner import ExtractionRequest

INVOICES = Contract(
    "invoices",
    ("id",),
    {
        "full": Shape.complete(cost=10),
        "changes": Shape.changes(tombstones=True, cost=1),
        "quick": Shape.changes(cost=0),
    },
    cursor_column="updated_at",
    deleted_column="deleted",
    types={"id": "int", "updated_at": "datetime", "deleted": "bool"},
)
LINES = log("lines")


def full(contract: Contract, t: object, **fields: object) -> Manifest:
    return contract.manifest("full", t, **fields)  # type: ignore[arg-type]


def ledgers_at(t: object, *contracts: Contract) -> dict[str, Ledger]:
    """Each table after one complete whole-table read at t (sequence tables issue 10)."""
    out = {}
    for contract in contracts:
        position = 10 if contract.position_type is int else None
        out[contract.table] = Ledger.new(contract).apply(full(contract, t, generation=position))
    return out


def follow(ledgers: dict[str, Ledger], receipts: tuple[Receipt, ...]) -> dict[str, Ledger]:
    return {r.table: ledgers[r.table].follow(r) for r in receipts}


# Group -------------------------------------------------------------------------------------------


def test_a_group_names_each_table_once_whatever_its_letter_case() -> None:
    shouting = Contract("INVOICES", ("id",), {"full": Shape()}, types={"id": "int"})
    with pytest.raises(InvalidContract) as refused:
        Group([INVOICES, shouting])
    assert str(refused.value) == (
        "Group.contracts: table 'INVOICES' is named twice (as 'invoices'); a group names each "
        "table once whatever its letter case"
    )
    assert Group([INVOICES, LINES]).contracts == (INVOICES, LINES)
    with pytest.raises(InvalidContract, match="at least one table"):
        Group([])


@pytest.mark.parametrize(
    ("contracts", "message"),
    [
        (INVOICES, "Group.contracts: expected the contracts of the tables"),
        (5, "Group.contracts: expected the contracts of the tables"),
        ([], "Group.contracts: a group names at least one table"),
        ([INVOICES, "lines"], "Group.contracts: expected Contract values, got str"),
    ],
)
def test_a_group_is_built_from_the_contracts_of_its_tables(contracts: Any, message: str) -> None:
    with pytest.raises(InvalidContract) as refused:
        Group(contracts)
    assert str(refused.value) == message


def test_a_group_finds_its_tables_in_any_letter_case() -> None:
    group = Group([INVOICES, LINES])
    assert group.contract("Invoices") is INVOICES
    assert "LINES" in group and "orders" not in group
    with pytest.raises(InvalidContract, match="not in the group"):
        group.contract("orders")


def test_a_group_iterates_its_tables_in_its_order() -> None:
    assert list(Group([LINES, INVOICES])) == ["lines", "invoices"]
    assert len(Group([LINES, INVOICES])) == 2


def test_a_table_belongs_to_one_group() -> None:
    check_disjoint([Group([INVOICES, LINES]), Group([ORDERS])])
    shouting = Contract("LINES", ("id",), {"full": Shape()}, types={"id": "int"})
    with pytest.raises(InvalidContract) as refused:
        check_disjoint([Group([INVOICES, LINES]), Group([ORDERS, shouting])])
    assert str(refused.value) == (
        "groups[1]: table 'LINES' already belongs to groups[0] (as 'lines'); a table belongs to "
        "one group"
    )


def test_the_exactness_premise_is_stated_where_a_user_meets_it() -> None:
    """One consistent read of the source: the docstrings name how to get one per database."""
    import dogana_core.group as module

    for documented in (module, Group, plan_together, ExtractionRequest):
        text = " ".join((inspect.getdoc(documented) or "").split())
        assert "REPEATABLE READ" in text, documented
        assert "READ COMMITTED" in text or documented is plan_together, documented
    for documented in (module, Group, plan_together):
        text = " ".join((inspect.getdoc(documented) or "").split())
        assert "CONSISTENT SNAPSHOT" in text and "exported snapshot" in text, documented


# Group.claims ------------------------------------------------------------------------------------


def test_group_claims_hold_every_tables_regions_with_minima_across_tables() -> None:
    group = Group([INVOICES, ORDERS])
    ledgers = {
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(5))),
        "orders": Ledger.new(ORDERS)
        .apply(full(ORDERS, at(2)))
        .apply(ORDERS.manifest("days", at(8), window=(day(1), day(3)))),
    }
    claims = group.claims(ledgers, at(9), limit=NO_LIMIT)
    assert {region.table for region in claims.regions} == {"invoices", "orders"}
    assert len(claims.regions) == 4
    assert (claims.complete_as_of, claims.deletions_as_of) == (at(2), at(2))
    assert claims.exact_as_of is None


def test_group_claims_cut_each_table_to_its_window() -> None:
    group = Group([INVOICES, ORDERS])
    ledgers = {
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(8))),
        "orders": Ledger.new(ORDERS)
        .apply(full(ORDERS, at(2)))
        .apply(ORDERS.manifest("days", at(8), window=(day(1), day(3)))),
    }
    claims = group.claims(ledgers, at(9), limit=NO_LIMIT, windows={"ORDERS": (day(2), day(3))})
    orders_regions = [r for r in claims.regions if r.table == "orders"]
    assert [(r.low, r.high) for r in orders_regions] == [(day(2), day(4))]
    assert claims.exact_as_of == at(8)


def test_group_claims_state_expiry_at_the_readers_now() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(0), INVOICES, LINES)
    assert group.claims(ledgers, at(5), limit=HOUR).state == "expired"
    assert group.claims(ledgers, at(5), limit=5 * HOUR).state == "complete"
    # Freshness does not affect exactness.
    assert group.claims(ledgers, at(5), limit=HOUR).exact_as_of == at(0)


def test_equal_table_dates_do_not_make_a_common_instant() -> None:
    """Minima are lower bounds: a window proven later than the rest of its table gives equal
    minima across tables and no common instant."""
    group = Group([INVOICES, ORDERS])
    ledgers = {
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(2))),
        "orders": Ledger.new(ORDERS)
        .apply(full(ORDERS, at(2)))
        .apply(ORDERS.manifest("days", at(8), window=(day(1), day(3)))),
    }
    claims = group.claims(ledgers, at(9), limit=NO_LIMIT)
    assert (claims.complete_as_of, claims.deletions_as_of) == (at(2), at(2))
    assert claims.exact_as_of is None


def test_group_arguments_need_one_ledger_per_table() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(0), INVOICES, LINES)
    with pytest.raises(InvalidContract, match="one ledger per table"):
        group.claims({"invoices": ledgers["invoices"]}, at(1), limit=NO_LIMIT)
    with pytest.raises(InvalidContract, match="not in the group"):
        group.claims({**ledgers, "orders": Ledger.new(ORDERS)}, at(1), limit=NO_LIMIT)
    with pytest.raises(InvalidContract, match="not of 'lines'"):
        group.claims(
            {"invoices": ledgers["invoices"], "lines": ledgers["invoices"]}, at(1), limit=NO_LIMIT
        )
    # An iterable of ledgers is matched by the table each one names.
    assert group.claims(list(ledgers.values()), at(1), limit=NO_LIMIT).exact_as_of == at(0)
    for neither in ("invoices", 5):
        with pytest.raises(InvalidContract) as refused:
            group.claims(neither, at(1), limit=NO_LIMIT)  # type: ignore[arg-type]
        assert str(refused.value) == "Group ledgers: expected a mapping or an iterable"
    with pytest.raises(InvalidContract) as refused:
        group.claims([ledgers["invoices"], "lines"], at(1), limit=NO_LIMIT)  # type: ignore[list-item]
    assert str(refused.value) == "Group ledgers: expected Ledger values, got str"


def test_group_claims_arguments_are_refused_naming_the_argument() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(0), INVOICES, LINES)
    both = (day(1), day(2))
    refusals = [
        (
            {"now": datetime(2026, 1, 1)},
            "Group.claims now: naive datetime 2026-01-01T00:00:00 carries no UTC offset",
        ),
        ({"ledgers": {5: 1}}, "Group ledgers: keys are table names, got 5"),
        (
            {"ledgers": {"invoices": ledgers["invoices"]}},
            "Group ledgers: one ledger per table; missing ['lines']",
        ),
        (
            {"ledgers": [ledgers["invoices"]]},
            "Group ledgers: one ledger per table; missing ['lines']",
        ),
        (
            {"ledgers": {"invoices": "x", "lines": "y"}},
            "Group ledgers['invoices']: expected a Ledger, got str",
        ),
        ({"windows": [1]}, "Group windows: expected a mapping from table name"),
        (
            {"windows": {"invoices": both}},
            "Group windows['invoices']: table 'invoices' has no window column; ask for the whole "
            "table",
        ),
        (
            {"windows": {"invoices": both, "Invoices": both}},
            "Group windows: table 'invoices' is named twice (letter case aside)",
        ),
    ]
    for changes, message in refusals:
        arguments: dict[str, Any] = {"ledgers": ledgers, "now": at(1), **changes}
        with pytest.raises(InvalidContract) as refused:
            group.claims(
                arguments.pop("ledgers"), arguments.pop("now"), limit=NO_LIMIT, **arguments
            )
        assert str(refused.value) == message


# Group.apply -------------------------------------------------------------------------------------


def group_delivery(t: object) -> tuple[Group, dict[str, Ledger], dict[str, Manifest]]:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(0), INVOICES, LINES)
    manifests = {
        "invoices": INVOICES.manifest("changes", t, since=at(0), rows=2),  # type: ignore[arg-type]
        "lines": LINES.manifest("log", t, since=10, generation=12, rows=2),  # type: ignore[arg-type]
    }
    return group, ledgers, manifests


def test_together_passes_with_one_produced_at_and_every_table_accepted_alone() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    assert [r.outcome for r in receipts] == [Outcome.ACCEPTED, Outcome.ACCEPTED]
    assert [r.table for r in receipts] == ["invoices", "lines"]
    for receipt in receipts:
        assert receipt.checks[-1].name == "together" and receipt.checks[-1].passed
    assert group.claims(follow(ledgers, receipts), at(6), limit=NO_LIMIT).exact_as_of == at(5)


def test_each_table_is_decided_alone_as_gate_evaluate_does() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    for receipt in receipts:
        alone = Gate.evaluate(ledgers[receipt.table], manifests[receipt.table], now=at(6))
        assert receipt.checks[: len(alone.checks)] == alone.checks
        assert receipt.ledger_identity == alone.ledger_identity


def test_together_fails_when_the_produced_at_differ_and_rejects_every_table() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    manifests["lines"] = LINES.manifest("log", at(5) + MICROSECOND, since=10, generation=12)
    receipts = group.apply(ledgers, manifests, now=at(6))
    assert [r.outcome for r in receipts] == [Outcome.REJECTED, Outcome.REJECTED]
    for receipt in receipts:
        assert [c.name for c in receipt.failed] == ["together"]
        assert "produced_at differ" in receipt.failed[0].detail
        assert receipt.publication_id == ledgers[receipt.table].head


def test_one_rejected_table_rejects_every_table() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    outcomes = {"LINES": [Check("keys_unique", False, "key 7 twice")]}
    receipts = group.apply(ledgers, manifests, now=at(6), outcomes=outcomes)
    invoices, lines = receipts
    assert not invoices.accepted and not lines.accepted
    assert [c.name for c in invoices.failed] == ["together"]
    assert [c.name for c in lines.failed] == ["keys_unique", "together"]
    assert "table lines is rejected alone (keys_unique)" in invoices.failed[0].detail


def test_a_failed_together_check_names_every_problem_and_digests_every_manifest() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    manifests["lines"] = LINES.manifest("log", at(5) + MICROSECOND, since=10, generation=12)
    outcomes = {"lines": [Check("keys_unique", False), Check("rows", False)]}
    invoices, _ = group.apply(ledgers, manifests, now=at(6), outcomes=outcomes)
    assert invoices.failed[0].detail == (
        "not together: the manifests' produced_at differ (invoices "
        f"{at(5).isoformat()}, lines {(at(5) + MICROSECOND).isoformat()}); table lines is "
        f"rejected alone (keys_unique, rows); digest {together_digest(manifests.values())}"
    )


def test_the_together_digest_is_sha256_of_the_sorted_identities_joined_by_colons() -> None:
    _, _, manifests = group_delivery(at(5))
    joined = ":".join(sorted(m.identity for m in manifests.values()))
    assert together_digest(manifests.values()) == hashlib.sha256(joined.encode()).hexdigest()


def test_group_apply_arguments_are_refused_naming_the_argument() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    refusals = [
        (
            {"now": datetime(2026, 1, 1)},
            "Group.apply now: naive datetime 2026-01-01T00:00:00 carries no UTC offset",
        ),
        ({"outcomes": [1]}, "Group outcomes: expected a mapping from table name"),
        ({"sources": [1]}, "Group sources: expected a mapping from table name"),
        ({"manifests": {5: 1}}, "Group manifests: keys are table names, got 5"),
        (
            {"manifests": {"invoices": "x", "lines": "y"}},
            "Group manifests['invoices']: expected a Manifest, got str",
        ),
        (
            {"manifests": {}},
            "Group manifests: one manifest per table; missing ['invoices', 'lines']",
        ),
        ({"manifests": ["x"]}, "Group manifests: expected Manifest values, got str"),
    ]
    for changes, message in refusals:
        arguments: dict[str, Any] = {"manifests": manifests, "now": at(6), **changes}
        with pytest.raises(InvalidContract) as refused:
            group.apply(ledgers, **arguments)
        assert str(refused.value) == message


def test_a_transition_refused_for_one_table_rejects_every_table() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    manifests["lines"] = LINES.manifest("log", at(5), since=11, generation=12)  # skips 10..11
    receipts = group.apply(ledgers, manifests, now=at(6))
    assert not any(r.accepted for r in receipts)
    assert [c.name for c in receipts[1].failed] == ["transition", "together"]


def test_the_receivers_time_applies_to_every_table() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(4))
    assert not any(r.accepted for r in receipts)
    assert [c.name for c in receipts[0].failed] == ["receiver_time", "together"]


def test_the_together_detail_digests_every_manifest_identity() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    digest = together_digest(manifests.values())
    assert all(recorded_digest(r) == digest for r in receipts)
    assert digest == together_digest(reversed(list(manifests.values())))  # order-free
    other = dict(manifests, lines=LINES.manifest("log", at(5), since=10, generation=13, rows=2))
    assert together_digest(other.values()) != digest
    # A rejection carries the digest too, but records no group acceptance.
    rejected = group.apply(ledgers, manifests, now=at(4))
    assert all(digest in r.checks[-1].detail for r in rejected)
    assert all(recorded_digest(r) is None for r in rejected)


def test_group_apply_passes_sources_and_outcomes_to_their_tables() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    outcomes = {"invoices": [Check("rows", True, "2 live rows")]}
    sources = {"lines": "s3://drop/lines.parquet"}
    invoices, lines = group.apply(ledgers, manifests, now=at(6), outcomes=outcomes, sources=sources)
    assert [c.name for c in invoices.checks] == [
        "manifest",
        "receiver_time",
        "transition",
        "rows",
        "together",
    ]
    assert (invoices.source, lines.source) == (None, "s3://drop/lines.parquet")


def test_group_apply_needs_one_manifest_per_table() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    with pytest.raises(InvalidContract, match="one manifest per table"):
        group.apply(ledgers, {"invoices": manifests["invoices"]}, now=at(6))
    with pytest.raises(InvalidContract, match="one per table"):
        group.apply(ledgers, [manifests["invoices"], manifests["invoices"]], now=at(6))
    with pytest.raises(InvalidContract, match="not in the group"):
        group.apply(ledgers, manifests, now=at(6), outcomes={"orders": []})
    # A list of manifests is matched by the table each names.
    receipts = group.apply(ledgers, list(manifests.values()), now=at(6))
    assert all(r.accepted for r in receipts)


def test_a_manifest_naming_another_table_is_filed_under_its_place_and_rejects_the_group() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    manifests["lines"] = Manifest("orders", "full", at(5))
    invoices, lines = group.apply(ledgers, manifests, now=at(6))
    assert lines.table == "lines" and not lines.accepted
    assert lines.failed[0].name == "manifest"
    assert not invoices.accepted


# Replay ------------------------------------------------------------------------------------------


def test_a_group_accepted_together_replays_whole() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    answer = group.replay(manifests, receipts)
    assert answer is not None
    assert [r.outcome for r in answer] == [Outcome.REPLAYED, Outcome.REPLAYED]
    assert [r.identity for r in answer] == [r.identity for r in receipts]
    # Found among every receipt the receiver keeps, in any order.
    unrelated = Gate.reject(
        ledgers["invoices"], manifests["invoices"], [Check("x", False)], now=at(6)
    )
    answer = group.replay(list(manifests.values()), [unrelated, *reversed(receipts)])
    assert answer is not None and [r.table for r in answer] == ["invoices", "lines"]


def test_replay_passes_over_receipts_of_other_tables_and_other_manifests() -> None:
    """recorded may be any superset of the receipts that matter."""
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    elsewhere = Gate.evaluate(Ledger.new(ORDERS), full(ORDERS, at(5)), now=at(6))
    earlier = manifests["invoices"].replace(rows=3)
    another = Gate.evaluate(ledgers["invoices"], earlier, now=at(6))
    assert elsewhere.accepted and another.accepted
    answer = group.replay(manifests, [elsewhere, another, *receipts])
    assert answer is not None and [r.table for r in answer] == ["invoices", "lines"]


def test_replay_takes_receipts_only() -> None:
    group, _, manifests = group_delivery(at(5))
    with pytest.raises(InvalidContract) as refused:
        group.replay(manifests, ["invoices"])  # type: ignore[list-item]
    assert str(refused.value) == "Group.replay: expected Receipt values, got str"


def test_a_manifest_accepted_alone_is_a_new_decision() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    alone = [Gate.evaluate(ledgers[t], m, now=at(6)) for t, m in manifests.items()]
    assert all(r.accepted for r in alone)
    assert group.replay(manifests, alone) is None


def test_a_receiver_check_named_together_cannot_pass_for_a_group_acceptance() -> None:
    """together is a core check's name: a receipt accepted alone cannot carry it."""
    _, ledgers, manifests = group_delivery(at(5))
    forged = Check(TOGETHER, True, f"digest {together_digest(manifests.values())}")
    for table, manifest in manifests.items():
        with pytest.raises(InvalidContract, match="core check"):
            Gate.evaluate(ledgers[table], manifest, (forged,), now=at(6))


def test_a_group_with_another_companion_is_a_new_decision() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    other = dict(manifests, lines=LINES.manifest("log", at(5), since=10, generation=13, rows=2))
    assert group.replay(other, receipts) is None


def test_a_rejected_group_is_a_new_decision() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    rejected = group.apply(ledgers, manifests, now=at(4))
    assert group.replay(manifests, rejected) is None


def test_a_group_missing_one_recorded_acceptance_is_a_new_decision() -> None:
    group, ledgers, manifests = group_delivery(at(5))
    receipts = group.apply(ledgers, manifests, now=at(6))
    assert group.replay(manifests, receipts[:1]) is None


# Reaching (p, p) ---------------------------------------------------------------------------------


def exact_after(group: Group, ledgers: dict[str, Ledger], manifests: dict[str, Manifest]) -> object:
    receipts = group.apply(ledgers, manifests, now=at(100))
    assert all(r.accepted for r in receipts), [r.failed for r in receipts]
    return group.claims(follow(ledgers, receipts), at(100), limit=NO_LIMIT).exact_as_of


def test_reaching_pp_by_a_complete_delivery() -> None:
    group = Group([INVOICES, ORDERS])
    ledgers = {
        "invoices": Ledger.new(INVOICES),
        "orders": Ledger.new(ORDERS).apply(ORDERS.manifest("days", at(1), window=(day(1), day(2)))),
    }
    manifests = {"invoices": full(INVOICES, at(5)), "orders": full(ORDERS, at(5))}
    assert exact_after(group, ledgers, manifests) == at(5)


def test_reaching_pp_by_a_keyless_append() -> None:
    group = Group([EVENTS, INVOICES])
    ledgers = {
        "events": Ledger.new(EVENTS).apply(full(EVENTS, at(1))),
        "invoices": Ledger.new(INVOICES),
    }
    manifests = {
        "events": EVENTS.manifest("append", at(5), since=at(1), rows=40),
        "invoices": full(INVOICES, at(5)),
    }
    assert exact_after(group, ledgers, manifests) == at(5)


def test_reaching_pp_by_timestamp_tombstones_with_since_no_later_than_the_deletions_date() -> None:
    group = Group([INVOICES])
    patched = (
        Ledger.new(INVOICES)
        .apply(full(INVOICES, at(1)))
        .apply(INVOICES.manifest("quick", at(3), since=at(1)))
    )
    assert (patched.regions[0].complete_as_of, patched.regions[0].deletions_as_of) == (at(3), at(1))
    on_time = {"invoices": INVOICES.manifest("changes", at(5), since=at(1), rows=1, tombstones=1)}
    assert exact_after(group, {"invoices": patched}, on_time) == at(5)
    too_late = {"invoices": INVOICES.manifest("changes", at(5), since=at(2), rows=1, tombstones=1)}
    assert exact_after(group, {"invoices": patched}, too_late) is None


def test_reaching_pp_by_generation_tombstones_when_both_dates_were_equal() -> None:
    contract = Contract(
        "customers",
        ("id",),
        {
            "full": Shape.complete(),
            "feed": Shape.changes(checkpoint="generation", tombstones=True),
            "quick": Shape.changes(checkpoint="generation"),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    group = Group([contract])
    equal = Ledger.new(contract).apply(full(contract, at(1), generation="g1"))
    tombstones = contract.manifest("feed", at(5), since="g1", generation="g2", tombstones=2)
    assert exact_after(group, {"customers": equal}, {"customers": tombstones}) == at(5)
    patched = equal.apply(contract.manifest("quick", at(3), since="g1", generation="g2"))
    tombstones = contract.manifest("feed", at(5), since="g2", generation="g3", tombstones=2)
    assert exact_after(group, {"customers": patched}, {"customers": tombstones}) is None


def test_reaching_pp_by_sequence_tombstones_when_both_dates_were_equal() -> None:
    contract = Contract(
        "lines",
        ("id",),
        {
            "full": Shape.complete(),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
            "quick": Shape.changes(checkpoint="sequence"),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    group = Group([contract])
    equal = Ledger.new(contract).apply(full(contract, at(1), generation=10))
    tombstones = contract.manifest("log", at(5), since=10, generation=15, rows=3, tombstones=2)
    assert exact_after(group, {"lines": equal}, {"lines": tombstones}) == at(5)
    patched = equal.apply(contract.manifest("quick", at(3), since=10, generation=12, rows=1))
    tombstones = contract.manifest("log", at(5), since=12, generation=15, rows=3, tombstones=2)
    assert exact_after(group, {"lines": patched}, {"lines": tombstones}) is None


def test_reaching_pp_by_an_empty_tombstone_read_for_a_table_without_changes() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(1), INVOICES, LINES)
    manifests = {
        "invoices": INVOICES.manifest("changes", at(5), since=at(1), rows=4, tombstones=1),
        # Nothing changed in lines: an empty read of its tombstone shape at the same instant.
        "lines": LINES.manifest("log", at(5), since=10, generation=10),
    }
    assert exact_after(group, ledgers, manifests) == at(5)


# plan_together -----------------------------------------------------------------------------------


def test_nothing_is_planned_when_the_group_is_already_exact_no_earlier_than_at_least() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(5), INVOICES, LINES)
    assert plan_together(group, ledgers, at(5)) is None
    assert plan_together(group, ledgers, at(4)) is None
    assert plan_together(group, ledgers, at(6)) is not None


def test_one_until_later_than_every_tables_evidence_and_no_earlier_than_at_least() -> None:
    group = Group([INVOICES, LINES])
    ledgers = ledgers_at(at(1), INVOICES, LINES)
    ledgers["lines"] = ledgers["lines"].apply(
        LINES.manifest("log", at(7), since=10, generation=11, rows=1)
    )
    requests = plan_together(group, ledgers, at(3))
    assert requests is not None
    assert {r.until for r in requests} == {at(7) + MICROSECOND}
    requests = plan_together(group, ledgers, at(9))
    assert requests is not None and {r.until for r in requests} == {at(9)}


def test_each_table_gets_the_cheapest_read_reaching_until_until() -> None:
    """quick (cost 0) reaches no deletions date, so invoices reads its tombstones (cost 1)."""
    group = Group([INVOICES, LINES])
    requests = plan_together(group, ledgers_at(at(1), INVOICES, LINES), at(5))
    assert requests is not None
    assert [(r.table, r.shape, r.since) for r in requests] == [
        ("invoices", "changes", at(1)),
        ("lines", "log", 10),
    ]


def test_each_read_is_the_cheapest_at_the_common_until() -> None:
    """At at_least the untouched events table can only be read whole (its history starts at
    start_at, later than at_least); invoices must read after its evidence at 8, and at that
    common until the cheap first append from start_at is admissible: it is the one planned."""
    events = EVENTS.replace(start_at=at(6))
    group = Group([events, INVOICES])
    ledgers = {
        "events": Ledger.new(events),
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(8))),
    }
    requests = plan_together(group, ledgers, at(5))
    assert requests is not None
    assert [(r.shape, r.since, r.until) for r in requests] == [
        ("append", at(6), at(8) + MICROSECOND),
        ("changes", at(8), at(8) + MICROSECOND),
    ]


def test_plan_together_starts_tombstones_no_later_than_the_deletions_date() -> None:
    group = Group([INVOICES])
    patched = (
        Ledger.new(INVOICES)
        .apply(full(INVOICES, at(1)))
        .apply(INVOICES.manifest("quick", at(3), since=at(1)))
    )
    requests = plan_together(group, {"invoices": patched}, at(5))
    assert requests is not None
    assert [(r.shape, r.since) for r in requests] == [("changes", at(1))]


def test_plan_together_plans_a_complete_read_where_a_feed_cannot_repair_deletions() -> None:
    contract = Contract(
        "customers",
        ("id",),
        {
            "full": Shape.complete(cost=10),
            "feed": Shape.changes(checkpoint="generation", tombstones=True, cost=1),
            "quick": Shape.changes(checkpoint="generation", cost=0),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    group = Group([contract])
    equal = Ledger.new(contract).apply(full(contract, at(1), generation="g1"))
    requests = plan_together(group, {"customers": equal}, at(5))
    assert requests is not None and [(r.shape, r.since) for r in requests] == [("feed", "g1")]
    patched = equal.apply(contract.manifest("quick", at(3), since="g1", generation="g2"))
    requests = plan_together(group, {"customers": patched}, at(5))
    assert requests is not None and [r.shape for r in requests] == ["full"]
    assert requests[0].issue_position


def test_plan_together_plans_at_the_earliest_boundary_a_read_reaching_until_until_admits() -> None:
    """The window is patched (4, 2), another window proven at 8. quick reads the whole table
    after 8 and keeps deletions at 2: it meets "both dates as of 2" but never (until, until).
    A window read after 4 reaches (until, until), so until is 4 and a microsecond, not 8."""
    contract = orders(
        full=Shape.complete(cost=10),
        quick=Shape.changes(cost=0),
        days=Shape.complete(window=True, cost=1),
    )
    group = Group([contract])
    window = (day(1), day(9))
    ledger = (
        Ledger.new(contract)
        .apply(full(contract, at(2)))
        .apply(contract.manifest("quick", at(4), since=at(2)))
        .apply(contract.manifest("days", at(8), window=(day(20), day(25))))
    )
    requests = plan_together(group, {"orders": ledger}, at(2), windows={"orders": window})
    assert requests is not None
    assert [(r.shape, r.window, r.until) for r in requests] == [
        ("days", window, at(4) + MICROSECOND)
    ]


def test_plan_together_respects_each_tables_window() -> None:
    group = Group([INVOICES, ORDERS])
    ledgers = {
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(1))),
        "orders": Ledger.new(ORDERS).apply(ORDERS.manifest("days", at(1), window=(day(1), day(9)))),
    }
    windows = {"orders": (day(2), day(3))}
    assert plan_together(group, ledgers, at(1), windows=windows) is None
    assert plan_together(group, ledgers, at(1)) is not None  # the whole orders table is unknown
    requests = plan_together(group, ledgers, at(4), windows=windows)
    assert requests is not None
    orders_request = next(r for r in requests if r.table == "orders")
    assert orders_request.window == (day(2), day(3))


def test_plan_together_raises_planning_error_when_a_table_cannot_become_exact() -> None:
    no_tombstones = orders(changes=Shape.changes(), days=Shape.complete(window=True))
    group = Group([INVOICES, no_tombstones])
    ledgers = {
        "invoices": Ledger.new(INVOICES).apply(full(INVOICES, at(1))),
        "orders": Ledger.new(no_tombstones).apply(
            no_tombstones.manifest("days", at(1), window=(day(1), day(9)))
        ),
    }
    with pytest.raises(PlanningError) as refused:
        plan_together(group, ledgers, at(5))
    assert str(refused.value) == (
        "plan_together: table orders: no shape of table 'orders' establishes (p, p) at a "
        "boundary p no earlier than 2026-10-18T05:00:00+00:00 over the whole table: changes: a "
        "changed-only read needs every region it covers known; one is unknown; days: a "
        "requirement on the whole table needs a whole-table shape"
    )


def test_plan_together_requests_fulfilled_in_one_snapshot_make_the_group_exact() -> None:
    group = Group([INVOICES, LINES, EVENTS])
    ledgers = ledgers_at(at(1), INVOICES, LINES, EVENTS)
    requests = plan_together(group, ledgers, at(5))
    assert requests is not None
    snapshot = timedelta(minutes=2)  # the snapshot was taken a little after until
    manifests = {r.table: fulfil(r, group.contract(r.table), late=snapshot) for r in requests}
    receipts = group.apply(ledgers, manifests, now=at(6))
    assert all(r.accepted for r in receipts)
    claims = group.claims(follow(ledgers, receipts), at(6), limit=NO_LIMIT)
    assert claims.exact_as_of == at(5) + snapshot


def test_plan_together_refuses_a_naive_at_least() -> None:
    with pytest.raises(InvalidContract) as refused:
        plan_together(Group([INVOICES]), [Ledger.new(INVOICES)], datetime(2026, 10, 18))
    assert str(refused.value) == (
        "plan_together at_least: naive datetime 2026-10-18T00:00:00 carries no UTC offset"
    )


def test_planned_requests_are_extraction_requests_in_group_order() -> None:
    group = Group([LINES, INVOICES])
    requests = plan_together(group, ledgers_at(at(1), INVOICES, LINES), at(5))
    assert requests is not None
    assert all(isinstance(r, ExtractionRequest) for r in requests)
    assert [r.table for r in requests] == ["lines", "invoices"]
