"""Manifest: the sender's declaration of one read.

Manifest(table, shape, produced_at, *, window, since, generation, rows, schema_hash, tombstones,
content_hash). produced_at is the instant of the source the read shows; window is the closed
window a window shape covers; since is where a changed-only read starts (an aware datetime, a
generation string or a sequence integer); generation is the position the read issues. rows counts
live rows and tombstones tombstones; keys never travel in the manifest. content_hash, the SHA-256
of the delivered bytes, is part of the identity, so a corrected file is a new delivery.

A manifest checks itself on construction (types, counts, the hash's form) and against its
contract with Manifest.check, which the gate reports as its "manifest" check. The contract is
read through Terms, the few declarations the check needs, so this module does not import
dogana_core.contract: a contract makes manifests (Contract.manifest), never the other way round.
"""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any, Protocol

from dogana_core.errors import InvalidContract
from dogana_core.shape import Checkpoint, Shape
from dogana_core.values import (
    LogicalType,
    Position,
    Scalar,
    check_scalar,
    check_text,
    exact_integer,
    type_of,
    utc,
)
from dogana_core.wire import (
    Array,
    DateTimeTag,
    Integer,
    Optional,
    Text,
    Value,
    Wire,
    wire_field,
)
from dogana_core.wire import Position as PositionCodec

SHA256_HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)


class Terms(Protocol):
    """What Manifest.check reads of a contract; dogana_core.contract.Contract is one."""

    @property
    def table(self) -> str: ...

    @property
    def schema_hash(self) -> str | None: ...

    @property
    def window_column(self) -> str | None: ...

    @property
    def cursor_column(self) -> str | None: ...

    @property
    def keyed(self) -> bool: ...

    @property
    def window_type(self) -> LogicalType | None: ...

    @property
    def position_type(self) -> type[int] | type[str]: ...

    def shape(self, name: str) -> Shape: ...


@dataclass(frozen=True)
class Manifest(Wire):
    table: str = wire_field(Text())
    shape: str = wire_field(Text(nonempty=True))
    produced_at: datetime = wire_field(DateTimeTag())
    _: KW_ONLY
    window: tuple[Scalar, Scalar] | None = wire_field(
        Optional(Array(Value(), length=2)), default=None
    )
    since: Scalar | None = wire_field(Optional(Value()), default=None)
    generation: Position | None = wire_field(Optional(PositionCodec()), default=None)
    rows: int = wire_field(Integer(), default=0)
    schema_hash: str | None = wire_field(Optional(Text(nonempty=True)), default=None)
    tombstones: int = wire_field(Integer(), default=0)
    content_hash: str | None = wire_field(Optional(Text()), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_text(self.table, "Manifest.table")
        if not check_text(self.shape, "Manifest.shape"):
            raise InvalidContract("Manifest.shape: names a shape of the contract")
        set_(self, "produced_at", utc(self.produced_at, "Manifest.produced_at"))
        if self.window is not None:
            window = tuple(self.window)
            if len(window) != 2:
                raise InvalidContract("Manifest.window: a window is a pair [low, high]")
            set_(
                self,
                "window",
                tuple(_scalar(v, f"Manifest.window[{i}]", key=True) for i, v in enumerate(window)),
            )
        if self.since is not None:
            set_(self, "since", _scalar(self.since, "Manifest.since"))
        if self.generation is not None:
            generation = self.generation
            if isinstance(generation, bool) or not isinstance(generation, int | str):
                raise InvalidContract("Manifest.generation: an integer or a nonempty string")
            if isinstance(generation, str) and not check_text(generation, "Manifest.generation"):
                raise InvalidContract("Manifest.generation: a generation is a nonempty string")
            if isinstance(generation, int):
                exact_integer(generation, "Manifest.generation")
        for name in ("rows", "tombstones"):
            count = getattr(self, name)
            if isinstance(count, bool) or not isinstance(count, int):
                raise InvalidContract(f"Manifest.{name}: {count!r} must be a nonnegative integer")
            exact_integer(count, f"Manifest.{name}")
            if count < 0:
                raise InvalidContract(f"Manifest.{name}: {count!r} must be a nonnegative integer")
        if self.schema_hash is not None and not check_text(
            self.schema_hash, "Manifest.schema_hash"
        ):
            raise InvalidContract("Manifest.schema_hash: nonempty when present")
        if self.content_hash is not None and not (
            isinstance(self.content_hash, str) and SHA256_HEX.fullmatch(self.content_hash)
        ):
            raise InvalidContract(
                f"Manifest.content_hash: {self.content_hash!r} is not a lowercase hex SHA-256"
            )

    def check(self, contract: Terms) -> None:
        """Raise InvalidContract naming the rule when this manifest does not fit its contract."""
        if self.table != contract.table:
            raise InvalidContract(
                f"Manifest.table: {self.table!r} is not the contract's table {contract.table!r}"
            )
        if contract.schema_hash is not None and self.schema_hash != contract.schema_hash:
            raise InvalidContract(
                f"Manifest.schema_hash: {self.schema_hash!r} is not the contract's column hash "
                f"{contract.schema_hash!r}"
            )
        shape = contract.shape(self.shape)
        if shape.is_window:
            if self.window is None:
                raise InvalidContract(
                    f"Manifest.window: shape {self.shape!r} covers a window; name it"
                )
            window_type = contract.window_type
            assert window_type is not None
            low, high = (
                check_scalar(bound, window_type, f"Manifest.window[{i}] ({contract.window_column})")
                for i, bound in enumerate(self.window)
            )
            if low > high:  # type: ignore[operator]
                raise InvalidContract(f"Manifest.window: low {low!r} is after high {high!r}")
        elif self.window is not None:
            raise InvalidContract(f"Manifest.window: shape {self.shape!r} covers the whole table")
        self._check_checkpoint(contract, shape.checkpoint)
        if self.tombstones and not shape.has_tombstones:
            raise InvalidContract(
                f"Manifest.tombstones: shape {self.shape!r} delivers no tombstones, "
                f"got {self.tombstones}"
            )
        if (self.rows or self.tombstones) and self._interval_holds_nothing(
            contract, shape.checkpoint
        ):
            raise InvalidContract(
                "Manifest.rows: a zero-length interval holds no rows and no tombstones, "
                f"got {self.rows} rows and {self.tombstones} tombstones"
            )

    def _check_checkpoint(self, contract: Terms, checkpoint: Checkpoint) -> None:
        since, generation = self.since, self.generation
        if checkpoint is Checkpoint.NONE:
            if since is not None:
                raise InvalidContract(
                    f"Manifest.since: shape {self.shape!r} is complete; it has no since"
                )
            if generation is not None:
                if contract.shape(self.shape).is_window:
                    raise InvalidContract(
                        "Manifest.generation: a complete window never issues a position"
                    )
                _require_position(generation, contract.position_type, "Manifest.generation")
            return
        if since is None:
            raise InvalidContract(
                f"Manifest.since: shape {self.shape!r} reads changes since a checkpoint"
            )
        if checkpoint is Checkpoint.TIMESTAMP:
            if type_of(since) is not LogicalType.DATETIME:
                raise InvalidContract(
                    f"Manifest.since: a timestamp checkpoint is an aware datetime, got {since!r}"
                )
            if generation is not None:
                raise InvalidContract("Manifest.generation: a timestamp read issues no position")
        elif checkpoint is Checkpoint.GENERATION:
            if not isinstance(since, str) or not since:
                raise InvalidContract(
                    f"Manifest.since: a generation is a nonempty string, got {since!r}"
                )
            if not isinstance(generation, str) or not generation:
                raise InvalidContract(
                    "Manifest.generation: a generation feed issues its next generation"
                )
        else:
            if type_of(since) is not LogicalType.INT:
                raise InvalidContract(
                    f"Manifest.since: a sequence position is an integer, got {since!r}"
                )
            if generation is None or type_of(generation) is not LogicalType.INT:
                raise InvalidContract(
                    "Manifest.generation: a sequence read covers (since, generation]; "
                    "name generation"
                )
            assert isinstance(since, int) and isinstance(generation, int)
            if generation < since:
                raise InvalidContract(f"Manifest.generation: {generation} is before since {since}")

    def _interval_holds_nothing(self, contract: Terms, checkpoint: Checkpoint) -> bool:
        if checkpoint is Checkpoint.SEQUENCE:
            return self.since == self.generation
        if checkpoint is Checkpoint.TIMESTAMP:
            # Without a cursor column a keyed read may include since itself, so (t, t] is not
            # provably empty; with one, or for an append, it is.
            bounded = contract.cursor_column is not None or not contract.keyed
            return bounded and self.since == self.produced_at
        return False


def _scalar(value: Any, what: str, *, key: bool = False) -> Scalar:
    """An ordered scalar; a window bound is a value of the window column, so a key value."""
    try:
        kind = type_of(value)
    except InvalidContract as exc:
        raise InvalidContract(f"{what}: {exc}") from None
    if kind in (LogicalType.BOOL, LogicalType.FLOAT):
        raise InvalidContract(f"{what}: {kind} is not an ordered scalar")
    if kind is LogicalType.INT:
        exact_integer(value, what)
        if key and not -PORTABLE_INTEGER <= value <= PORTABLE_INTEGER:
            # Versioned JSON 5: portable keys stay within [-(2**53-1), 2**53-1], larger ones as
            # strings. Within it, a window's regions end at successor(high), still exact.
            raise InvalidContract(
                f"{what}: integer key values stay within [-(2**53-1), 2**53-1]; send larger "
                "ones as strings"
            )
    return check_scalar(value, kind, what)


PORTABLE_INTEGER = 2**53 - 1


def _require_position(value: Position, kind: type[int] | type[str], what: str) -> None:
    if type_of(value) is not (LogicalType.INT if kind is int else LogicalType.STR):
        raise InvalidContract(
            f"{what}: this table's positions are "
            f"{'integers' if kind is int else 'strings'}, got {value!r}"
        )
