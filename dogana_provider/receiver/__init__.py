"""The reference receiver: stage, check, decide and publish deliveries in a SQL database."""

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
