"""The wire kinds: every structured value that travels as versioned JSON.

The protocol names fourteen. Each is listed here once, by the module that defines it, and is
imported only when asked for, so this module imports nothing else of dogana_core and a kind whose
module does not exist yet is simply not listed. Adding a kind is one line in KINDS.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dogana_core.wire import Wire

KINDS: tuple[tuple[str, str], ...] = (
    ("Shape", "dogana_core.shape"),
    ("Contract", "dogana_core.contract"),
    ("Manifest", "dogana_core.manifest"),
    ("Region", "dogana_core.region"),
    ("Ledger", "dogana_core.ledger"),
    ("Check", "dogana_core.receipt"),
    ("Action", "dogana_core.plan"),
    ("ApplyPlan", "dogana_core.plan"),
    ("Transition", "dogana_core.receipt"),
    ("Receipt", "dogana_core.receipt"),
    ("RegionClaim", "dogana_core.claims"),
    ("Claims", "dogana_core.claims"),
    ("Requirement", "dogana_core.planner"),
    ("ExtractionRequest", "dogana_core.planner"),
)
"""(kind, module) for the fourteen wire kinds, in the order the protocol introduces them."""


def wire_kinds() -> tuple[type[Wire], ...]:
    """The wire classes that exist now, in KINDS order.

    A kind is left out only while its module or its class does not exist yet; any other error
    importing the module propagates, so a broken module is never mistaken for a missing one.
    """
    from dogana_core.wire import Wire

    found: list[type[Wire]] = []
    for name, module_name in KINDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        kind = getattr(module, name, None)
        if kind is None:
            continue
        if not (isinstance(kind, type) and issubclass(kind, Wire)) or kind.__name__ != name:
            raise TypeError(f"{module_name}.{name} is not the wire kind {name}")
        found.append(kind)
    return tuple(found)


def wire_kind(name: str) -> type[Wire]:
    """The wire class called name; KeyError when no such kind exists."""
    for kind in wire_kinds():
        if kind.__name__ == name:
            return kind
    raise KeyError(name)
