"""pgoutput's messages from their bytes: what is not a message of protocol version 1 is refused,
naming what was found."""

from __future__ import annotations

import struct

import pytest

from dogana_provider.connectors.pgoutput import (
    UNCHANGED,
    Commit,
    Insert,
    MalformedMessage,
    decode,
    lsn_of,
    lsn_text,
)


def test_an_insert_carries_text_null_and_unchanged_values() -> None:
    data = b"I" + struct.pack("!I", 16384) + b"N" + struct.pack("!h", 3)
    data += b"t" + struct.pack("!i", 3) + "ün".encode() + b"n" + b"u"
    assert decode(data) == Insert(16384, ("ün", None, UNCHANGED))


def test_a_commit_carries_its_end_position() -> None:
    data = b"C" + struct.pack("!bQQq", 0, 0x16B374D848, 0x16B374D8A0, 0)
    message = decode(data)
    assert isinstance(message, Commit) and lsn_text(message.end_lsn) == "16/B374D8A0"
    assert lsn_of("16/B374D8A0") == message.end_lsn


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"Z", "'Z' is not a pgoutput message"),
        (b"I" + struct.pack("!I", 1) + b"X", "marked 'X'"),
        (b"I" + struct.pack("!I", 1) + b"N" + struct.pack("!h", 1) + b"b", "kind 'b'"),
        (b"B" + b"\0" * 4, "expected"),
    ],
)
def test_bytes_that_are_not_a_message_are_refused_naming_what_was_found(
    data: bytes, named: str
) -> None:
    with pytest.raises(MalformedMessage, match=named):
        decode(data)
