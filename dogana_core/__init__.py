"""The dogana protocol, wire format version 4: decisions from declarations, standard library only.

dogana remembers two dates for every region of a table: complete_as_of (nothing is missing) and
deletions_as_of (nothing deleted is still here). A delivery never raises a date above what its
declarations prove. This package decides from declarations and the ledger alone; it never reads
rows or bytes. The public names are re-exported here.
"""

from dogana_core.contract import Contract, column_hash, odcs_column_hash
from dogana_core.errors import (
    DoganaError,
    InconsistentPublication,
    InvalidContract,
    PlanningError,
    RejectedDelivery,
    SerializationError,
)
from dogana_core.manifest import Manifest
from dogana_core.shape import Checkpoint, Coverage, Deletions, Shape
from dogana_core.values import LogicalType
from dogana_core.wire import WIRE_VERSION, Wire

__all__ = [
    "WIRE_VERSION",
    "Checkpoint",
    "Contract",
    "Coverage",
    "Deletions",
    "DoganaError",
    "InconsistentPublication",
    "InvalidContract",
    "LogicalType",
    "Manifest",
    "PlanningError",
    "RejectedDelivery",
    "SerializationError",
    "Shape",
    "Wire",
    "column_hash",
    "odcs_column_hash",
]
