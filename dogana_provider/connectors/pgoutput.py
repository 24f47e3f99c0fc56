"""PostgreSQL's pgoutput logical decoding messages (protocol version 1), decoded from their bytes.

    for message in decode(data): ...     # one message per row of pg_logical_slot_*_changes

The messages a publication's slot sends, as PostgreSQL's "Logical Replication Message Formats"
page lays them out (network byte order; a String is NUL-terminated UTF-8):

    B  Begin      final LSN, commit timestamp, xid
    C  Commit     flags, commit LSN, end LSN, commit timestamp
    R  Relation   relation id, namespace, name, replica identity, columns (flags, name, type,
                  typmod)
    I  Insert     relation id, N + the new tuple
    U  Update     relation id, optionally K (the old key) or O (the old row), N + the new tuple
    D  Delete     relation id, K (the old key) or O (the old row)
    T  Truncate   the relations truncated
    Y  Type, O  Origin, M  Message: decoded to Other, since they carry no row

A tuple's values travel as text (the column's output function in the decoding session), null as
None, and a TOASTed value the update left unchanged as UNCHANGED: the message does not carry it.
Standard library only, and no I/O: the connector (pg_logical.py) turns tuples into rows.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


class Unchanged:
    """A TOASTed value an update did not change: pgoutput leaves it out of the new tuple."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()

Value = str | None | Unchanged


class MalformedMessage(ValueError):
    """Bytes that are not a pgoutput message of protocol version 1."""


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    committed_at: datetime
    xid: int


@dataclass(frozen=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    committed_at: datetime


@dataclass(frozen=True)
class RelationColumn:
    name: str
    type_oid: int
    typmod: int
    key: bool


@dataclass(frozen=True)
class Relation:
    relation_id: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True)
class Insert:
    relation_id: int
    new: tuple[Value, ...]


@dataclass(frozen=True)
class Update:
    relation_id: int
    old: tuple[Value, ...] | None
    old_is_key: bool
    new: tuple[Value, ...]


@dataclass(frozen=True)
class Delete:
    relation_id: int
    old: tuple[Value, ...]
    old_is_key: bool


@dataclass(frozen=True)
class Truncate:
    relation_ids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(frozen=True)
class Other:
    """A message that carries no row (Type, Origin, logical Message)."""

    tag: str


Message = Begin | Commit | Relation | Insert | Update | Delete | Truncate | Other


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise MalformedMessage(
                f"a pgoutput message ends at byte {len(self.data)}, before the {size} bytes "
                f"expected at {self.at}"
            )
        part = self.data[self.at : self.at + size]
        self.at += size
        return part

    def unpack(self, layout: str) -> tuple[int, ...]:
        return struct.unpack(layout, self.take(struct.calcsize(layout)))

    def int8(self) -> int:
        return self.unpack("!b")[0]

    def int16(self) -> int:
        return self.unpack("!h")[0]

    def int32(self) -> int:
        return self.unpack("!i")[0]

    def uint32(self) -> int:
        return self.unpack("!I")[0]

    def int64(self) -> int:
        return self.unpack("!q")[0]

    def lsn(self) -> int:
        return self.unpack("!Q")[0]

    def byte(self) -> str:
        return self.take(1).decode("ascii")

    def string(self) -> str:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise MalformedMessage(f"a pgoutput string at byte {self.at} has no terminating NUL")
        text = self.data[self.at : end].decode("utf-8")
        self.at = end + 1
        return text

    def timestamp(self) -> datetime:
        return POSTGRES_EPOCH + timedelta(microseconds=self.int64())

    def tuple_(self) -> tuple[Value, ...]:
        values: list[Value] = []
        for _ in range(self.int16()):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            elif kind == "t":
                values.append(self.take(self.int32()).decode("utf-8"))
            else:
                raise MalformedMessage(
                    f"a tuple value of kind {kind!r}: protocol version 1 sends only text (t), "
                    "null (n) and unchanged TOAST (u)"
                )
        return tuple(values)


def decode(data: bytes | memoryview) -> Message:
    """One pgoutput message from its bytes."""
    reader = _Bytes(bytes(data))
    tag = reader.byte()
    if tag == "B":
        return Begin(reader.lsn(), reader.timestamp(), reader.uint32())
    if tag == "C":
        reader.int8()
        return Commit(reader.lsn(), reader.lsn(), reader.timestamp())
    if tag == "R":
        relation_id, namespace, name = reader.uint32(), reader.string(), reader.string()
        identity = chr(reader.int8())
        columns = []
        for _ in range(reader.int16()):
            flags, column = reader.int8(), reader.string()
            columns.append(RelationColumn(column, reader.uint32(), reader.int32(), bool(flags & 1)))
        return Relation(relation_id, namespace, name, identity, tuple(columns))
    if tag == "I":
        relation_id = reader.uint32()
        _expect(reader.byte(), "N", "Insert")
        return Insert(relation_id, reader.tuple_())
    if tag == "U":
        relation_id = reader.uint32()
        kind = reader.byte()
        old: tuple[Value, ...] | None = None
        if kind in ("K", "O"):
            old = reader.tuple_()
            old_is_key = kind == "K"
            kind = reader.byte()
        else:
            old_is_key = False
        _expect(kind, "N", "Update")
        return Update(relation_id, old, old_is_key, reader.tuple_())
    if tag == "D":
        relation_id = reader.uint32()
        kind = reader.byte()
        if kind not in ("K", "O"):
            raise MalformedMessage(f"a Delete's old tuple is marked {kind!r}, not K or O")
        return Delete(relation_id, reader.tuple_(), kind == "K")
    if tag == "T":
        count, options = reader.int32(), reader.int8()
        relation_ids = tuple(reader.uint32() for _ in range(count))
        return Truncate(relation_ids, bool(options & 1), bool(options & 2))
    if tag in ("Y", "O", "M"):
        return Other(tag)
    raise MalformedMessage(f"{tag!r} is not a pgoutput message of protocol version 1")


def _expect(found: str, wanted: str, message: str) -> None:
    if found != wanted:
        raise MalformedMessage(f"an {message}'s new tuple is marked {found!r}, not {wanted}")


def lsn_text(lsn: int) -> str:
    """An LSN as PostgreSQL spells it: two hexadecimal halves, 16/B374D848."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_of(text: str) -> int:
    """An LSN from PostgreSQL's spelling."""
    high, _, low = str(text).partition("/")
    return (int(high, 16) << 32) | int(low, 16)
