"""Shape: what one kind of read proves, and what it costs to ask for.

A shape has coverage (the whole table or a closed window of the window column), deletions
(absence: a complete read proves what is missing was deleted; none; tombstone: deleted keys travel
as rows) and a checkpoint (none for complete reads; timestamp, generation or sequence for
changed-only reads). Exactly ten combinations are shapes:

    complete over the table or a window                                       2
    changed-only over the table by timestamp, generation or sequence,
        with or without tombstones                                            6
    changed-only over a window by timestamp, with or without tombstones       2

Generations and sequences are positions in the whole table, so no window shape uses them.
Rules that need the contract (keyless tables, lookback, the window column's type) are checked by
Contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum

from dogana_core.errors import InvalidContract, SerializationError
from dogana_core.values import DATETIME_MIN, DAY, MICROSECOND, exact_integer, utc
from dogana_core.wire import (
    Choice,
    DurationTag,
    Number,
    Optional,
    Wire,
    encode_duration,
    normalize_number,
    wire_field,
)


class Coverage(StrEnum):
    TABLE = "table"
    WINDOW = "window"


class Deletions(StrEnum):
    ABSENCE = "absence"
    NONE = "none"
    TOMBSTONE = "tombstone"


class Checkpoint(StrEnum):
    NONE = "none"
    TIMESTAMP = "timestamp"
    GENERATION = "generation"
    SEQUENCE = "sequence"


@dataclass(frozen=True, kw_only=True)
class Shape(Wire):
    """One kind of read. Build with keywords, or with Shape.complete / Shape.changes."""

    coverage: Coverage = wire_field(Choice(Coverage), default=Coverage.TABLE)
    deletions: Deletions = wire_field(Choice(Deletions), default=Deletions.ABSENCE)
    checkpoint: Checkpoint = wire_field(Choice(Checkpoint), default=Checkpoint.NONE)
    cost: int | float = wire_field(Number(), default=1)
    window_size: timedelta | None = wire_field(Optional(DurationTag()), default=None)
    lookback: timedelta = wire_field(DurationTag(), default=timedelta(0))

    def __post_init__(self) -> None:
        for name, enum in (
            ("coverage", Coverage),
            ("deletions", Deletions),
            ("checkpoint", Checkpoint),
        ):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                raise InvalidContract(
                    f"Shape.{name}: {getattr(self, name)!r} is not a {name}"
                ) from None
        complete = self.checkpoint is Checkpoint.NONE
        if complete and self.deletions is not Deletions.ABSENCE:
            raise InvalidContract(
                "Shape: a complete read (checkpoint none) proves deletions by absence"
            )
        if not complete and self.deletions is Deletions.ABSENCE:
            raise InvalidContract(
                f"Shape: a changed-only read ({self.checkpoint} checkpoint) has deletions "
                "none or tombstone"
            )
        if self.coverage is Coverage.WINDOW and self.checkpoint in (
            Checkpoint.GENERATION,
            Checkpoint.SEQUENCE,
        ):
            raise InvalidContract(
                f"Shape: {self.checkpoint}s are positions in the whole table; "
                "no window shape uses them"
            )
        if (
            isinstance(self.cost, bool)
            or not isinstance(self.cost, int | float)
            or (isinstance(self.cost, float) and not math.isfinite(self.cost))
            or not self.cost >= 0
        ):
            # JSON has no infinity: an infinite cost could not be written.
            raise InvalidContract(f"Shape.cost: {self.cost!r} must be a finite nonnegative number")
        if isinstance(self.cost, int):
            exact_integer(self.cost, "Shape.cost")
        object.__setattr__(self, "cost", normalize_number(self.cost))
        if self.window_size is not None:
            if not isinstance(self.window_size, timedelta) or self.window_size <= timedelta(0):
                raise InvalidContract(
                    f"Shape.window_size: {self.window_size!r} must be a positive duration"
                )
            if self.coverage is not Coverage.WINDOW:
                raise InvalidContract("Shape.window_size: only window shapes have a window size")
        if not isinstance(self.lookback, timedelta) or self.lookback < timedelta(0):
            raise InvalidContract(
                f"Shape.lookback: {self.lookback!r} must be a nonnegative duration"
            )
        if self.lookback and self.checkpoint is not Checkpoint.TIMESTAMP:
            raise InvalidContract("Shape.lookback: only timestamp shapes may look back")
        for name in ("window_size", "lookback"):
            duration = getattr(self, name)
            if duration is not None:
                try:
                    encode_duration(duration, f"Shape.{name}")
                except SerializationError as exc:
                    # A shape that could not be written is no value: refuse it when built.
                    raise InvalidContract(str(exc)) from None

    @classmethod
    def complete(
        cls, *, window: bool = False, cost: int | float = 1, window_size: timedelta | None = None
    ) -> Shape:
        """A complete read of the table, or of one closed window of the window column."""
        return cls(
            coverage=Coverage.WINDOW if window else Coverage.TABLE,
            cost=cost,
            window_size=window_size,
        )

    @classmethod
    def changes(
        cls,
        *,
        checkpoint: Checkpoint | str = Checkpoint.TIMESTAMP,
        tombstones: bool = False,
        window: bool = False,
        cost: int | float = 1,
        window_size: timedelta | None = None,
        lookback: timedelta = timedelta(0),
    ) -> Shape:
        """A changed-only read since a checkpoint, with deleted keys as tombstones or not at all."""
        return cls(
            coverage=Coverage.WINDOW if window else Coverage.TABLE,
            deletions=Deletions.TOMBSTONE if tombstones else Deletions.NONE,
            checkpoint=Checkpoint(checkpoint),
            cost=cost,
            window_size=window_size,
            lookback=lookback,
        )

    @property
    def is_complete(self) -> bool:
        return self.checkpoint is Checkpoint.NONE

    @property
    def is_window(self) -> bool:
        return self.coverage is Coverage.WINDOW

    @property
    def has_tombstones(self) -> bool:
        return self.deletions is Deletions.TOMBSTONE

    def window_ending_at(
        self, until: date | datetime
    ) -> tuple[date, date] | tuple[datetime, datetime]:
        """The rolling window of window_size that ends at until, both ends included.

        A date window is window_size whole UTC days ending on until's UTC date: thirty days ending
        October 19 start September 20. A datetime window is the inclusive elapsed duration at
        microsecond resolution: [until - window_size + 1 microsecond, until].
        """
        if self.window_size is None:
            raise InvalidContract("Shape.window_ending_at: the shape declares no window_size")
        if isinstance(until, datetime):
            until = utc(until, "Shape.window_ending_at")
            try:
                return (until - self.window_size + MICROSECOND, until)
            except OverflowError:
                return (DATETIME_MIN, until)
        days = self.window_size // DAY
        if self.window_size % DAY or days < 1:
            raise InvalidContract("Shape.window_size: a date window is a whole number of days")
        try:
            return (until - timedelta(days=days - 1), until)
        except OverflowError:
            return (date.min, until)
