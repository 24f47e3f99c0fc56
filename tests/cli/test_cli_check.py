"""`dogana manifest` and `dogana check`, run as installed, on real Parquet and CSV files.

An honest file passes; each way a file can contradict its manifest is refused with exit 1 and
the check that names the contradiction. Manifests for the refusals are written with the core
(the sender's claim), without content_hash unless the test is about it, so that exactly the
expected checks fail.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from cli_fixtures import (
    ORDERS,
    PRODUCED,
    SCHEMA,
    SEPTEMBER,
    SINCE,
    dogana,
    honest,
    order,
    write,
    write_contract,
    write_manifest,
)

from dogana_core import Manifest, column_hash

FORMATS = ["parquet", "csv"]


@pytest.fixture
def contract(tmp_path: Path) -> Path:
    return write_contract(tmp_path)


def check(
    tmp_path: Path, file: Path, manifest: Manifest, contract: Path
) -> tuple[int, set[str], str]:
    sidecar = write_manifest(tmp_path / "claimed.json", manifest)
    result = dogana("check", file, "--contract", contract, "--manifest", sidecar, cwd=tmp_path)
    return result.code, result.failed(), result.out


# An honest file, and the round trip ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_honest_file_passes(tmp_path: Path, contract: Path, fmt: str) -> None:
    file = write(tmp_path / f"orders.{fmt}", honest())
    made = dogana(
        "manifest", file, "--contract", contract, "--shape", "month",
        "--produced-at", "2026-10-19T02:00:00Z", "--window", "2026-09-01", "2026-09-30",
        cwd=tmp_path,
    )  # fmt: skip
    assert made.code == 0, made.err
    checked = dogana("check", file, "--contract", contract, cwd=tmp_path)
    assert checked.code == 0, checked.out + checked.err
    assert checked.failed() == set()
    assert "  pass  rows" in checked.out and "  pass  content_hash" in checked.out
    assert checked.out.rstrip().endswith("ok: the file matches its manifest (11 checks passed)")


@pytest.mark.parametrize("fmt", FORMATS)
def test_manifest_then_check_round_trip(tmp_path: Path, contract: Path, fmt: str) -> None:
    rows = [*honest(), order(4, deleted=True), order(5, deleted=True)]
    file = write(tmp_path / f"changes.{fmt}", rows)
    made = dogana(
        "manifest", file, "--contract", contract, "--shape", "changes",
        "--produced-at", "2026-10-19T04:00:00+02:00", "--since", "2026-10-18T02:00:00Z",
        cwd=tmp_path,
    )  # fmt: skip
    assert made.code == 0, made.err
    manifest = Manifest.from_json((tmp_path / f"changes.{fmt}.json").read_text())
    assert manifest == ORDERS.manifest(
        "changes",
        PRODUCED,
        since=SINCE,
        rows=3,
        tombstones=2,
        content_hash=hashlib.sha256(file.read_bytes()).hexdigest(),
    )
    assert f"wrote {file}.json: table orders, shape changes, 3 rows, 2 tombstones" in made.out
    checked = dogana("check", file, "--contract", contract, cwd=tmp_path)
    assert checked.code == 0, checked.out


def test_check_prints_json_for_machines(tmp_path: Path, contract: Path) -> None:
    file = write(tmp_path / "orders.parquet", [*honest(), order(3, 3)])
    manifest = write_manifest(tmp_path / "m.json", ORDERS.manifest("nightly", PRODUCED, rows=4))
    result = dogana(
        "check", file, "--contract", contract, "--manifest", manifest, "--json", cwd=tmp_path
    )
    assert result.code == 1
    report = json.loads(result.out)
    assert report["passed"] is False
    failed = [c for c in report["checks"] if not c["passed"]]
    assert [(c["kind"], c["name"]) for c in failed] == [("Check", "key_unique")]
    assert {"name": "column_hash", "reason": "the manifest declares no schema_hash"} in report[
        "not_run"
    ]


# Each contradiction, refused with its check named ------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_truncated_file_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    file = write(tmp_path / f"orders.{fmt}", honest())
    assert dogana(
        "manifest", file, "--contract", contract, "--shape", "nightly",
        "--produced-at", "2026-10-19T02:00:00Z", cwd=tmp_path,
    ).code == 0  # fmt: skip
    data = file.read_bytes()
    # CSV: the last line is lost; Parquet: the transfer stopped before the footer.
    cut = data[: data.rstrip(b"\n").rfind(b"\n") + 1] if fmt == "csv" else data[: len(data) // 2]
    file.write_bytes(cut)
    result = dogana("check", file, "--contract", contract, cwd=tmp_path)
    assert result.code == 1
    assert result.failed() == {"rows", "content_hash"}
    if fmt == "csv":
        assert "the file holds 2 live rows; the manifest declares 3" in result.out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_duplicated_key_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    file = write(tmp_path / f"orders.{fmt}", [*honest(), order(2, 16)])
    code, failed, out = check(
        tmp_path, file, ORDERS.manifest("nightly", PRODUCED, rows=4), contract
    )
    assert (code, failed) == (1, {"key_unique"})
    assert "1 key (id) appears more than once, in 2 rows: id=2 in 2 rows (first row 2)" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_tombstone_with_a_null_key_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    file = write(tmp_path / f"orders.{fmt}", [*honest(), order(None, deleted=True)])
    manifest = ORDERS.manifest("changes", PRODUCED, since=SINCE, rows=3, tombstones=1)
    code, failed, out = check(tmp_path, file, manifest, contract)
    assert (code, failed) == (1, {"key_not_null"})
    assert "1 row has a null key (id): row 4 (id=null)" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_window_value_outside_the_window_is_refused(
    tmp_path: Path, contract: Path, fmt: str
) -> None:
    rows = [*honest(), {**order(4), "order_date": date(2026, 10, 1)}]
    file = write(tmp_path / f"orders.{fmt}", rows)
    manifest = ORDERS.manifest("month", PRODUCED, window=SEPTEMBER, rows=4)
    code, failed, out = check(tmp_path, file, manifest, contract)
    assert (code, failed) == (1, {"window_inside"})
    assert "order_date outside the window [2026-09-01, 2026-09-30]: row 4" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_cursor_outside_its_interval_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    rows = [*honest(), order(4, updated=PRODUCED + timedelta(seconds=1))]
    file = write(tmp_path / f"orders.{fmt}", rows)
    manifest = ORDERS.manifest("changes", PRODUCED, since=SINCE, rows=4)
    code, failed, out = check(tmp_path, file, manifest, contract)
    assert (code, failed) == (1, {"cursor_inside"})
    assert "updated_at outside (since, produced_at]" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_null_deleted_value_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    file = write(tmp_path / f"orders.{fmt}", [*honest(), order(4, deleted=None)])
    manifest = ORDERS.manifest("changes", PRODUCED, since=SINCE, rows=3)
    code, failed, out = check(tmp_path, file, manifest, contract)
    # A null is neither live nor a tombstone, and fails the row count as well.
    assert (code, failed) == (1, {"deleted_not_null", "rows"})
    assert "1 row has a null deleted value (is_deleted)" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_other_columns_than_the_schema_hash_are_refused(tmp_path: Path, fmt: str) -> None:
    declared = column_hash(
        [("id", "int"), ("order_date", "date"), ("updated_at", "datetime"), ("amount", "float")]
    )
    contract = write_contract(tmp_path, ORDERS.replace(schema_hash=declared))
    schema = SCHEMA.append(pa.field("note", pa.string()))
    file = write(tmp_path / f"orders.{fmt}", [{**row, "note": "x"} for row in honest()], schema)
    manifest = ORDERS.manifest("nightly", PRODUCED, rows=3, schema_hash=declared)
    code, failed, out = check(tmp_path, file, manifest, contract)
    assert (code, failed) == (1, {"column_hash"})
    assert "the manifest declares " + declared in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_manifest_over_other_bytes_is_refused(tmp_path: Path, contract: Path, fmt: str) -> None:
    first = write(tmp_path / f"first.{fmt}", honest())
    assert dogana(
        "manifest", first, "--contract", contract, "--shape", "nightly",
        "--produced-at", "2026-10-19T02:00:00Z", cwd=tmp_path,
    ).code == 0  # fmt: skip
    # Same keys, same counts, one amount corrected: other bytes.
    other = write(tmp_path / f"other.{fmt}", [order(1, 1), order(2, 15), order(3, 30, amount=1.0)])
    result = dogana(
        "check", other, "--contract", contract, "--manifest", f"{first}.json", cwd=tmp_path
    )
    assert (result.code, result.failed()) == (1, {"content_hash"})
    assert "these are other bytes than the manifest describes" in result.out


def test_a_manifest_that_does_not_fit_the_contract_stops_before_the_rows(
    tmp_path: Path, contract: Path
) -> None:
    file = write(tmp_path / "orders.parquet", honest())
    foreign = Manifest("invoices", "nightly", PRODUCED, rows=3)
    code, failed, out = check(tmp_path, file, foreign, contract)
    assert (code, failed) == (1, {"manifest"})
    assert "Manifest.table: 'invoices' is not the contract's table 'orders'" in out
    assert "no row was read" in out and "  pass  rows" not in out


def test_a_manifest_stamped_after_the_receivers_time_is_refused(
    tmp_path: Path, contract: Path
) -> None:
    """Every receiver refuses a manifest produced after its own time; so does check, at --now
    (by default the current time)."""
    file = write(tmp_path / "orders.parquet", honest())
    ahead = ORDERS.manifest("nightly", datetime.now(UTC) + timedelta(hours=1), rows=3)
    code, failed, _ = check(tmp_path, file, ahead, contract)
    assert (code, failed) == (1, {"receiver_time"})
    sidecar = write_manifest(tmp_path / "m.json", ORDERS.manifest("nightly", PRODUCED, rows=3))
    early = "2026-10-19T01:00:00Z"
    result = dogana(
        "check", file, "--contract", contract, "--manifest", sidecar, "--now", early, cwd=tmp_path
    )
    assert (result.code, result.failed()) == (1, {"receiver_time"})
    assert "is after the receiver's time 2026-10-19T01:00:00+00:00" in result.out


def test_check_names_the_checks_only_the_receiver_can_run(tmp_path: Path, contract: Path) -> None:
    file = write(tmp_path / "orders.parquet", honest())
    code, _, out = check(tmp_path, file, ORDERS.manifest("nightly", PRODUCED, rows=3), contract)
    assert code == 0, out
    assert "  pass  receiver_time" in out
    skipped = {line.split()[1]: line for line in out.splitlines() if line.startswith("  skip ")}
    assert "the table's ledger" in skipped["transition"]
    assert "the published table" in skipped["column_types"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["AMOUNT", "total due", "", "montant_dû", 'say "hi"', "x" * 64])
def test_a_column_name_no_receiver_can_create_is_refused(
    tmp_path: Path, contract: Path, fmt: str, name: str
) -> None:
    """A column no receiver can create (here beside amount, of no contract's concern) is refused
    by column_names, as every receiver refuses it."""
    schema = SCHEMA.append(pa.field(name, pa.float64()))
    rows = [{**row, name: 1.0} for row in honest()]
    file = write(tmp_path / f"orders.{fmt}", rows, schema)
    code, failed, out = check(
        tmp_path, file, ORDERS.manifest("nightly", PRODUCED, rows=3), contract
    )
    assert (code, failed) == (1, {"column_names"}), out


# What `dogana manifest` refuses ---------------------------------------------------------------


def test_manifest_refuses_to_overwrite_without_force(tmp_path: Path, contract: Path) -> None:
    file = write(tmp_path / "orders.csv", honest())
    sidecar = tmp_path / "orders.csv.json"
    sidecar.write_text("keep me")
    args = ["manifest", file, "--contract", contract, "--shape", "nightly", "--produced-at", "now"]
    refused = dogana(*args, cwd=tmp_path)
    assert refused.code == 2
    assert f"{sidecar}: exists; pass --force to overwrite it" in refused.err
    assert sidecar.read_text() == "keep me"
    forced = dogana(*args, "--force", cwd=tmp_path)
    assert forced.code == 0, forced.err
    assert Manifest.from_json(sidecar.read_text()).rows == 3


def test_manifest_refuses_a_null_deleted_value(tmp_path: Path, contract: Path) -> None:
    file = write(tmp_path / "orders.parquet", [*honest(), order(4, deleted=None)])
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "changes",
        "--produced-at", "2026-10-19T02:00:00Z", "--since", "2026-10-18T02:00:00Z", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert f"{file}: column is_deleted: 1 row has a null deleted value" in result.err
    assert not (tmp_path / "orders.parquet.json").exists()


def test_manifest_refuses_tombstones_a_shape_does_not_deliver(
    tmp_path: Path, contract: Path
) -> None:
    file = write(tmp_path / "orders.csv", [*honest(), order(4, deleted=True)])
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "nightly",
        "--produced-at", "2026-10-19T02:00:00Z", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert "Manifest.tombstones: shape 'nightly' delivers no tombstones, got 1" in result.err


def test_manifest_refuses_columns_other_than_the_contracts_schema_hash(tmp_path: Path) -> None:
    contract = write_contract(tmp_path, ORDERS.replace(schema_hash="0" * 64))
    file = write(tmp_path / "orders.parquet", honest())
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "nightly", "--produced-at", "now",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert "(id int, order_date date, updated_at datetime, amount float) hash to" in result.err


def test_manifest_refuses_an_invalid_contract_naming_file_and_field(tmp_path: Path) -> None:
    contract = tmp_path / "orders.contract.json"
    data = json.loads(ORDERS.to_json())
    data["types"]["id"] = "float"
    contract.write_text(json.dumps(data))
    file = write(tmp_path / "orders.csv", honest())
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "nightly", "--produced-at", "now",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert result.err.startswith(
        f"dogana manifest: refused: {contract}: Contract.types: key column"
    )


def test_manifest_refuses_a_shape_the_contract_does_not_name(
    tmp_path: Path, contract: Path
) -> None:
    file = write(tmp_path / "orders.csv", honest())
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "weekly", "--produced-at", "now",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert result.err.startswith(f"dogana manifest: refused: {contract}: --shape: ")
    assert "no shape named 'weekly'; shapes: changes, month, nightly" in result.err


def test_manifest_refuses_an_unreadable_file_naming_the_column(
    tmp_path: Path, contract: Path
) -> None:
    file = tmp_path / "orders.csv"
    file.write_text("id,order_date,updated_at,is_deleted\n1,2026-09-01,2026-10-18T01:00:00,false\n")
    result = dogana(
        "manifest", file, "--contract", contract, "--shape", "nightly", "--produced-at", "now",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1
    assert f"{file}: column updated_at: " in result.err and "zone offset" in result.err


# Usage errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["manifest", "orders.csv", "--shape", "nightly", "--produced-at", "now"], "--contract"),
        (["frobnicate"], "invalid choice"),
        (
            ["manifest", "orders.csv", "--contract", "orders.contract.json", "--shape", "nightly",
             "--produced-at", "2026-10-19T02:00:00"],
            "--produced-at: $datetime '2026-10-19T02:00:00' carries no UTC offset (naive)",
        ),
        (
            ["manifest", "orders.csv", "--contract", "orders.contract.json", "--shape", "month",
             "--produced-at", "now", "--window", "2026-09-01", "September"],
            "--window HIGH: 'September' is not a date",
        ),
        (
            ["manifest", "missing.csv", "--contract", "orders.contract.json", "--shape", "nightly",
             "--produced-at", "now"],
            "missing.csv: no such file (the delivered file)",
        ),
        (
            ["check", "orders.csv", "--contract", "orders.contract.json"],
            "orders.csv.json: no such file (the manifest",
        ),
        (
            ["check", "orders.csv", "--contract", "nope.json", "--manifest", "x"],
            "nope.json: no such file",
        ),
    ],
)  # fmt: skip
def test_usage_errors_exit_2(tmp_path: Path, contract: Path, args: list[str], message: str) -> None:
    write(tmp_path / "orders.csv", honest())
    result = dogana(*args, cwd=tmp_path)
    assert result.code == 2, result
    assert message in result.err
