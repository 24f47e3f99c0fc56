"""A delivery of Parquet parts staged on PostgreSQL by one loader per part at once
(staging/parts.py): each part in a transaction of its own, its rows numbered after the parts
before it, a failed part loaded again alone, a refused part refused as one loader refuses it,
and the content hash of the parts end to end checked against the bytes each loader parsed."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_receiver_postgres import drop_tables

from dogana_core import Contract, Shape
from dogana_core.gate import Outcome
from dogana_provider.delivery.files import (
    UnreadableFile,
    part_name,
    parts_sha256,
    parts_sha256_as_read,
)
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.transactions import transaction
from dogana_provider.staging import ROW_COLUMN, create_table
from dogana_provider.staging.parts import load_parts, parts_of

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def uid(postgres_url: str) -> Iterator[str]:
    uid = uuid.uuid4().hex[:10]
    yield uid
    drop_tables(postgres_url, uid)


def contract_of(uid: str) -> Contract:
    return Contract(f"parts_{uid}", ("id",), {"full": Shape.complete()}, types={"id": "int"})


def write_parts(folder: Path, *parts: list[tuple[int | None, str]]) -> Path:
    folder.mkdir(parents=True)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    for index, rows in enumerate(parts):
        ids, names = zip(*rows, strict=True) if rows else ((), ())
        table = pa.table({"id": list(ids), "name": list(names)}, schema=schema)
        pq.write_table(table, folder / part_name(index))
    return folder


def numbered(url: str, table: str) -> list[tuple[int, int]]:
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute(f'SELECT "{ROW_COLUMN}", id FROM "{table}" ORDER BY 1')
        return [(int(row), int(key)) for row, key in cursor.fetchall()]


def staged_table(url: str, uid: str, parts: Any) -> str:
    table = f"stage_{uid}"
    with transaction(lambda: psycopg2.connect(url), POSTGRES) as connection:
        create_table(connection, POSTGRES, table, parts.types)
    return table


def test_the_parts_load_at_once_each_in_a_transaction_of_its_own_numbered_in_file_order(
    postgres_url: str, tmp_path: Path, uid: str
) -> None:
    folder = write_parts(
        tmp_path / "d.parquet", [(i, f"a{i}") for i in range(1, 4)], [(i, "b") for i in (7, 8)]
    )
    contract = contract_of(uid)
    parts = parts_of(folder, contract)
    assert parts is not None and parts.rows == (3, 2)
    table = staged_table(postgres_url, uid, parts)
    # Each loader waits inside its transaction for the other: loaded one after another, the
    # first would wait alone and time out.
    together = threading.Barrier(2, timeout=20)
    opened = Counter[str]()

    @contextmanager
    def begin() -> Iterator[Any]:
        opened[threading.current_thread().name] += 1
        with transaction(lambda: psycopg2.connect(postgres_url), POSTGRES) as connection:
            together.wait()
            yield connection

    loaded = load_parts(begin, POSTGRES, table, parts, contract)
    assert loaded == (5, parts_sha256(parts.files))
    assert sorted(opened.values()) == [1, 1]
    assert numbered(postgres_url, table) == [(1, 1), (2, 2), (3, 3), (4, 7), (5, 8)]


def test_a_part_that_fails_is_loaded_again_alone(
    postgres_url: str, tmp_path: Path, uid: str
) -> None:
    folder = write_parts(tmp_path / "d.parquet", [(1, "a"), (2, "b")], [(3, "c"), (4, "d")])
    contract = contract_of(uid)
    parts = parts_of(folder, contract)
    assert parts is not None
    table = staged_table(postgres_url, uid, parts)
    opened = Counter[str]()
    lock = threading.Lock()
    failed: list[str] = []

    @contextmanager
    def begin() -> Iterator[Any]:
        name = threading.current_thread().name
        opened[name] += 1
        with transaction(lambda: psycopg2.connect(postgres_url), POSTGRES) as connection:
            yield connection
            with lock:
                fail = not failed
                failed.append(name)
            if fail:  # the part's rows are in, not committed: the transaction rolls back
                raise psycopg2.OperationalError("server closed the connection unexpectedly")

    assert load_parts(begin, POSTGRES, table, parts, contract) == (4, parts_sha256(parts.files))
    assert sorted(opened.values()) == [1, 2]
    assert numbered(postgres_url, table) == [(1, 1), (2, 2), (3, 3), (4, 4)]


def receiver_of(url: str, contract: Contract, uid: str) -> Receiver:
    receiver = Receiver(
        lambda: psycopg2.connect(url), POSTGRES, prefix=f"s{uid}", clock=lambda: NOW
    )
    receiver.register(contract)
    return receiver


def staging_tables(receiver: Receiver) -> list[Any]:
    with transaction(receiver.connect, POSTGRES, write=False) as connection:
        return receiver.store.staging_tables(connection)


def test_a_staged_row_is_named_by_its_place_in_the_delivery_across_parts(
    postgres_url: str, tmp_path: Path, uid: str
) -> None:
    folder = write_parts(
        tmp_path / "d.parquet", [(1, "a"), (2, "b"), (3, "c")], [(4, "d"), (None, "e")]
    )
    contract = contract_of(uid)
    receiver = receiver_of(postgres_url, contract, uid)
    files = sorted(folder.iterdir())
    manifest = contract.manifest(
        "full", NOW - timedelta(hours=1), rows=5, content_hash=parts_sha256(files)
    )
    receipt = receiver.receive(folder, manifest)
    assert receipt.outcome is Outcome.REJECTED
    (null_key,) = [c for c in receipt.failed if c.name == "key_not_null"]
    assert "row 5 (id=null)" in null_key.detail
    assert staging_tables(receiver) == []


def test_a_refused_part_is_refused_as_one_loader_refuses_it(
    postgres_url: str, tmp_path: Path, uid: str
) -> None:
    contract = contract_of(uid)
    rows = [[(1, "a"), (2, "b")], [(3, "c\x00d")]]
    folder = write_parts(tmp_path / "d.parquet", *rows)
    single = tmp_path / "one.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(p) for p in sorted(folder.iterdir())]), single)
    produced_at = NOW - timedelta(hours=1)
    seen = []
    for path, files in ((folder, sorted(folder.iterdir())), (single, [single])):
        receiver = receiver_of(postgres_url, contract, f"{uid}{len(seen)}")
        sha256 = parts_sha256(files)
        manifest = contract.manifest("full", produced_at, rows=3, content_hash=sha256)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        seen.append([(c.name, c.detail.replace(str(path), "<file>")) for c in receipt.failed])
        assert staging_tables(receiver) == []
    assert seen[0] == seen[1]
    assert any("does not fit" in detail for _, detail in seen[0])


def test_a_part_whose_bytes_changed_after_its_loader_read_them_is_refused(
    tmp_path: Path,
) -> None:
    folder = write_parts(tmp_path / "d.parquet", [(1, "a")], [(2, "b")])
    files = sorted(folder.iterdir())
    parsed = [parts_sha256([file]) for file in files]
    assert parts_sha256_as_read(folder, list(zip(files, parsed, strict=True))) == parts_sha256(
        files
    )
    with open(files[1], "r+b") as part:
        part.seek(8)
        part.write(b"\x00")
    with pytest.raises(UnreadableFile, match=r"part-00001\.parquet changed after it was read"):
        parts_sha256_as_read(folder, list(zip(files, parsed, strict=True)))
