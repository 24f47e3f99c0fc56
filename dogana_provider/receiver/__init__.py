"""The reference receiver: stage, check, decide and publish deliveries in a SQL database."""

from dogana_provider.receiver.receiver import Decision, Receiver, Snapshot, UnknownTable
from dogana_provider.receiver.store import Store, Verified

__all__ = ["Decision", "Receiver", "Snapshot", "Store", "UnknownTable", "Verified"]
