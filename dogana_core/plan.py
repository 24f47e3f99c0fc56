"""ApplyPlan: the operations a receiver runs on the published table for one accepted delivery.

The core describes operations and never reads rows. Five kinds exist:

- replace_all replaces the table with the candidate rows (a complete whole-table read);
- replace_window removes the published rows in its closed window, and earlier copies of the
  candidate's keys, then inserts the candidate (a complete window read);
- upsert replaces published rows sharing a key with a live candidate row, inserting the others;
- tombstone deletes the published rows whose keys the candidate's tombstones name;
- append inserts the candidate rows without matching anything (a keyless append).

key is the tuple of key columns an action matches on. It is empty for a keyless table, whose
rows have no identity, so a keyless replacement matches no keys: it removes its window and
inserts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from dogana_core.errors import InvalidContract
from dogana_core.region import before
from dogana_core.values import Scalar, type_of
from dogana_core.wire import Array, Choice, Nested, Optional, Text, Value, Wire, wire_field

if TYPE_CHECKING:
    from dogana_core.contract import Contract
    from dogana_core.manifest import Manifest


class ActionKind(StrEnum):
    REPLACE_ALL = "replace_all"
    REPLACE_WINDOW = "replace_window"
    UPSERT = "upsert"
    TOMBSTONE = "tombstone"
    APPEND = "append"


_NEEDS_KEY = frozenset({ActionKind.UPSERT, ActionKind.TOMBSTONE})


@dataclass(frozen=True)
class Action(Wire):
    """One operation; window (a closed pair) is named by replace_window and only by it."""

    # Not "kind": every wire dict's kind is its class name.
    operation: ActionKind = wire_field(Choice(ActionKind))
    window: tuple[Scalar, Scalar] | None = wire_field(
        Optional(Array(Value(), length=2)), default=None
    )
    key: tuple[str, ...] = wire_field(Array(Text(nonempty=True)), default=())

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "operation", ActionKind(self.operation))
        except ValueError:
            raise InvalidContract(
                f"Action.operation: {self.operation!r} is not an action kind"
            ) from None
        if isinstance(self.key, str) or not all(isinstance(c, str) and c for c in self.key):
            raise InvalidContract(f"Action.key: {self.key!r} must be a tuple of column names")
        object.__setattr__(self, "key", tuple(self.key))
        if self.operation in _NEEDS_KEY and not self.key:
            raise InvalidContract(
                f"Action.key: {self.operation} matches rows by key; a keyless table has none"
            )
        if self.operation is ActionKind.APPEND and self.key:
            raise InvalidContract("Action.key: append inserts without matching; it names no key")
        if (self.window is not None) is not (self.operation is ActionKind.REPLACE_WINDOW):
            raise InvalidContract("Action.window: named by replace_window, and only by it")
        if self.window is not None:
            low, high = self.window
            if type_of(low) is not type_of(high) or before(high, low):
                raise InvalidContract(f"Action.window: [{low!r}, {high!r}] is not a closed window")
            object.__setattr__(self, "window", (low, high))


@dataclass(frozen=True)
class ApplyPlan(Wire):
    """The ordered actions of one accepted delivery."""

    actions: tuple[Action, ...] = wire_field(Array(Nested(lambda: Action)))

    def __post_init__(self) -> None:
        actions = tuple(self.actions)
        if not actions or not all(isinstance(action, Action) for action in actions):
            raise InvalidContract("ApplyPlan.actions: a plan holds at least one Action")
        object.__setattr__(self, "actions", actions)

    @classmethod
    def for_delivery(cls, contract: Contract, manifest: Manifest) -> ApplyPlan:
        """The plan of a manifest that fits contract (Manifest.check has passed)."""
        shape = contract.shape(manifest.shape)
        key = contract.key
        if shape.is_complete:
            if shape.is_window:
                assert manifest.window is not None
                return cls((Action(ActionKind.REPLACE_WINDOW, manifest.window, key),))
            return cls((Action(ActionKind.REPLACE_ALL, key=key),))
        if not contract.keyed:
            return cls((Action(ActionKind.APPEND),))
        # A changed-only read holds one final row per key, live or tombstone, so the two
        # actions touch disjoint keys and their order does not change the result.
        actions = [Action(ActionKind.UPSERT, key=key)]
        if shape.has_tombstones:
            actions.append(Action(ActionKind.TOMBSTONE, key=key))
        return cls(tuple(actions))
