"""One error hierarchy for the protocol.

DoganaError is the root. InvalidContract covers every value that cannot exist (a contract, shape,
manifest or wire document that breaks a rule); SerializationError is the part of it raised while
reading JSON, before any value is built. RejectedDelivery, PlanningError and
InconsistentPublication are the three ways a decision can go wrong on valid values.
"""

from __future__ import annotations


class DoganaError(Exception):
    """Root of every error the protocol raises on purpose."""


class InvalidContract(DoganaError):
    """A value breaks a rule of the protocol and cannot be built."""


class SerializationError(InvalidContract):
    """Wire JSON that cannot be read: it names the field path and the rule broken."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class RejectedDelivery(DoganaError):
    """A delivery the protocol refuses; carries the rejection receipt when there is one."""

    def __init__(self, message: str, receipt: object | None = None) -> None:
        self.receipt = receipt
        super().__init__(message)


class PlanningError(DoganaError):
    """No admitted shape can establish a requirement."""


class InconsistentPublication(DoganaError):
    """Receipts that do not fold into a ledger: missing, reordered or foreign."""
