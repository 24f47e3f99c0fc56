"""The publication chain, Ledger.follow, Ledger.from_receipts and Contract evolution.

The ledger is the fold of the accepted receipts in order; each receipt's ledger_identity checks
one step. Missing, reordered or foreign receipts raise InconsistentPublication.
"""

from __future__ import annotations

import hashlib

import pytest
from ledger_fixtures import FEED, HOUR, MONDAY, ORDERS, SUNDAY, day, make

from dogana_core import Contract, InconsistentPublication, InvalidContract, Shape
from dogana_core.gate import Check, Gate, Receipt
from dogana_core.ledger import GENESIS, Ledger, chain

BAD = Check("rows", False, "count differs")


def history() -> tuple[list[Receipt], list[Ledger]]:
    """Three acceptances and a rejection between them, with the ledger after each step."""
    manifests = [
        make(ORDERS, "full", SUNDAY),
        make(ORDERS, "day", SUNDAY + HOUR, window=(day(2), day(3))),
        make(ORDERS, "changes", MONDAY, since=SUNDAY),
    ]
    ledger = Ledger.new(ORDERS)
    receipts, ledgers = [], [ledger]
    for n, manifest in enumerate(manifests):
        if n == 1:
            receipts.append(Gate.evaluate(ledger, manifest, (BAD,), now=MONDAY))
        receipt = Gate.evaluate(ledger, manifest, now=MONDAY)
        assert receipt.accepted
        receipts.append(receipt)
        ledger = ledger.apply(manifest)
        ledgers.append(ledger)
    return receipts, ledgers


def accepted(receipts: list[Receipt]) -> list[Receipt]:
    return [receipt for receipt in receipts if receipt.accepted]


# The chain ---------------------------------------------------------------------------------------


def test_chain_is_sha256_of_previous_contract_and_manifest_identities() -> None:
    manifest = make(ORDERS, "full", SUNDAY)
    first = chain(None, ORDERS, manifest)
    text = f"None:{ORDERS.identity}:{manifest.identity}"
    assert first == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert GENESIS == "None"
    assert (
        chain(first, ORDERS, manifest)
        == hashlib.sha256(f"{first}:{ORDERS.identity}:{manifest.identity}".encode()).hexdigest()
    )


def test_every_contract_change_alters_the_chain() -> None:
    cheaper = ORDERS.replace(
        shapes=(*ORDERS.shapes[:-1], ("tombstones", Shape.changes(tombstones=True, cost=2)))
    )
    manifest = make(ORDERS, "full", SUNDAY)
    assert Ledger.new(ORDERS).apply(manifest).publication_id != (
        Ledger.new(cheaper).apply(manifest).publication_id
    )


# follow ------------------------------------------------------------------------------------------


def test_follow_applies_one_accepted_receipt() -> None:
    receipts, ledgers = history()
    ledger = Ledger.new(ORDERS)
    for receipt, expected in zip(accepted(receipts), ledgers[1:], strict=True):
        ledger = ledger.follow(receipt)
        assert ledger == expected


def test_follow_refuses_a_rejection() -> None:
    receipts, ledgers = history()
    rejection = next(receipt for receipt in receipts if not receipt.accepted)
    with pytest.raises(
        InconsistentPublication,
        match=r"^a rejected receipt is not a step of the chain: only acceptances are followed "
        r"\(rejections change nothing; a replay repeats an acceptance already followed\)$",
    ):
        ledgers[1].follow(rejection)


def test_follow_refuses_a_replay_of_an_acceptance_already_followed() -> None:
    receipts, ledgers = history()
    with pytest.raises(InconsistentPublication, match="replay"):
        ledgers[1].follow(receipts[0].replay())


def test_follow_refuses_a_missing_receipt() -> None:
    receipts, _ = history()
    first, _, third = accepted(receipts)
    with pytest.raises(
        InconsistentPublication,
        match=f"^receipt builds on publication {third.base_publication_id}, but the head is "
        f"{first.publication_id}: a receipt is missing or out of order$",
    ):
        Ledger.new(ORDERS).follow(first).follow(third)


def test_follow_refuses_a_foreign_receipt() -> None:
    receipts, _ = history()
    with pytest.raises(InconsistentPublication, match="foreign"):
        Ledger.new(FEED).follow(receipts[0])


def test_follow_checks_the_ledger_the_receipt_names() -> None:
    receipts, ledgers = history()
    tampered = receipts[0].replace(ledger_identity=ledgers[0].identity)
    with pytest.raises(InconsistentPublication, match="names ledger"):
        Ledger.new(ORDERS).follow(tampered)


def test_follow_refuses_a_receipt_the_ledger_would_not_admit() -> None:
    # A receipt forged with a valid chain step whose manifest the ledger refuses.
    changes = make(ORDERS, "changes", MONDAY, since=SUNDAY)
    forged = Gate.evaluate(Ledger.new(ORDERS), make(ORDERS, "full", SUNDAY), now=MONDAY)
    forged = Receipt(
        changes,
        ORDERS,
        forged.checks,
        forged.outcome,
        forged.received_at,
        base_publication_id="None",
        publication_id=chain(None, ORDERS, changes),
        ledger_identity=forged.ledger_identity,
        transition=forged.transition,
    )
    with pytest.raises(InconsistentPublication, match=r"does not apply.*Transitions 3"):
        Ledger.new(ORDERS).follow(forged)


def test_follow_refuses_a_receipt_whose_contract_changes_a_fixed_field() -> None:
    # Contract evolution: once the table has history its key is fixed, so a receipt filed under a
    # rekeyed contract does not continue the chain, whatever its steps say.
    _, ledgers = history()
    rekeyed = ORDERS.replace(key=("id", "updated_at"))
    manifest = make(rekeyed, "changes", MONDAY + HOUR, since=SUNDAY)
    step = Gate.evaluate(ledgers[1].with_contract(ORDERS), manifest, now=MONDAY + HOUR)
    forged = step.replace(
        contract=rekeyed, publication_id=chain(step.base_publication_id, rekeyed, manifest)
    )
    with pytest.raises(
        InconsistentPublication,
        match=r"^receipt's contract cannot follow the ledger's: Ledger.with_contract: key, "
        r"key types cannot change once table orders has history \(Contract evolution\)$",
    ):
        ledgers[1].follow(forged)


# from_receipts -----------------------------------------------------------------------------------


def test_from_receipts_folds_accepted_receipts_and_ignores_rejections() -> None:
    receipts, ledgers = history()
    assert len(receipts) == 4
    assert Ledger.from_receipts(ORDERS, receipts) == ledgers[-1]


def test_from_receipts_of_no_history_is_a_new_ledger() -> None:
    assert Ledger.from_receipts(ORDERS, []) == Ledger.new(ORDERS)
    only_rejections = [
        Gate.evaluate(Ledger.new(ORDERS), make(ORDERS, "full", SUNDAY), (BAD,), now=SUNDAY)
    ]
    assert Ledger.from_receipts(ORDERS, only_rejections) == Ledger.new(ORDERS)


def test_from_receipts_refuses_missing_receipts() -> None:
    receipts, _ = history()
    with pytest.raises(InconsistentPublication, match=r"receipts\[1\].*missing or out of order"):
        Ledger.from_receipts(ORDERS, [receipts[0], receipts[3]])


def test_from_receipts_refuses_reordered_receipts() -> None:
    receipts, _ = history()
    with pytest.raises(InconsistentPublication, match="missing or out of order"):
        Ledger.from_receipts(ORDERS, [receipts[0], receipts[3], receipts[2]])


def test_from_receipts_refuses_foreign_receipts_rejections_included() -> None:
    receipts, _ = history()
    foreign = Gate.evaluate(Ledger.new(FEED), make(FEED, "full", SUNDAY), (BAD,), now=SUNDAY)
    with pytest.raises(InconsistentPublication, match="foreign"):
        Ledger.from_receipts(ORDERS, [*receipts, foreign])


def test_from_receipts_uses_each_receipts_contract_then_the_requested_one() -> None:
    cheaper = ORDERS.replace(shapes=(("full", Shape.complete(cost=5)), *ORDERS.shapes[1:]))
    ledger = Ledger.new(ORDERS)
    first = Gate.evaluate(ledger, make(ORDERS, "full", SUNDAY), now=SUNDAY)
    ledger = ledger.follow(first).with_contract(cheaper)
    second = Gate.evaluate(
        ledger, make(cheaper, "day", MONDAY, window=(day(1), day(1))), now=MONDAY
    )
    assert second.contract == cheaper
    rebuilt = Ledger.from_receipts(ORDERS, [first, second])
    assert rebuilt.contract == ORDERS
    assert rebuilt.regions == ledger.follow(second).regions
    assert rebuilt.publication_id == second.publication_id


def test_from_receipts_refuses_a_requested_contract_changing_a_fixed_field() -> None:
    receipts, _ = history()
    rekeyed = ORDERS.replace(key=("id", "order_date"))
    with pytest.raises(InvalidContract, match="key"):
        Ledger.from_receipts(rekeyed, receipts)


# Contract evolution ------------------------------------------------------------------------------


def _with_types(contract: Contract, **types: str) -> Contract:
    return contract.replace(types=tuple({**dict(contract.types), **types}.items()))


FIXED_CHANGES = {
    "table": lambda: ORDERS.replace(table="orders_v2"),
    "key": lambda: ORDERS.replace(key=("id", "updated_at")),
    "window_column": lambda: ORDERS.replace(
        window_column="shipped_on",
        types=(
            ("id", "int"),
            ("is_deleted", "bool"),
            ("shipped_on", "date"),
            ("updated_at", "datetime"),
        ),
    ),
    "deleted_column": lambda: ORDERS.replace(
        deleted_column="removed",
        types=(
            ("id", "int"),
            ("order_date", "date"),
            ("removed", "bool"),
            ("updated_at", "datetime"),
        ),
    ),
    "key types": lambda: _with_types(ORDERS, id="str"),
    "window type": lambda: _with_types(ORDERS, order_date="datetime"),
}


@pytest.mark.parametrize("field", list(FIXED_CHANGES))
def test_with_contract_refuses_a_change_to_a_fixed_field_once_the_table_has_history(
    field: str,
) -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "full", SUNDAY))
    changed = FIXED_CHANGES[field]()
    # The field is named as the spec names it (Contract evolution), and by nothing else.
    with pytest.raises(
        InvalidContract, match=rf"^Ledger\.with_contract: {field}(, key types)? cannot change once"
    ):
        ledger.with_contract(changed)


def test_with_contract_names_every_fixed_field_it_refuses() -> None:
    ledger = Ledger.new(ORDERS).apply(make(ORDERS, "full", SUNDAY))
    with pytest.raises(
        InvalidContract,
        match=r"^Ledger.with_contract: key, key types cannot change once table orders has "
        r"history \(Contract evolution\)$",
    ):
        ledger.with_contract(ORDERS.replace(key=("id", "updated_at")))


def test_with_contract_takes_a_contract() -> None:
    with pytest.raises(
        InvalidContract, match=r"^Ledger\.with_contract: expected a Contract, got str$"
    ):
        Ledger.new(ORDERS).with_contract("orders")  # type: ignore[arg-type]


@pytest.mark.parametrize("field", list(FIXED_CHANGES))
def test_with_contract_accepts_any_contract_before_history(field: str) -> None:
    changed = FIXED_CHANGES[field]()
    assert Ledger.new(ORDERS).with_contract(changed) == Ledger.new(changed)


def test_with_contract_keeps_regions_generation_and_head() -> None:
    ledger = Ledger.new(FEED).apply(make(FEED, "full", SUNDAY, generation="g1"))
    ledger = ledger.apply(make(FEED, "day", MONDAY, window=(day(2), day(2))))
    evolved_contract = FEED.replace(
        shapes=(*FEED.shapes, ("recent", Shape.changes(window=True, window_size=None))),
        cursor_column="changed_at",
        types=(*FEED.types, ("changed_at", "datetime")),
        schema_hash="c" * 64,
    )
    evolved = ledger.with_contract(evolved_contract)
    assert evolved.contract == evolved_contract
    assert evolved.regions == ledger.regions
    assert evolved.generation == "g1"
    assert evolved.publication_id == ledger.publication_id


def test_a_rebuilt_ledger_equals_the_stored_one_only_when_it_is_the_fold() -> None:
    receipts, ledgers = history()
    stored = ledgers[-1]
    assert Ledger.from_receipts(ORDERS, receipts).identity == stored.identity
    assert Ledger.from_receipts(ORDERS, receipts[:2]).identity != stored.identity
