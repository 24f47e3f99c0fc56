"""`dogana fold` and `dogana claims` as installed, on receipts decided by the core's gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_fixtures import ORDERS, PRODUCED, SEPTEMBER, dogana, history, write_contract

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.ledger import Ledger
from dogana_provider.cli.common import UsageError, parse_duration


@pytest.fixture
def receipts(tmp_path: Path) -> list[Path]:
    paths = []
    for index, receipt in enumerate(history(), 1):
        path = tmp_path / f"receipt-{index}.json"
        path.write_text(receipt.to_json())
        paths.append(path)
    return paths


def test_fold_prints_the_ledger_the_receipts_prove(tmp_path: Path, receipts: list[Path]) -> None:
    contract = write_contract(tmp_path)
    result = dogana("fold", contract, *receipts, cwd=tmp_path)
    assert result.code == 0, result.err
    expected = Ledger.from_receipts(ORDERS, history())
    assert result.out.splitlines()[:4] == [
        "table orders: 3 receipts, 2 accepted, 1 rejected",
        f"  publication_id {expected.publication_id}",
        "  generation     none",
        f"  identity       {expected.identity}",
    ]
    assert result.out.splitlines()[5:] == [
        "  region                    complete_as_of        deletions_as_of",
        "  ------------------------  --------------------  --------------------",
        "  (-inf, 2026-09-01)        2026-10-18T02:00:00Z  2026-10-18T02:00:00Z",
        "  [2026-09-01, 2026-10-01)  2026-10-19T02:00:00Z  2026-10-19T02:00:00Z",
        "  [2026-10-01, +inf)        2026-10-18T02:00:00Z  2026-10-18T02:00:00Z",
    ]


def test_fold_json_is_the_ledger_from_receipts(tmp_path: Path, receipts: list[Path]) -> None:
    contract = write_contract(tmp_path)
    result = dogana("fold", contract, *receipts, "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert Ledger.from_json(result.out) == Ledger.from_receipts(ORDERS, history())


def test_fold_reads_a_json_array_of_receipts(tmp_path: Path) -> None:
    contract = write_contract(tmp_path)
    together = tmp_path / "receipts.json"
    together.write_text("[" + ",".join(r.to_json() for r in history()) + "]")
    result = dogana("fold", contract, together, "--json", cwd=tmp_path)
    assert Ledger.from_json(result.out) == Ledger.from_receipts(ORDERS, history())


def test_fold_refuses_receipts_out_of_order_naming_the_file(
    tmp_path: Path, receipts: list[Path]
) -> None:
    contract = write_contract(tmp_path)
    result = dogana("fold", contract, receipts[1], receipts[0], cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith(f"dogana fold: refused: {receipts[1]}: receipt builds on")
    assert "a receipt is missing or out of order" in result.err


def test_fold_refuses_a_receipt_that_is_not_one(tmp_path: Path, receipts: list[Path]) -> None:
    contract = write_contract(tmp_path)
    receipts[0].write_text('{"kind": "Receipt", "version": 3}')
    result = dogana("fold", contract, *receipts, cwd=tmp_path)
    assert result.code == 1
    assert result.err.startswith(f"dogana fold: refused: {receipts[0]}: ")


def test_claims_prints_each_region_at_now_with_a_limit(tmp_path: Path) -> None:
    ledger = tmp_path / "orders.ledger.json"
    ledger.write_text(Ledger.from_receipts(ORDERS, history()).to_json())
    result = dogana(
        "claims", ledger, "--now", "2026-10-20T00:00:00Z", "--limit", "36h", cwd=tmp_path
    )
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "table orders at 2026-10-20T00:00:00Z, limit 36h: expired",
        "  complete_as_of  2026-10-18T02:00:00Z",
        "  deletions_as_of 2026-10-18T02:00:00Z",
        "  exact_as_of     -",
        "",
        "  region                    complete_as_of        deletions_as_of       state",
        "  ------------------------  --------------------  --------------------  --------",
        "  (-inf, 2026-09-01)        2026-10-18T02:00:00Z  2026-10-18T02:00:00Z  expired",
        "  [2026-09-01, 2026-10-01)  2026-10-19T02:00:00Z  2026-10-19T02:00:00Z  complete",
        "  [2026-10-01, +inf)        2026-10-18T02:00:00Z  2026-10-18T02:00:00Z  expired",
    ]


def test_claims_json_over_a_window_is_the_ledgers_claims(tmp_path: Path) -> None:
    folded = Ledger.from_receipts(ORDERS, history())
    ledger = tmp_path / "orders.ledger.json"
    ledger.write_text(folded.to_json())
    result = dogana(
        "claims", ledger, "--now", "2026-10-20T00:00:00Z", "--limit", "7d",
        "--window", "2026-09-01", "2026-09-30", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    now = datetime(2026, 10, 20, tzinfo=UTC)
    expected = folded.claims(now, limit=timedelta(days=7), window=SEPTEMBER)
    assert Claims.from_json(result.out) == expected
    assert expected.exact_as_of == PRODUCED


def test_claims_refuses_a_window_whose_low_is_after_its_high_naming_the_option(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "orders.ledger.json"
    ledger.write_text(Ledger.from_receipts(ORDERS, history()).to_json())
    result = dogana(
        "claims", ledger, "--now", "2026-10-20T00:00:00Z", "--limit", "7d",
        "--window", "2026-09-30", "2026-09-01", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert f"{ledger}: --window: low 2026-09-30 is after high 2026-09-01" in result.err


def test_claims_refuses_a_window_on_a_table_without_one(tmp_path: Path) -> None:
    whole = ORDERS.replace(
        shapes={"nightly": ORDERS.shape("nightly")},
        window_column=None,
        deleted_column=None,
        types={"id": "int", "updated_at": "datetime"},
    )
    ledger = tmp_path / "ledger.json"
    ledger.write_text(Ledger.new(whole).to_json())
    result = dogana(
        "claims", ledger, "--now", "now", "--limit", "1d", "--window", "1", "2", cwd=tmp_path
    )
    assert result.code == 1
    assert f"{ledger}: --window: table orders has no window column" in result.err


@pytest.mark.parametrize("limit", ["3x", "-1h", "1.1234567", "P1M", "", "h"])
def test_claims_refuses_a_limit_that_is_not_a_duration(tmp_path: Path, limit: str) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text(Ledger.new(ORDERS).to_json())
    result = dogana("claims", ledger, "--now", "now", f"--limit={limit}", cwd=tmp_path)
    assert result.code == 2
    assert "--limit" in result.err and "is not a duration" in result.err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("36h", timedelta(hours=36)),
        ("7d", timedelta(days=7)),
        ("90m", timedelta(minutes=90)),
        ("1d12h", timedelta(hours=36)),
        ("2w", timedelta(days=14)),
        ("45s", timedelta(seconds=45)),
        ("1.5s", timedelta(seconds=1.5)),
        ("PT36H", timedelta(hours=36)),
        ("P7D", timedelta(days=7)),
        ("P1DT12H30M", timedelta(days=1, hours=12, minutes=30)),
        ("129600", timedelta(hours=36)),
        ("0.000001", timedelta(microseconds=1)),
        ("0", timedelta(0)),
        ("none", NO_LIMIT),
    ],
)
def test_durations_on_the_command_line(text: str, expected: timedelta) -> None:
    assert parse_duration(text, "--limit") == expected


def test_a_duration_is_never_rounded() -> None:
    with pytest.raises(UsageError, match="at most six decimals"):
        parse_duration("0.0000001", "--limit")
