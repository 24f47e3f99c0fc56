"""Delivered files: logical types, streaming, and the SHA-256 of the very bytes read."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from row_check_fixtures import ORDERS, ORDERS_SCHEMA, T0, T1, honest_orders, order, write

from dogana_provider.delivery.files import (
    DeliveredFile,
    DeliveryWriter,
    NoLogicalType,
    UnreadableFile,
    count_rows,
    logical_type,
)


@pytest.mark.parametrize(
    ("arrow_type", "name"),
    [
        (pa.int8(), "int"),
        (pa.int64(), "int"),
        (pa.uint32(), "int"),
        (pa.uint64(), "int"),
        (pa.float16(), "float"),
        (pa.float32(), "float"),
        (pa.float64(), "float"),
        (pa.string(), "str"),
        (pa.large_string(), "str"),
        (pa.dictionary(pa.int32(), pa.string()), "str"),
        (pa.bool_(), "bool"),
        (pa.date32(), "date"),
        (pa.date64(), "date"),
        (pa.timestamp("us", tz="UTC"), "datetime"),
        (pa.timestamp("ns", tz="Europe/Rome"), "datetime"),
        (pa.decimal128(12, 2), "decimal(12,2)"),
    ],
)
def test_arrow_types_map_to_the_column_hash_names(arrow_type: pa.DataType, name: str) -> None:
    assert logical_type(arrow_type) == name


def test_a_timestamp_without_a_time_zone_is_naive_and_has_no_name() -> None:
    with pytest.raises(NoLogicalType, match="naive"):
        logical_type(pa.timestamp("us"))


@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.list_(pa.int64()), pa.time64("us")])
def test_types_outside_dogana_have_no_name(arrow_type: pa.DataType) -> None:
    with pytest.raises(NoLogicalType, match="is not one of"):
        logical_type(arrow_type)


@pytest.mark.parametrize("names", [[], ["id"], ["is_deleted", "amount"], ORDERS_SCHEMA.names])
def test_the_hash_of_a_parquet_file_is_of_its_bytes_whatever_columns_are_read(
    tmp_path: Path, names: list[str]
) -> None:
    rows = [order(i, 1 + i % 30, amount=i / 4) for i in range(5000)]
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=ORDERS_SCHEMA), path, row_group_size=700)
    with DeliveredFile(path, ORDERS) as delivered:
        read = sum(batch.num_rows for batch in delivered.batches(names))
        digest = delivered.sha256()
    assert read == 5000
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_hash_of_a_csv_file_is_of_its_bytes(tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", [order(i) for i in range(3000)])
    with DeliveredFile(path, ORDERS) as delivered:
        assert count_rows(delivered).live == 3000
        assert delivered.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_csv_file_streams_in_many_batches(tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", [order(i) for i in range(60_000)])
    with DeliveredFile(path, ORDERS) as delivered:
        sizes = [batch.num_rows for batch in delivered.batches(["id"])]
    assert sum(sizes) == 60_000 and len(sizes) > 1


def test_a_file_changed_while_read_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", honest_orders())
    with DeliveredFile(path, ORDERS) as delivered:
        list(delivered.batches(["id"]))
        with open(path, "a") as more:
            more.write("4,2026-09-02,2026-10-18T01:00:00Z,false,1\n")
        with pytest.raises(UnreadableFile, match="changed while it was read"):
            delivered.sha256()


def test_counting_tombstones_and_null_deleted_values(tmp_path: Path) -> None:
    rows = [*honest_orders(), order(4, deleted=True), order(5, deleted=None)]
    with DeliveredFile(write(tmp_path / "orders.parquet", rows), ORDERS) as delivered:
        counts = count_rows(delivered)
    assert (counts.live, counts.tombstones, counts.null_deleted) == (3, 1, 1)


def test_a_naive_timestamp_refuses_the_file(tmp_path: Path) -> None:
    table = pa.table(
        {"id": [1], "order_date": pa.array([None], pa.date32()), "seen": [datetime(2026, 1, 1)]}
    )
    path = tmp_path / "naive.parquet"
    pq.write_table(table, path)
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile) as error:
        _ = delivered.columns
    assert error.value.column == "seen" and "naive" in error.value.rule


def test_a_csv_datetime_without_an_offset_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("id,order_date,updated_at,is_deleted\n1,2026-09-01,2026-10-18T01:00:00,false\n")
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile) as error:
        list(delivered.batches(["updated_at"]))
    assert error.value.column == "updated_at"
    assert "zone offset" in error.value.rule
    assert str(error.value).startswith(f"{path}: column updated_at: ")


def test_sub_microsecond_datetimes_are_refused_not_truncated(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": [1],
            "order_date": pa.array([None], pa.date32()),
            "updated_at": pa.array([1_000_000_001], pa.timestamp("ns", tz="UTC")),
        }
    )
    path = tmp_path / "ns.parquet"
    pq.write_table(table, path, coerce_timestamps=None, version="2.6")
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile) as error:
        list(delivered.batches(["updated_at"]))
    assert error.value.column == "updated_at" and "microseconds" in error.value.rule


def test_a_bound_column_missing_or_of_another_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": ["1"], "order_date": pa.array([None], pa.date32())}), path)
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile) as error:
        _ = delivered.columns
    assert str(error.value) == (
        f"{path}: column id: the key column is str in the file; the contract types it int"
    )
    pq.write_table(pa.table({"id": [1]}), path)
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile) as error:
        _ = delivered.columns
    assert error.value.rule == "the window column is missing from the file"


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("id,order_date,updated_at,id\n1,2026-09-01,2026-10-18T01:00:00Z,2\n")
    with DeliveredFile(path, ORDERS) as delivered, pytest.raises(UnreadableFile, match="twice"):
        _ = delivered.columns


def test_csv_an_unquoted_empty_field_is_null_a_quoted_one_the_empty_string(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text(
        "id,order_date,updated_at,is_deleted,note\n1,2026-09-01,2026-10-18T01:00:00Z,false,\n"
        '2,2026-09-01,2026-10-18T01:00:00+02:00,false,""\n'
    )
    with DeliveredFile(path, ORDERS) as delivered:
        (batch,) = list(delivered.batches(["note", "updated_at"]))
    assert batch.column(0).to_pylist() == [None, ""]
    assert batch.column(1).to_pylist()[1] == datetime(2026, 10, 17, 23, 0, tzinfo=UTC)


# Writing ----------------------------------------------------------------------------------------


def test_a_written_delivery_is_counted_and_hashed_while_written(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    rows = [order(i, 1 + i % 30, deleted=i % 7 == 0) for i in range(10_000)]
    table = pa.Table.from_pylist(rows, schema=ORDERS_SCHEMA)
    with DeliveryWriter(path, ORDERS, ORDERS_SCHEMA, row_group_rows=3000) as writer:
        for batch in table.to_batches(max_chunksize=700):
            writer.write(batch)
        written = writer.close()
    tombstones = sum(1 for i in range(10_000) if i % 7 == 0)
    assert (written.rows, written.tombstones) == (10_000 - tombstones, tombstones)
    assert written.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    # Memory flat: a row group holds at most row_group_rows plus one batch.
    metadata = pq.ParquetFile(path).metadata
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert len(groups) > 1 and max(groups) <= 3000 + 700
    manifest = written.manifest(ORDERS, "changes", T1, since=T0)
    assert manifest.content_hash == written.sha256
    with DeliveredFile(path, ORDERS) as delivered:
        counts = count_rows(delivered)
        assert (counts.live, counts.tombstones) == (written.rows, written.tombstones)
        assert delivered.sha256() == written.sha256


def test_a_writer_refuses_a_null_deleted_value_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    table = pa.Table.from_pylist([order(1), order(2, deleted=None)], schema=ORDERS_SCHEMA)
    with (
        pytest.raises(UnreadableFile) as error,
        DeliveryWriter(path, ORDERS, ORDERS_SCHEMA) as writer,
    ):
        writer.write(table)
    assert error.value.column == "is_deleted" and "null deleted value" in error.value.rule
    assert not path.exists()


def test_a_writer_refuses_a_schema_its_contract_cannot_read(tmp_path: Path) -> None:
    schema = ORDERS_SCHEMA.set(2, pa.field("updated_at", pa.timestamp("us")))
    with pytest.raises(UnreadableFile, match="naive"):
        DeliveryWriter(tmp_path / "orders.parquet", ORDERS, schema)
    assert not (tmp_path / "orders.parquet").exists()


def test_a_writer_never_overwrites_unless_told(tmp_path: Path) -> None:
    path = tmp_path / "orders.parquet"
    path.write_text("an earlier delivery")
    with pytest.raises(FileExistsError):
        DeliveryWriter(path, ORDERS, ORDERS_SCHEMA)
    assert path.read_text() == "an earlier delivery"
