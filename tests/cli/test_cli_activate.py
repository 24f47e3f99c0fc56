"""`dogana require-activation`, `dogana activate`, `dogana deactivate`, and the activation
`dogana status` shows beside each table's claims, on a SQLite receiver through the installed
script. What the receiver then publishes is the conformance suite's (tests/receiver)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_fixtures import ORDERS, dogana

from dogana_provider.dialects import SQLITE
from dogana_provider.receiver import Receiver

ACTIVATE = [
    "--owner",
    "Grace Hopper",
    "--authorized-by",
    "Katherine Johnson",
    "--expires",
    "30d",
    "--licence",
    "internal-use-only",
    "--purpose",
    "billing",
    "--purpose",
    "finance reporting",
    "--provenance",
    "nightly read of the ERP replica",
    "--by",
    "Ada Lovelace",
]


def receiver(path: Path, clock: datetime | None = None) -> Receiver:
    return Receiver(
        lambda: sqlite3.connect(path),
        SQLITE,
        clock=(lambda: datetime.now(UTC)) if clock is None else (lambda: clock),
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """A SQLite receiver with orders registered and never delivered; its URL."""
    path = tmp_path / "warehouse.db"
    receiver(path).register(ORDERS)
    return f"sqlite:///{path}"


def option(arguments: list[str], name: str, value: str) -> list[str]:
    """The arguments with one option's value replaced."""
    found = list(arguments)
    found[found.index(name) + 1] = value
    return found


def status_row(url: str, cwd: Path) -> str:
    result = dogana("status", url, cwd=cwd)
    assert result.code == 0, result.err
    header, _, *rows = result.out.splitlines()[1:]
    assert "activation" in [cell.strip() for cell in header.split("  ")]
    (row,) = [line for line in rows if line.startswith("orders ")]
    return row


def test_activate_makes_a_table_active_and_status_shows_it(warehouse: str, tmp_path: Path) -> None:
    assert "  not required  " in status_row(warehouse, tmp_path)
    on = dogana("require-activation", warehouse, "on", "--by", "Ada Lovelace", cwd=tmp_path)
    assert on.code == 0, on.err
    assert "  pending  " in status_row(warehouse, tmp_path)
    result = dogana("activate", warehouse, "orders", *ACTIVATE, cwd=tmp_path)
    assert result.code == 0, result.err
    assert "table orders in receiver" in result.out and ": active until " in result.out
    assert "owner Grace Hopper, authorized by Katherine Johnson" in result.out
    assert "active until " in status_row(warehouse, tmp_path)
    detail = dogana("status", warehouse, "--table", "orders", cwd=tmp_path)
    assert "  activation       active until " in detail.out
    assert "    owner Grace Hopper, recorded by Ada Lovelace" in detail.out
    assert "    licence internal-use-only, purposes billing, finance reporting" in detail.out
    shown = json.loads(dogana("status", warehouse, "--json", cwd=tmp_path).out)
    (table,) = shown["tables"]
    assert table["activation"]["status"] == "active"
    assert table["activation"]["authorized_by"] == "Katherine Johnson"


def test_status_shows_an_expired_authorization_with_its_expiry(
    warehouse: str, tmp_path: Path
) -> None:
    past = datetime(2026, 1, 1, tzinfo=UTC)
    earlier = receiver(tmp_path / "warehouse.db", clock=past)
    earlier.sources.require(True, by="Ada Lovelace")
    earlier.sources.activate(
        "orders",
        owner="Grace Hopper",
        authorized_by="Katherine Johnson",
        expires_at=past + timedelta(days=1),
        licence="internal-use-only",
        purposes=["billing"],
        provenance="nightly read",
        by="Ada Lovelace",
    )
    assert "expired at 2026-01-02 00:00:00" in status_row(warehouse, tmp_path)
    detail = dogana("status", warehouse, "--table", "orders", cwd=tmp_path)
    assert "table orders expired at 2026-01-02T00:00:00+00:00" in detail.out


def test_activate_names_each_missing_part_exits_1_and_records_nothing(
    warehouse: str, tmp_path: Path
) -> None:
    arguments = option(option(ACTIVATE, "--authorized-by", "svc_erp"), "--owner", "ada lovelace")
    result = dogana("activate", warehouse, "orders", *arguments, cwd=tmp_path)
    assert result.code == 1
    assert "refused: table 'orders' cannot be activated: missing" in result.err
    assert "'svc_erp' is an account ('svc')" in result.err
    assert "an owner other than who recorded the activation ('ada lovelace' did both)" in result.err
    assert receiver(Path(warehouse[len("sqlite:///") :])).sources.log("orders") == []


def test_an_authorization_that_never_expires_is_a_usage_error(
    warehouse: str, tmp_path: Path
) -> None:
    for never in ("none", "soon"):
        result = dogana(
            "activate", warehouse, "orders", *option(ACTIVATE, "--expires", never), cwd=tmp_path
        )
        assert result.code == 2, result.err
        assert "--expires" in result.err


def test_require_activation_off_needs_a_named_person(warehouse: str, tmp_path: Path) -> None:
    assert dogana("require-activation", warehouse, "on", "--by", "deploy", cwd=tmp_path).code == 0
    refused = dogana("require-activation", warehouse, "off", "--by", "svc_ops", cwd=tmp_path)
    assert refused.code == 1 and "'svc_ops' is an account" in refused.err
    done = dogana("require-activation", warehouse, "off", "--by", "Ada Lovelace", cwd=tmp_path)
    assert done.code == 0, done.err
    assert "not required" in status_row(warehouse, tmp_path)


def test_deactivate_makes_a_table_pending_and_logs_who_and_why(
    warehouse: str, tmp_path: Path
) -> None:
    assert dogana("require-activation", warehouse, "on", "--by", "Ada", cwd=tmp_path).code == 0
    assert dogana("activate", warehouse, "orders", *ACTIVATE, cwd=tmp_path).code == 0
    result = dogana(
        "deactivate", warehouse, "orders", "--by", "Ada Lovelace", "--reason", "licence ended",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "  pending  " in status_row(warehouse, tmp_path)
    logged = receiver(Path(warehouse[len("sqlite:///") :])).sources.log("orders")
    assert [(e.event, e.actor) for e in logged] == [
        ("activated", "Ada Lovelace"),
        ("deactivated", "Ada Lovelace"),
    ]
    assert logged[-1].detail["reason"] == "licence ended"
