"""What a DAG author writes, turned into dogana values.

Templated fields arrive as strings once Jinja has rendered them ("{{ data_interval_end }}" is
"2026-11-30 00:00:00+00:00", "{{ ti.xcom_pull(...) }}" the repr of a dict) unless the DAG
renders native objects or the field was given an XComArg; each helper takes both forms and
names the argument when a value does not fit.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import XComArg

from dogana_core.contract import Contract
from dogana_core.values import LogicalType

RUN_END = "{{ data_interval_end | default(dag_run.run_after, true) }}"
"""The instant a run stands for, as a template: "fresh as of the run's end".

A scheduled run's data interval ends when its schedule fires; a run created with a logical date
has the interval its timetable infers for that date. Airflow 3 creates a manual run (the REST
API's default, `airflow dags trigger`) and an asset-triggered run without a logical date, and
then without a data interval: data_interval_end is undefined in its templates, and the instant
the run stands for is its run_after (when it was triggered; for an asset-triggered run, when the
first Asset event it consumes was queued). run_end() is the same instant, from a task's context.
"""


BATCH = "batch"
"""The key of a batch of deliveries as contracts_in_folder(..., tasks=N) and batches() hand one
over, {"batch": [...]}, for DeliverOperator's contracts=. Marked, because wherever a contract is
taken a list of contracts is a group read together: a batch's plain list given as contract=
would be read as one group (one snapshot, one commit, all or nothing) rather than as the
independent deliveries its author meant. contract_of refuses it, naming contracts=."""


def batch_of(value: Any) -> list[Any] | None:
    """The deliveries of a batch marked as BATCH; None for anything else."""
    if isinstance(value, Mapping) and set(value) == {BATCH} and isinstance(value[BATCH], list):
        return list(value[BATCH])
    return None


def run_end(context: Any) -> datetime:
    """The run's data interval end, or its run_after when it has none (RUN_END's instant)."""
    end = context.get("data_interval_end")
    if end is None:
        end = context["dag_run"].run_after
    found = instant(end, "the run's end")
    assert found is not None, "a DAG run always has a run_after"
    return found


def instant(value: Any, what: str) -> datetime | None:
    """An aware datetime from a datetime or an ISO 8601 string; None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{what}: {value!r} is not an ISO 8601 datetime") from None
    if not isinstance(value, datetime):
        raise ValueError(f"{what}: expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what}: {value.isoformat()} carries no UTC offset; give an aware time")
    return value


def duration(value: Any, what: str) -> timedelta | None:
    """A timedelta from a timedelta or a number of seconds; None stays None."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        result = timedelta(seconds=value)
    else:
        raise ValueError(f"{what}: expected a timedelta or seconds, got {value!r}")
    if result < timedelta(0):
        raise ValueError(f"{what}: {value!r} is negative")
    return result


def native(value: Any, what: str) -> Any:
    """A JSON-like value from XCom: as it is, or parsed from the string Jinja rendered."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text == "None":
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(
            f"{what}: {text[:80]!r} is neither JSON nor a Python literal; pass the upstream "
            "task's output (XComArg) or a template that renders its XCom"
        ) from None


def upstream_output(task: Any, context: Any, kind: type, what: str) -> Any:
    """What the task upstream handed over, when the DAG author did not pass it: the XCom of the
    one direct upstream task of this kind (or of the only upstream task), found by the task's
    own dependencies, so the same operators work under any task id, inside any TaskGroup and
    inside a mapped one (Airflow picks the upstream instance of the same map index)."""
    upstream = list(task.upstream_list)
    found = [t for t in upstream if issubclass(getattr(t, "operator_class", type(t)), kind)]
    if not found and len(upstream) == 1:
        found = upstream
    if len(found) != 1:
        names = ", ".join(sorted(t.task_id for t in upstream)) or "none"
        raise ValueError(
            f"{task.task_id}: {what} not given, and no single upstream {kind.__name__} (or single "
            f"upstream task) hands it over (upstream tasks: {names}); pass {what}=<task>.output"
        )
    return XComArg(found[0]).resolve(context)


def group_of(contract: Any, group: Sequence[Any] | None) -> list[Any] | None:
    """The contracts of a group read together, or None for one table: group, or a contract
    given as a list (a mapped element that names a group rather than one table)."""
    if group is not None:
        return list(group)
    if isinstance(contract, str) and contract.lstrip().startswith("["):
        contract = native(contract, "contract")
    return list(contract) if isinstance(contract, list | tuple) else None


def contract_field(value: Any) -> Any:
    """A contract argument as an operator keeps it: a Contract as its wire dict, so Rendered
    Templates shows its JSON (template_fields_renderers) instead of a Python repr; a wire dict,
    JSON text or path as given. contract_of reads every form back."""
    if isinstance(value, Contract):
        return value.to_dict()
    if isinstance(value, list | tuple):  # a group's contracts, given as one argument
        return [contract_field(item) for item in value]
    return value


def contract_of(value: Any, what: str = "contract") -> Contract:
    """A Contract from a Contract, its wire dict, its JSON text, or a path to a JSON file."""
    if isinstance(value, Contract):
        return value
    batch = batch_of(value)
    if batch is not None:
        raise ValueError(_batch_as_contract(what, batch))
    if isinstance(value, Mapping):
        return Contract.from_dict(dict(value))
    if isinstance(value, Path | str):
        text = str(value)
        if text.lstrip().startswith("{"):
            return Contract.from_json(text)
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"{what}: {text!r} is not a contract's JSON nor a file holding one")
        return Contract.from_json(path.read_bytes())
    raise ValueError(f"{what}: expected a Contract, a wire dict or a path, got {value!r}")


def _batch_as_contract(what: str, batch: list[Any]) -> str:
    def named(item: Any) -> str:
        if isinstance(item, list):
            return "(" + ", ".join(named(contract) for contract in item) + ")"
        return str(item.get("table", "?")) if isinstance(item, Mapping) else "?"

    return (
        f"{what}: a batch of {len(batch)} deliveries ({', '.join(map(named, batch))}), as "
        "contracts_in_folder(..., tasks=N) and batches() hand them over, not a table or a "
        "group: nothing was delivered. Expand DeliverOperator over contracts= instead, "
        "DeliverOperator.partial(...).expand(contracts=...), which delivers each on its own; "
        "as contract= its tables would be read as one group"
    )


def window_of(contract: Contract, value: Any, what: str) -> tuple[Any, Any] | None:
    """A closed window [low, high] of contract's window column, strings read as its type."""
    value = native(value, what)
    if value is None:
        return None
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ValueError(f"{what}: a window is a pair [low, high], got {value!r}") from None
    kind = contract.window_type
    if kind is None:
        raise ValueError(f"{what}: table {contract.table!r} has no window column")
    return (_typed(low, kind, f"{what}[0]"), _typed(high, kind, f"{what}[1]"))


def _typed(value: Any, kind: LogicalType, what: str) -> Any:
    if not isinstance(value, str) or kind is LogicalType.STR:
        return value
    try:
        if kind is LogicalType.DATE:
            return date.fromisoformat(value)
        if kind is LogicalType.DATETIME:
            return instant(value, what)
        if kind is LogicalType.INT:
            return int(value)
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a {kind}") from None
    return value
