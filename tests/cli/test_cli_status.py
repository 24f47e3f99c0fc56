"""`dogana status`, and `dogana claims` and `dogana fold` on a live receiver: SQLite, PostgreSQL.

The receiver holds the tables of tests/several_tables.py, delivered through the Receiver; the
installed `dogana` script reads it by database URL or by Airflow connection id, as a person at a
terminal would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_fixtures import dogana
from several_tables import PASSWORD, Live

from dogana_core.claims import Claims
from dogana_core.ledger import Ledger


def test_status_lists_every_table_with_its_state_dates_rows_and_last_receipt(
    live: Live, tmp_path: Path
) -> None:
    result = dogana("status", live.url, cwd=tmp_path)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].endswith(": 4 tables")
    header = lines[1].split("  ")
    assert [h.strip() for h in header if h.strip()][:6] == [
        "table", "state", "complete as of", "deletions as of", "exact as of", "age",
    ]  # fmt: skip
    rows = {line.split()[0]: line for line in lines[3:]}
    assert sorted(rows) == sorted(live.filled.tables)
    assert rows["orders"].split()[1] == "complete"
    assert (
        "rejected" in rows["orders"] and f"(failed: {live.filled.rejected_check})" in rows["orders"]
    )
    assert rows["shipments"].split()[1] == "patched"
    assert rows["invoices"].split()[1:4] == rows["invoice_lines"].split()[1:4]


def test_status_json_states_each_table_as_its_ledger_claims(live: Live, tmp_path: Path) -> None:
    result = dogana("status", live.url, "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    found = json.loads(result.out)
    tables = {table["table"]: table for table in found["tables"]}
    assert sorted(tables) == sorted(live.filled.tables)
    for name, table in tables.items():
        ledger = live.receiver.ledger(name)
        claims = Claims.from_dict(table["claims"])
        assert table["state"] == str(claims.state)
        assert table["complete_as_of"] == _iso(claims.complete_as_of)
        assert table["publication_id"] == ledger.publication_id
        assert table["rows"] == _count(live, name)
    assert tables["orders"]["receipts"][0]["failed"] == [live.filled.rejected_check]
    exact = {tables[t]["exact_as_of"] for t in ("invoices", "invoice_lines")}
    assert len(exact) == 1 and None not in exact


def test_status_of_one_table_shows_its_regions_and_last_receipts(
    live: Live, tmp_path: Path
) -> None:
    result = dogana("status", live.url, "--table", "shipments", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "patched over the delivered span of its window" in result.out.splitlines()[0]
    regions = [line.split() for line in result.out.split("regions\n")[1].splitlines()[2:5]]
    day = live.filled.patched_day
    assert [r[2] for r in regions] == ["complete", "patched", "complete"]
    assert regions[1][0] == f"[{day},"
    receipts = result.out.split("last receipts, newest first\n")[1].splitlines()[2:]
    assert [line.split()[3] for line in receipts] == ["day_changes", "days"]


def test_status_by_connection_id_reads_the_receiver_of_that_connection(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", live.connection)
    by_id = dogana("status", "warehouse", "--json", cwd=tmp_path)
    by_url = dogana("status", live.url, "--json", cwd=tmp_path)
    assert by_id.code == 0, by_id.err
    assert json.loads(by_id.out)["receiver"] == "'warehouse'"
    tables = [{**t, "age_seconds": None, "claims": None} for t in json.loads(by_id.out)["tables"]]
    again = [{**t, "age_seconds": None, "claims": None} for t in json.loads(by_url.out)["tables"]]
    assert tables == again


@pytest.mark.postgres
@pytest.mark.parametrize("live", ["postgres"], indirect=True)
def test_a_password_in_a_receiver_url_is_never_printed(live: Live, tmp_path: Path) -> None:
    assert PASSWORD in live.url
    for args in (
        ("status", live.url),
        ("status", live.url, "--json"),
        ("status", live.url, "--table", "orders"),
        ("status", live.url, "--table", "no_such_table"),
        ("claims", "--receiver", live.url, "--table", "orders", "--now", "now", "--limit", "1d"),
    ):
        result = dogana(*args, cwd=tmp_path)
        assert PASSWORD not in result.out + result.err, args
        if args[0] == "status":
            assert ":***@" in result.out + result.err, args


def test_status_of_a_table_never_registered_is_refused_naming_it(
    live: Live, tmp_path: Path
) -> None:
    result = dogana("status", live.url, "--table", "no_such_table", cwd=tmp_path)
    assert result.code == 1
    assert "no contract is registered for table 'no_such_table'" in result.err
    assert "dogana_cli_receiver" not in result.err


def test_claims_reads_a_tables_ledger_from_a_live_receiver(live: Live, tmp_path: Path) -> None:
    result = dogana(
        "claims", "--receiver", live.url, "--table", "shipments", "--now", "now", "--limit",
        "none", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    claims = Claims.from_json(result.out)
    expected = live.receiver.ledger("shipments").claims(claims.now, limit=claims.limit)
    assert claims == expected


def test_fold_of_a_live_receivers_receipts_is_its_stored_ledger(live: Live, tmp_path: Path) -> None:
    result = dogana("fold", "--receiver", live.url, "--table", "orders", "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert Ledger.from_json(result.out) == live.receiver.ledger("orders")


def test_a_receiver_is_read_from_a_url_or_a_file_never_both(tmp_path: Path) -> None:
    both = dogana("claims", "ledger.json", "--receiver", "x", "--table", "t", "--now", "now",
                  "--limit", "1d", cwd=tmp_path)  # fmt: skip
    assert both.code == 2 and "not both" in both.err
    other = dogana("status", "oracle://scott:tiger@db/orcl", cwd=tmp_path)
    assert other.code == 2 and "sqlite:///, postgresql:// or mysql://" in other.err
    assert "tiger" not in other.err


def _count(live: Live, table: str) -> int:
    with live.receiver.read(table) as snapshot:
        return sum(1 for _ in snapshot.rows)


def _iso(value: object) -> str | None:
    return None if value is None else value.isoformat()  # type: ignore[attr-defined]
