"""Pipelines from contract files: one call in a DAG file turns a folder of contracts into DAGs.

    # dags/warehouse.py
    from dogana_provider.contract_files import contract_dags

    contract_dags("/opt/airflow/contracts", source_conn_id="shop_db", receiver_conn_id="warehouse")

Each file is one DAG, ``dogana_<file name>``, running plan, extract, gate and publish for its
table, or for its group of tables read together in one snapshot (delivery_task_group):

    *.yaml, *.yml   an ODCS v3 data contract (validated by the open-data-contract-standard
                    package, then mapped by dogana_core.odcs): one schema object is a table,
                    several are a group; the schedule and the requirement are the document's
                    customProperties doganaSchedule and doganaRequirement; its quality rules
                    are the tables' expectations where they map (checks/odcs.py).
    *.json          dogana's own: a Contract's wire JSON (the call's schedule and requirement),
                    or {"contracts": [<Contract>, ...], "schedule": ..., "requirement": ...,
                    "expectations": ..., "schema_policy": ...}: a table's quality
                    expectations (checks/expectations.py), or for a group a mapping from table to
                    them; its schema policy (schema/policy.py), or a group's by table. An
                    ODCS contract's schema policy is its customProperties doganaSchemaPolicy.

A file's expectations are its gate's (GateOperator's expectations=), stored in the receiver for
the table at each run. The file is the whole declaration: a table whose file declares none has
none, so a rule removed from the file stops being enforced rather than lingering. A delivery
mapped over contracts_in_folder takes them from expectations_in_folder of the same folder.

A file that does not parse, or that declares something dogana cannot prove (a tombstone shape
without a deleted column, a key column of no known type...), becomes no DAG: the dag-processor
shows an import error for this DAG file naming the contract file, the field and the rule, and
every other contract's DAG still loads. Airflow records one import error per DAG file, raised
when it validates each DAG found there; raising while the DAG file runs would hide them all,
so the broken files are gathered into one stand-in DAG whose validation fails with their names.
As for any DAG file, the dag-processor's safe mode reads it only if it says "airflow" and "dag".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import DAG, task

from dogana_core.contract import Contract
from dogana_core.errors import InvalidContract
from dogana_core.odcs import contracts_of_odcs, custom_properties, odcs_columns
from dogana_provider.checks.expectations import Expectations
from dogana_provider.checks.odcs import odcs_expectations
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.deliver import marked_batches
from dogana_provider.schema.policy import policies
from dogana_provider.task_groups.delivery import REQUIREMENT, delivery_task_group

SUFFIXES = (".json", ".yaml", ".yml")
START = datetime(2026, 1, 1, tzinfo=UTC)


class InvalidContractFile(ValueError):
    """A contract file that cannot become a pipeline: the file, the field and the rule."""


@dataclass(frozen=True)
class ContractFile:
    """One file's pipeline: its tables (several: a group), its schedule and its requirement."""

    path: Path
    contracts: tuple[Contract, ...]
    schedule: str | None = None
    requirement: Mapping[str, Any] = field(default_factory=dict)
    # ODCS: each table's columns and their types, what the source is read with
    columns: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    expectations: Mapping[str, Expectations] = field(default_factory=dict)
    """Each table's quality expectations, by table; a table declaring none is left out."""
    schema_policy: Mapping[str, Any] | None = None
    """Each table's schema policy (schema/policy.py) by table, when the file declares one."""

    def gate(self) -> dict[str, Any]:
        """delivery_task_group's expectations: each table's dict, by table, ``{}`` for a table
        declaring none. The file is the whole declaration: an expectation removed from it is
        removed from the receiver, rather than left enforcing a rule nobody declares."""
        return {"expectations": self.declared()}

    def declared(self) -> dict[str, Any]:
        """Every table's expectations as a dict (``{}``: none declared), by table."""
        none = Expectations()
        return {
            contract.table: self.expectations.get(contract.table, none).to_dict()
            for contract in self.contracts
        }

    def extract(self, schema_policy: Any = None) -> dict[str, Any]:
        """ExtractOperator's arguments for the declared columns, in order and with their types,
        and each table's schema policy: the file's, else schema_policy (the folder's default)."""
        found: dict[str, Any] = {}
        if self.columns:
            found["columns"] = {table: list(types) for table, types in self.columns.items()}
            found["column_types"] = {table: dict(t) for table, t in self.columns.items()}
        policy = self.schema_policy
        if policy is None and schema_policy is not None:
            policy = policies(schema_policy, [c.table for c in self.contracts], "schema_policy")
        if policy is not None:
            found["schema_policy"] = dict(policy)
        return found

    @property
    def name(self) -> str:
        """The file's name without its suffixes, as a DAG id may spell it."""
        stem = self.path.name.split(".", 1)[0]
        return re.sub(r"[^A-Za-z0-9_-]", "_", stem)


def read_contract_file(path: Path, *, schedule: str | None = None) -> ContractFile:
    """A contract file's pipeline, or InvalidContractFile naming the file, field and rule."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            return _from_json(path, json.loads(text), schedule)
        return _from_odcs(path, yaml.safe_load(text))
    except (InvalidContract, ValueError, yaml.YAMLError) as error:  # ValueError: JSON's, too
        raise InvalidContractFile(f"{path}: {_one_line(error)}") from None


def read_contract_folder(
    folder: str | Path, *, schedule: str | None = None
) -> tuple[list[ContractFile], list[InvalidContractFile]]:
    """Every contract file of a folder in name order: those that read, and those that do not."""
    files, errors = [], []
    for path in sorted(Path(folder).iterdir()):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        try:
            files.append(read_contract_file(path, schedule=schedule))
        except InvalidContractFile as error:
            errors.append(error)
    return files, errors


def contract_dags(
    folder: str | Path,
    *,
    source_conn_id: str,
    receiver_conn_id: str = DoganaHook.default_conn_name,
    schedule: str | None = None,
    dag_id_prefix: str = "dogana_",
    start_date: datetime = START,
    tags: Sequence[str] = ("dogana",),
    extract: Mapping[str, Any] | None = None,
    schema_policy: Any = None,
    **options: Any,
) -> dict[str, DAG]:
    """One DAG per contract file of folder, by DAG id; a stand-in DAG failing validation with
    every broken file's error, so that Airflow shows them as this DAG file's import error.

    schedule, schema_policy and options (a requirement, ExtractOperator's extract={...},
    every task's pool or retries) are the defaults; a file's own schedule, requirement and
    schema policy win (docs/schema-policy.md).
    """
    files, errors = read_contract_folder(folder, schedule=schedule)
    dags: dict[str, DAG] = {}
    for item in files:
        dag_id = f"{dag_id_prefix}{item.name}"
        with DAG(
            dag_id,
            schedule=item.schedule,
            start_date=start_date,
            catchup=False,
            max_active_runs=1,  # each read starts where the last one's evidence ends
            tags=list(tags),
            doc_md=f"Delivered from the contract file `{item.path}`.",
        ) as dag:
            contracts = list(item.contracts)
            delivery_task_group(
                contracts[0] if len(contracts) == 1 else None,
                group=None if len(contracts) == 1 else contracts,
                source_conn_id=source_conn_id,
                receiver_conn_id=receiver_conn_id,
                extract={**item.extract(schema_policy), **dict(extract or {})},
                **{**options, **item.requirement, **item.gate()},
            )
        dags[dag_id] = dag
    if errors:
        with BrokenContractFiles(f"{dag_id_prefix}contract_file_errors", errors) as dag:
            pass
        dags[dag.dag_id] = dag
    return dags


class BrokenContractFiles(DAG):
    """Stands for the contract files that became no DAG. The dag-processor validates each DAG
    of a file and records what validation raises as the file's import error, loading the
    file's other DAGs all the same: this DAG's validation raises every file's error."""

    def __init__(self, dag_id: str, errors: Sequence[InvalidContractFile]) -> None:
        message = "\n".join(str(error) for error in errors)
        super().__init__(dag_id, schedule=None, description=message[:1000])
        self.errors = message

    def validate(self) -> None:
        raise InvalidContractFile(self.errors)


def _from_json(path: Path, data: Any, schedule: str | None) -> ContractFile:
    if isinstance(data, Mapping) and "contracts" in data:
        unknown = set(data) - {
            "contracts",
            "schedule",
            "requirement",
            "expectations",
            "schema_policy",
        }
        if unknown:
            raise InvalidContract(f"{', '.join(sorted(unknown))}: not a field of a pipeline file")
        items = data["contracts"]
        if not isinstance(items, list) or not items:
            raise InvalidContract("contracts: a list of one Contract, or of a group's")
        contracts = tuple(_contract(item, f"contracts[{i}]") for i, item in enumerate(items))
        return ContractFile(
            path,
            contracts,
            data.get("schedule", schedule),
            _requirement(data.get("requirement"), "requirement"),
            expectations=_expectations(data.get("expectations"), contracts),
            schema_policy=_policy(data.get("schema_policy"), contracts, "schema_policy"),
        )
    return ContractFile(path, (_contract(data, "contract"),), schedule)


def _contract(data: Any, where: str) -> Contract:
    try:
        return Contract.from_dict(data)
    except (InvalidContract, ValueError) as error:
        raise InvalidContract(f"{where}: {error}") from None


def _from_odcs(path: Path, document: Any) -> ContractFile:
    from open_data_contract_standard.model import OpenDataContractStandard
    from pydantic import ValidationError

    if not isinstance(document, Mapping):
        raise InvalidContract("not an ODCS data contract: the document is not a mapping")
    try:
        OpenDataContractStandard.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidContract(f"{where}: {first['msg']} (ODCS v3)") from None
    custom = custom_properties(document, "")
    return ContractFile(
        path,
        tuple(contracts_of_odcs(document)),
        custom.get("doganaSchedule"),
        _requirement(custom.get("doganaRequirement"), "customProperties.doganaRequirement"),
        odcs_columns(document),
        odcs_expectations(document),
        schema_policy=_policy(
            custom.get("doganaSchemaPolicy"),
            contracts_of_odcs(document),
            "customProperties.doganaSchemaPolicy",
        ),
    )


def _expectations(value: Any, contracts: Sequence[Contract]) -> dict[str, Expectations]:
    """A file's "expectations": one table's (column_mapping, checks), or a group's by table."""
    if value is None:
        return {}
    tables = [contract.table for contract in contracts]
    if isinstance(value, Mapping) and set(value) <= {"column_mapping", "checks"}:
        if len(tables) > 1:
            raise InvalidContract(
                f"expectations: the file is a group ({', '.join(tables)}): give them by table"
            )
        return {tables[0]: Expectations.from_dict(value)}
    if not isinstance(value, Mapping):
        raise InvalidContract("expectations: a table's (column_mapping, checks), or by table")
    unknown = [str(table) for table in value if table not in tables]
    if unknown:
        raise InvalidContract(
            f"expectations: {', '.join(unknown)}: not a table of the file ({', '.join(tables)})"
        )
    return {
        table: Expectations.from_dict(item, f"expectations.{table}")
        for table, item in value.items()
    }


def _policy(value: Any, contracts: Sequence[Contract], where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    return policies(value, [contract.table for contract in contracts], where)


def _requirement(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or set(value) - set(REQUIREMENT):
        raise InvalidContract(f"{where}: a mapping of {', '.join(REQUIREMENT)}")
    return dict(value)


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


@task
def contracts_in_folder(folder: str, tasks: int | None = None) -> list[Any]:
    """The contracts of a folder's files, read when the task runs, as wire dicts (a list of
    them for a file declaring a group): what a mapped delivery expands over. A broken file
    fails the task naming every broken file, rather than delivering the others unnoticed.

    With tasks, the contracts in that many batches instead (in_batches), each marked as a
    batch, for a DeliverOperator mapped over contracts=, one task a batch: the batches made in
    this task, without a task of their own to start and wait for (mapped over contract=, a
    batch is refused, never read as a group)::

        DeliverOperator.partial(task_id="deliver", ...).expand(
            contracts=contracts_in_folder(folder, tasks=2)  # the cores the workers have
        )
    """
    files, errors = read_contract_folder(folder)
    if errors:
        raise InvalidContractFile("\n".join(str(error) for error in errors))
    found = [
        item.contracts[0].to_dict()
        if len(item.contracts) == 1
        else [contract.to_dict() for contract in item.contracts]
        for item in files
    ]
    return found if tasks is None else marked_batches(found, tasks=tasks)


@task
def expectations_in_folder(folder: str) -> dict[str, Any]:
    """The quality expectations of a folder's files, read when the task runs: every table's
    (``{}`` for one declaring none), by table, for the gates of a delivery mapped over
    contracts_in_folder of the same folder::

        delivery_task_group.partial(
            source_conn_id="shop_db",
            receiver_conn_id="warehouse",
            expectations=expectations_in_folder(folder),
        ).expand(contract=contracts_in_folder(folder))

    A broken file fails the task naming every broken file, as contracts_in_folder does."""
    files, errors = read_contract_folder(folder)
    if errors:
        raise InvalidContractFile("\n".join(str(error) for error in errors))
    return {table: item for found in files for table, item in found.declared().items()}
