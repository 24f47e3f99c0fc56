"""The reference receiver: stage, check, decide and publish deliveries in a SQL database."""

import warnings
from typing import Any

from dogana_provider.receiver.receiver import Decision, Receiver, TableRead, UnknownTable
from dogana_provider.receiver.store import Store, Verified
from dogana_provider.receiver.together import GroupDecision

__all__ = [
    "Decision",
    "GroupDecision",
    "Receiver",
    "Store",
    "TableRead",
    "UnknownTable",
    "Verified",
]


def __getattr__(name: str) -> Any:
    """Snapshot, the earlier name of TableRead, still imports, with a DeprecationWarning."""
    if name == "Snapshot":
        warnings.warn(
            "dogana_provider.receiver.Snapshot is TableRead now", DeprecationWarning, stacklevel=2
        )
        return TableRead
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
