"""OpenLineage for dogana's operators: datasets named as Airflow's SQL providers name them, facets.

apache-airflow-providers-openlineage is an optional extra (airflow-provider-dogana[openlineage]):
each operator's ``get_openlineage_facets_on_*`` imports this module only when that provider asks,
so without it nothing here is loaded.

Names: a table is the dataset a lineage system already knows from other tasks, because its
namespace and name come from the connection's own hook, as common-sql's SQLParser builds them:
``get_openlineage_database_info`` (the scheme and ``host:port`` authority), the database it names
and ``get_openlineage_default_schema`` (PostgreSQL's current schema), so a PostgreSQL table is
``postgres://host:5432`` / ``database.schema.table`` and a MySQL or MariaDB one
``mysql://host:3306`` / ``database.table``. SqliteHook names none; a SQLite table is
``sqlite://<path of the database file>`` / ``table``. A delivered file follows OpenLineage's
naming of files: ``file`` / its path, or ``<scheme>://<bucket>`` / its key.

Facets: a schema from the contract's columns (and the file's or the published table's when they
are known), column lineage (each column from its namesake upstream), DataQualityAssertions from a
receipt's checks, and ``dogana``: DoganaDatasetFacet, the table's claims (state, complete_as_of,
deletions_as_of, exact_as_of, publication_id, window), whose JSON Schema ships beside this file
and is served by the dogana plugin of the API server, the facet's _schemaURL (schema_url).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import attr
from airflow.providers.common.compat.openlineage.facet import (
    ColumnLineageDatasetFacet,
    Dataset,
    DatasetFacet,
    Fields,
    InputDataset,
    InputField,
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)
from airflow.providers.openlineage.extractors import OperatorLineage
from airflow.providers.openlineage.sqlparser import SQLParser
from openlineage.client.generated.column_lineage_dataset import Transformation
from openlineage.client.generated.data_quality_assertions_dataset import (
    Assertion,
    DataQualityAssertionsDatasetFacet,
)

from dogana_core.claims import NO_LIMIT, Claims
from dogana_core.contract import Contract
from dogana_core.gate import Receipt
from dogana_core.ledger import Ledger
from dogana_provider.checks.expectations import MET, NONE_DECLARED, column_of, reported
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.arguments import window_of

FACET = "dogana"
SCHEMA_PATH = "dogana/schemas/openlineage/DoganaDatasetFacet.json"
"""Where the Airflow API server serves the facet's JSON Schema, DoganaDatasetFacet.json beside
this file: the dogana plugin's app (ui/app.py), under the deployment's own address."""


def schema_url() -> str:
    """The facet schema's address under the deployment's ``[api] base_url``, which a lineage
    system's reader of the event can reach as it reaches Airflow's UI."""
    from airflow.configuration import conf

    base = conf.get("api", "base_url", fallback=None) or "http://localhost:8080/"
    return urljoin(base.rstrip("/") + "/", SCHEMA_PATH)


@attr.define
class DoganaDatasetFacet(DatasetFacet):
    """A table's claims when the event was emitted: which rows to trust, and as of when."""

    state: str
    complete_as_of: str | None = attr.field(default=None)
    deletions_as_of: str | None = attr.field(default=None)
    exact_as_of: str | None = attr.field(default=None)
    publication_id: str | None = attr.field(default=None)
    window: list[Any] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{schema_url()}#/$defs/DoganaDatasetFacet"


# Names ------------------------------------------------------------------------------------------


def table_dataset(conn_id: str, table: str, facets: Mapping[str, Any] | None = None) -> Dataset:
    """A table of a common-sql connection, named as that connection's provider names it."""
    namespace, name = table_name(conn_id, table)
    return Dataset(namespace=namespace, name=name, facets=dict(facets or {}))


def table_name(conn_id: str, table: str) -> tuple[str, str]:
    """(namespace, name) of a table, possibly schema-qualified, behind a connection id."""
    from airflow.sdk import BaseHook

    connection = BaseHook.get_connection(conn_id)
    db_hook = connection.get_hook()
    try:
        info = db_hook.get_openlineage_database_info(connection)
    except AttributeError:
        info = None
    parts = table.split(".")
    if info is None:  # SqliteHook: no OpenLineage naming of its own
        return f"sqlite://{connection.host}", table
    schema = parts[-2] if len(parts) > 1 else db_hook.get_openlineage_default_schema()
    schema = schema or connection.schema  # MySQL: no schema but the database itself
    name = ".".join(p for p in (info.database, schema, parts[-1]) if p)
    return SQLParser.create_namespace(info), info.normalize_name_method(name)


def file_dataset(uri: str, facets: Mapping[str, Any] | None = None) -> Dataset:
    """A delivered file, by OpenLineage's naming of files: local path, or bucket and key."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file", "local"):
        return Dataset(namespace="file", name=parts.path, facets=dict(facets or {}))
    namespace = f"{parts.scheme}://{parts.netloc}"
    return Dataset(namespace=namespace, name=parts.path.lstrip("/"), facets=dict(facets or {}))


def with_assertions(dataset: Dataset, receipt: Receipt) -> InputDataset:
    """An input dataset carrying the receipt's checks as DataQualityAssertions."""
    return InputDataset(
        namespace=dataset.namespace,
        name=dataset.name,
        facets=dataset.facets,
        inputFacets={"dataQualityAssertions": assertions(receipt)},
    )


# Facets -----------------------------------------------------------------------------------------


def schema(columns: Iterable[tuple[str, str]]) -> SchemaDatasetFacet:
    return SchemaDatasetFacet(
        fields=[SchemaDatasetFacetFields(name=name, type=str(kind)) for name, kind in columns]
    )


def contract_columns(contract: Contract) -> list[tuple[str, str]]:
    """The columns the contract declares, with their logical types: key columns first."""
    types = dict(contract.types)
    named = [*contract.key]
    for column in (contract.window_column, contract.cursor_column, contract.deleted_column):
        if column is not None and column not in named:
            named.append(column)
    named += [column for column in types if column not in named]
    return [(column, str(types.get(column, "unknown"))) for column in named]


def column_lineage(columns: Iterable[str], upstream: Dataset) -> ColumnLineageDatasetFacet:
    """Each column from its namesake in upstream, its values copied unchanged."""
    copied = Transformation(type="DIRECT", subtype="IDENTITY", description="copied as read")
    return ColumnLineageDatasetFacet(
        fields={
            column: Fields(
                inputFields=[
                    InputField(
                        namespace=upstream.namespace,
                        name=upstream.name,
                        field=column,
                        transformations=[copied],
                    )
                ]
            )
            for column in columns
        }
    )


def assertions(receipt: Receipt) -> DataQualityAssertionsDatasetFacet:
    """Every check of the receipt: the core's and the receiver's row checks, passed or failed,
    and each quality expectation, successful when met: a warned violation passes its Check
    (the delivery is published) but is no successful assertion; a column expectation's assertion
    names its column. The check saying none is declared asserts nothing and is left out."""
    quality = {check.name for check in reported(receipt).checks}
    return DataQualityAssertionsDatasetFacet(
        assertions=[
            Assertion(
                assertion=check.name,
                success=check.detail.startswith(MET) if check.name in quality else check.passed,
                column=column_of(check.name) if check.name in quality else None,
                description=check.detail or None,
            )
            for check in receipt.checks
            if check.name != NONE_DECLARED
        ]
    )


def claims_facet(
    claims: Claims, publication_id: str | None, window: Sequence[Any] | None
) -> DoganaDatasetFacet:
    return DoganaDatasetFacet(
        state=str(claims.state),
        complete_as_of=_iso(claims.complete_as_of),
        deletions_as_of=_iso(claims.deletions_as_of),
        exact_as_of=_iso(claims.exact_as_of),
        publication_id=publication_id,
        window=None if window is None else [_plain(end) for end in window],
    )


# Receiver tables --------------------------------------------------------------------------------


def receiver_tables(
    conn_id: str,
    tables: Sequence[str],
    *,
    windows: Mapping[str, Any] | None = None,
    columns: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    upstream: Mapping[str, Dataset] | None = None,
) -> list[Dataset]:
    """The receiver's tables, each with its schema and its claims now (over its window in
    windows, [low, high] as a DAG author writes it), read in one committed state; a table not
    registered yet is named without facets.

    columns: a table's columns when known (the published ones), else the contract's; upstream:
    the dataset its columns were copied from (the delivered file), for column lineage.
    """
    from dogana_provider.receiver.receiver import UnknownTable

    hook = DoganaHook(conn_id)
    ledgers: dict[str, Ledger] = {}
    try:
        with hook.committed() as connection:
            for table in tables:
                state = hook.receiver.store.state(connection, table)
                if state is not None:
                    ledgers[table] = state.ledger
    except UnknownTable:  # nothing was ever registered in this receiver
        pass
    now = datetime.now(UTC)
    found = []
    for table in tables:
        ledger = ledgers.get(table)
        if ledger is None:
            found.append(table_dataset(conn_id, table))
            continue
        window = window_of(ledger.contract, (windows or {}).get(table), f"window[{table!r}]")
        claims = ledger.claims(now, limit=NO_LIMIT, window=window)
        shown = (columns or {}).get(table) or contract_columns(ledger.contract)
        facets: dict[str, Any] = {
            "schema": schema(shown),
            FACET: claims_facet(claims, ledger.publication_id, window),
        }
        source = (upstream or {}).get(table)
        if source is not None:
            facets["columnLineage"] = column_lineage([name for name, _ in shown], source)
        found.append(table_dataset(conn_id, table, facets))
    return found


def lineage(inputs: Sequence[Dataset] = (), outputs: Sequence[Dataset] = ()) -> OperatorLineage:
    return OperatorLineage(inputs=list(inputs), outputs=list(outputs))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, date | datetime) else value
