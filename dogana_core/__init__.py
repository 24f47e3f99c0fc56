"""The dogana protocol, wire format version 4: decisions from declarations, standard library only.

dogana remembers two dates for every region of a table: complete_as_of (nothing is missing) and
deletions_as_of (nothing deleted is still here). A delivery never raises a date above what its
declarations prove. This package decides from declarations and the ledger alone; it never reads
rows or bytes. The public names are re-exported here.
"""

from dogana_core.claims import Claims, RegionClaim, State
from dogana_core.contract import Contract, column_hash, odcs_column_hash
from dogana_core.errors import (
    DoganaError,
    InconsistentPublication,
    InvalidContract,
    PlanningError,
    RejectedDelivery,
    SerializationError,
)
from dogana_core.gate import Check, Gate, Outcome, Receipt, Transition
from dogana_core.group import Group, plan_together
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest
from dogana_core.plan import Action, ActionKind, ApplyPlan
from dogana_core.planner import ExtractionRequest, Requirement, next_extraction, plan_delivery
from dogana_core.region import Region
from dogana_core.shape import Checkpoint, Coverage, Deletions, Shape
from dogana_core.values import LogicalType
from dogana_core.wire import WIRE_VERSION, Wire

__all__ = [
    "WIRE_VERSION",
    "Action",
    "ActionKind",
    "ApplyPlan",
    "Check",
    "Checkpoint",
    "Claims",
    "Contract",
    "Coverage",
    "Deletions",
    "DoganaError",
    "ExtractionRequest",
    "Gate",
    "Group",
    "InconsistentPublication",
    "InvalidContract",
    "Ledger",
    "LogicalType",
    "Manifest",
    "Outcome",
    "PlanningError",
    "Receipt",
    "Region",
    "RegionClaim",
    "RejectedDelivery",
    "Requirement",
    "SerializationError",
    "Shape",
    "State",
    "Transition",
    "Wire",
    "column_hash",
    "next_extraction",
    "odcs_column_hash",
    "plan_delivery",
    "plan_together",
]
