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


# Each fixed part of a message, compiled once: a read is one unpack_from at an offset, no slice.
_BEGIN = struct.Struct("!QqI")  # final LSN, commit timestamp, xid
_COMMIT = struct.Struct("!bQQq")  # flags, commit LSN, end LSN, commit timestamp
_ID = struct.Struct("!I")  # a relation id
_ID_KIND = struct.Struct("!Ic")  # a relation id, then the mark of the tuple after it
_COUNT = struct.Struct("!h")  # a tuple's number of values, a Relation's number of columns
_SIZE = struct.Struct("!I")  # a text value's length in bytes (a negative one: past the end)
_IDENTITY = struct.Struct("!bh")  # a Relation's replica identity, then its number of columns
_COLUMN = struct.Struct("!Ii")  # a Relation column's type oid and typmod
_TRUNCATE = struct.Struct("!ib")  # the number of relations, the options


def _timestamp(microseconds: int) -> datetime:
    return POSTGRES_EPOCH + timedelta(microseconds=microseconds)


def _string(data: bytes, at: int) -> tuple[str, int]:
    """A NUL-terminated string at a byte, and the byte after its NUL."""
    end = data.find(b"\0", at)
    if end < 0:
        raise MalformedMessage(f"a pgoutput string at byte {at} has no terminating NUL")
    return data[at:end].decode("utf-8"), end + 1


def _tuple(data: bytes, at: int) -> tuple[tuple[Value, ...], int]:
    """A tuple's values from a byte (its number of values), and the byte after them."""
    (count,) = _COUNT.unpack_from(data, at)
    at += 2
    values: list[Value] = []
    append, size_at = values.append, _SIZE.unpack_from
    for _ in range(count):
        kind = data[at]
        if kind == 116:  # t: the value's length, then its text
            start = at + 5
            at = start + size_at(data, at + 1)[0]
            append(data[start:at].decode())
        elif kind == 110:  # n
            append(None)
            at += 1
        elif kind == 117:  # u
            append(UNCHANGED)
            at += 1
        else:
            raise MalformedMessage(
                f"a tuple value of kind {chr(kind)!r}: protocol version 1 sends only text (t), "
                "null (n) and unchanged TOAST (u)"
            )
    # A length past the end: once here, not per value (a slice past the end is only shorter,
    # and the next value's mark there raises IndexError, which decode reports).
    if at > len(data):
        raise MalformedMessage(
            f"a pgoutput message ends at byte {len(data)}, before the end of the text values "
            f"expected up to byte {at}"
        )
    return tuple(values), at


def decode(data: bytes | memoryview) -> Message:
    """One pgoutput message from its bytes."""
    if not isinstance(data, bytes):
        data = bytes(data)
    try:
        return _decode(data)
    except (struct.error, IndexError):
        # A fixed field, or a tuple value's mark, past the message's end.
        raise MalformedMessage(
            f"a pgoutput message of {len(data)} bytes ends before the fields expected of its "
            f"tag {data[:1]!r}"
        ) from None


def _decode(data: bytes) -> Message:
    tag = data[0]
    if tag == 85:  # U
        relation_id, kind = _ID_KIND.unpack_from(data, 1)
        old: tuple[Value, ...] | None = None
        old_is_key = kind == b"K"
        at = 6
        if old_is_key or kind == b"O":
            old, at = _tuple(data, at)
            kind = data[at : at + 1]
            at += 1
        if kind != b"N":
            raise _unmarked(kind, "an Update")
        return Update(relation_id, old, old_is_key, _tuple(data, at)[0])
    if tag == 73:  # I
        relation_id, kind = _ID_KIND.unpack_from(data, 1)
        if kind != b"N":
            raise _unmarked(kind, "an Insert")
        return Insert(relation_id, _tuple(data, 6)[0])
    if tag == 68:  # D
        relation_id, kind = _ID_KIND.unpack_from(data, 1)
        if kind not in (b"K", b"O"):
            raise MalformedMessage(
                f"a Delete's old tuple is marked {kind.decode('latin-1')!r}, not K or O"
            )
        return Delete(relation_id, _tuple(data, 6)[0], kind == b"K")
    if tag == 66:  # B
        final_lsn, committed, xid = _BEGIN.unpack_from(data, 1)
        return Begin(final_lsn, _timestamp(committed), xid)
    if tag == 67:  # C
        _, commit_lsn, end_lsn, committed = _COMMIT.unpack_from(data, 1)
        return Commit(commit_lsn, end_lsn, _timestamp(committed))
    if tag == 82:  # R
        (relation_id,) = _ID.unpack_from(data, 1)
        namespace, at = _string(data, 5)
        name, at = _string(data, at)
        identity, count = _IDENTITY.unpack_from(data, at)
        at += 3
        columns = []
        for _ in range(count):
            flags = data[at]
            column, at = _string(data, at + 1)
            type_oid, typmod = _COLUMN.unpack_from(data, at)
            at += 8
            columns.append(RelationColumn(column, type_oid, typmod, bool(flags & 1)))
        return Relation(relation_id, namespace, name, chr(identity), tuple(columns))
    if tag == 84:  # T
        count, options = _TRUNCATE.unpack_from(data, 1)
        relation_ids = struct.unpack_from(f"!{count}I", data, 6)
        return Truncate(relation_ids, bool(options & 1), bool(options & 2))
    if tag in (89, 79, 77):  # Y, O, M
        return Other(chr(tag))
    raise MalformedMessage(f"{chr(tag)!r} is not a pgoutput message of protocol version 1")


def _unmarked(found: bytes, message: str) -> MalformedMessage:
    return MalformedMessage(f"{message}'s new tuple is marked {found.decode('latin-1')!r}, not N")


def lsn_text(lsn: int) -> str:
    """An LSN as PostgreSQL spells it: two hexadecimal halves, 16/B374D848."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_of(text: str) -> int:
    """An LSN from PostgreSQL's spelling."""
    high, _, low = str(text).partition("/")
    return (int(high, 16) << 32) | int(low, 16)
