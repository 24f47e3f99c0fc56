"""ExtractOperator: one consistent snapshot of a SQL source, or one read of a connector,
written as a delivery.

    plan >> extract >> gate >> publish

It reads the planned request (the plan task's XCom) from any common-sql connection (SQLite,
PostgreSQL, MySQL/MariaDB) in ONE snapshot at or after the request's boundary
(dogana_provider.sources), streams the rows to Parquet under an ObjectStoragePath, and pushes

    {"manifest": <Manifest wire dict>, "uri": "<the file's URI>", "origin": <Origin dict>}

or, for a group read in one snapshot, a list of those, one per table, all with one produced_at.
The manifest's rows, tombstones and content_hash were counted and hashed while the file was
written. The origin names the source connection, the table read (or a query's digest) and
this task instance, for the publication's lineage edge (lineage/origin.py). XCom carries wire
dicts and a URI only: never rows, never a pickle, never credentials.

Given ``connector`` (a configuration for dogana_provider.connectors, such as a JSON Lines file),
it reads the request's shape from that connector's stream instead, and stamps the manifest from
what the read proves (connectors/extract.py): a contract whose shape claims more is refused.

The file goes to ``output_folder`` (``output`` is BaseOperator's XComArg), a folder URI, as
``<table>.parquet``: by default ``<[dogana] delivery_folder>/<dag>/<run>`` (settings.py;
file:///tmp/dogana unless configured), any ObjectStoragePath otherwise (s3:// and gs:// once
their provider is installed, any fsspec filesystem attached with airflow.sdk.io.attach). Into
the configured folder, an extract first sweeps its DAG's files older than ``[dogana]
delivery_retention`` (delivery/folders.py). A remote file is written locally first, where its bytes
are hashed, then copied up; the gate streams it back to a local temporary file before reading
it (GateOperator's local_file), so the receiver always reads a local path.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from airflow.sdk import BaseOperator, ObjectStoragePath
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from dogana_core.contract import Contract
from dogana_core.planner import ExtractionRequest
from dogana_core.shape import Checkpoint
from dogana_provider import settings
from dogana_provider.connectors import (
    GROUP_CONNECTORS,
    Connector,
    ConnectorError,
    RefusedRead,
    ReleasedPosition,
    connector_of,
    group_connector_of,
)
from dogana_provider.connectors.extract import extract as extract_stream
from dogana_provider.connectors.extract import wait_for
from dogana_provider.connectors.log_capture import FULL_READ, LogConnector, OneOfGroup, full_read
from dogana_provider.delivery import folders as deliveries
from dogana_provider.delivery.files import delivery_parts
from dogana_provider.delivery.folders import LOCAL_PROTOCOLS
from dogana_provider.dialects import dialect_for
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.hooks.sql import sql_hook
from dogana_provider.lineage.origin import Origin, of_file, of_query, without_credentials
from dogana_provider.operators.arguments import (
    contract_field,
    contract_of,
    duration,
    group_of,
    native,
    upstream_output,
)
from dogana_provider.operators.plan import PlanDeliveryOperator, full_read_command
from dogana_provider.operators.superseded import plan_tasks, planned, stale_read
from dogana_provider.schema.policy import SchemaPolicy
from dogana_provider.schema.proposals import held_versions, propose
from dogana_provider.schema.source_check import Expected, SchemaRefused, check_source, delivered
from dogana_provider.schema.versions import SchemaVersion
from dogana_provider.sources import Extracted, Read, Relation, extract, snapshots_for
from dogana_provider.sources.discover import SourceColumn, UndiscoverableSource, discover_columns
from dogana_provider.sources.parallel import checked_readers
from dogana_provider.sources.selection import UnsupportedRead
from dogana_provider.sources.snapshot import UnreadableSource


class ExtractOperator(BaseOperator):
    """Read a planned request from a SQL source in one snapshot and write it as a delivery.

    .. code-block:: python

        plan = PlanDeliveryOperator(task_id="plan", contract="contracts/orders.json",
                                    fresh_as_of=RUN_END)    # arguments.RUN_END
        extract = ExtractOperator(
            task_id="extract",
            source_conn_id="shop_db",              # sqlite, postgres or mysql
            contract="contracts/orders.json",
            deleted_flag="is_deleted",             # the source's soft-delete flag
            output_folder="s3://deliveries/orders/{{ dag_run.run_after | ds }}",  # default: local
        )                                          # request: the plan task's XCom
        plan >> extract >> GateOperator(task_id="gate") >> PublishOperator(task_id="publish")

        # A group planned together (plan_together): one snapshot, one produced_at.
        ExtractOperator(task_id="extract", source_conn_id="shop_db",
                        group=["contracts/invoices.json", "contracts/lines.json"],
                        table_sql={"lines": "SELECT * FROM invoice_lines WHERE valid"})

        # A JSON Lines file another system appends to, read from the ledger's position.
        ExtractOperator(task_id="extract", contract="contracts/orders.json",
                        connector={"kind": "jsonl", "path": "s3://drops/orders.jsonl",
                                   "key": ["order_id"], "whole_history": True})

    :param source_conn_id: the source's connection: sqlite, postgres or mysql (templated).
    :param connector: instead of source_conn_id, a connector's configuration, its "kind" and
        options (templated): the request is read from its stream, and the manifest stamped from
        what the read proves. One table, or with group a log connector's group configuration
        ("tables" for "table": pg_logical, mariadb_binlog), every table read at one position.
    :param stream: the connector's stream to read (templated; by default the contract's table).
    :param contract: the table's Contract, its wire dict, or a path to its JSON (templated).
    :param group: contracts of tables read together, instead of contract: every table is read
        in one snapshot with one produced_at, and the task pushes one delivery per table. A
        contract given as a list (a mapped element naming a group) is read as a group.
    :param request: the ExtractionRequest, its wire dict or JSON, or a list of them for a group
        (templated; by default the XCom of the PlanDeliveryOperator upstream, whatever its id).
    :param table_sql: a query to read instead of the table, or for a group a mapping from table
        to query (templated; a path ending in .sql is read as a template). The request's bounds
        are bound parameters it may use: since, until, produced_at, window_low, window_high,
        generation, written :since on SQLite and %(since)s on PostgreSQL and MySQL. The
        shape's filters are applied around it, so the delivery stays inside the declared bounds.
    :param source_table: the source's table when it is not named like the contract's, such as
        "sales.orders"; for a group a mapping from table to name (templated).
    :param columns: the table's columns to deliver, in order (by default all of them); for a
        group a mapping from table to such a list. A query (table_sql) selects its own.
    :param deleted_flag: the source's soft-delete flag when it is not named like the contract's
        deleted column (templated). A tombstone shape delivers flagged rows as tombstones, every
        other shape leaves them out; a null flag is a live row.
    :param column_types: logical types for columns neither the contract nor the driver types
        ({"amount": "decimal(12,2)"}); for a group a mapping from table to such a mapping.
    :param receiver_conn_id: the receiver's connection: with it, each table's source columns are
        discovered (a connector's: those its stream declares) and checked against the schema
        version the receiver holds before a row is read (dogana_provider/schema/); without it
        (None), nothing is checked before the read and the gate's column_types check alone
        refuses a retyped column. delivery_task_group passes its own.
    :param schema_policy: the table's schema policy ("evolve", "freeze", or a mapping of tables,
        columns, data_type to evolve / freeze / discard_value / discard_row), or for a group a
        mapping from table to one; by default tables evolve, columns evolve, data_type freeze.
        The held version's policy judges a change; this one governs the changes after it.
    :param output_folder: the folder the files go to, any fsspec URL (templated); by default
        <[dogana] delivery_folder>/<dag_id>/<run_id>, file:///tmp/dogana/... unless configured.
    :param max_wait: how long to wait for the source's clock to reach the request's boundary
        before failing (timedelta or seconds).
    :param settle_attempts: how many times to take the snapshot again when a commit falls
        between the clock reading and the snapshot (SQLite, PostgreSQL).
    :param fetch_rows: rows fetched from the server per batch.
    :param row_group_rows: rows per Parquet row group: what the writer holds in memory.
    :param readers: how many readers read each PostgreSQL table inside the one snapshot, each
        on its own connection importing the snapshot the read exported and reading a range of
        the table's pages into its own Parquet part (sources/parallel.py); the delivery is still
        one manifest, one produced_at, one publication. By default ``[dogana] readers`` (1).
        MySQL/MariaDB (no exported snapshot), SQLite and table_sql queries read with one and
        log why.
    """

    template_fields: Sequence[str] = (
        "source_conn_id",
        "connector",
        "stream",
        "receiver_conn_id",
        "contract",
        "request",
        "table_sql",
        "source_table",
        "deleted_flag",
        "output_folder",
    )
    template_fields_renderers = {"contract": "json"}
    template_ext: Sequence[str] = (".sql",)
    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        source_conn_id: str | None = None,
        connector: Mapping[str, Any] | None = None,
        stream: str | None = None,
        contract: Contract | dict | str | None = None,
        group: Sequence[Contract | dict | str] | None = None,
        request: Any = None,
        table_sql: str | Mapping[str, str] | None = None,
        source_table: str | Mapping[str, str] | None = None,
        columns: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
        deleted_flag: str | None = None,
        column_types: Mapping[str, Any] | None = None,
        receiver_conn_id: str | None = None,
        schema_policy: Any = None,
        output_folder: str | None = None,
        max_wait: timedelta | float = timedelta(minutes=5),
        settle_attempts: int = 20,
        fetch_rows: int = 10_000,
        row_group_rows: int = 131_072,
        readers: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        task_id = self.task_id
        if (contract is None) == (group is None):
            raise ValueError(f"{self.task_id}: give either contract (one table) or group")
        if (source_conn_id is None) == (connector is None):
            raise ValueError(f"{self.task_id}: give either source_conn_id or connector")
        if connector is not None and group is not None:
            kind = connector.get("kind")
            if kind not in GROUP_CONNECTORS:
                raise ValueError(
                    f"{self.task_id}: a {kind} connector reads one table; a group is read in "
                    "one snapshot of a SQL source, or in one read of a log by "
                    f"{', '.join(sorted(GROUP_CONNECTORS))}"
                )
        self.source_conn_id = source_conn_id
        self.connector = None if connector is None else dict(connector)
        self.stream = stream
        self.contract = contract_field(contract)
        self.group = None if group is None else list(group)
        self.request = request
        self.table_sql = table_sql
        self.source_table = source_table
        self.columns = columns
        self.deleted_flag = deleted_flag
        self.column_types = dict(column_types or {})
        self.receiver_conn_id = receiver_conn_id
        self.schema_policy = schema_policy
        _check_policy(schema_policy, self.task_id)
        self.output_folder = output_folder
        self.max_wait = duration(max_wait, "max_wait") or timedelta(0)
        self.settle_attempts = settle_attempts
        self.fetch_rows = fetch_rows
        self.row_group_rows = row_group_rows
        self.readers = None if readers is None else checked_readers(readers, f"{task_id}: readers")

    # Execution --------------------------------------------------------------------------------

    def execute(self, context: Any) -> Any:
        group = group_of(self.contract, self.group)
        if self.connector is not None:
            if group is not None:
                return self._group_from_connector(context, group)
            return self._from_connector(context)
        contracts = self._contracts(group)
        if self.request is None:
            self.request = upstream_output(self, context, PlanDeliveryOperator, "request")
        requests = self._requests(contracts, grouped=group is not None)
        folder = self._folder(context)
        hook = sql_hook(str(self.source_conn_id), "source")
        self._written: list[tuple[str, str, list[tuple[str, str]]]] = []  # for lineage
        source = snapshots_for(
            hook,
            max_wait=self.max_wait,
            settle_attempts=self.settle_attempts,
            fetch_rows=self.fetch_rows,
        )
        self.log.info(
            "source %s (%s): %d tables in one snapshot, boundary %s",
            self.source_conn_id,
            source.dialect,
            len(requests),
            max(r.until for r in requests).isoformat(),
        )
        readers = settings.readers() if self.readers is None else self.readers
        with tempfile.TemporaryDirectory(prefix="dogana-extract-") as scratch:
            reads = []
            for request in requests:
                contract = contracts[request.table.lower()]
                target = folder / f"{contract.table}.parquet"
                local = self._local_path(target, Path(scratch))
                reads.append(
                    Read(
                        contract,
                        request,
                        self._relation(contract),
                        local,
                        deleted_flag=self.deleted_flag,
                        column_types=self._column_types(contract.table),
                        readers=readers,
                    )
                )
            expected: dict[str, Expected] = {}
            if self.receiver_conn_id is not None:
                reads, expected = self._check_tables(hook, reads)
            try:
                done = extract(source, reads, row_group_rows=self.row_group_rows, overwrite=True)
            except (UnreadableSource, UnsupportedRead) as exc:
                # The message names the option; the connection is the other half of the fix.
                raise type(exc)(f"source connection {self.source_conn_id!r}: {exc}") from exc
            if expected:
                self._propose(expected, done)
            origins = {
                contract.table: self._origin(contract, context) for contract in contracts.values()
            }
            pushed = [self._deliver(item, folder, origins[item.manifest.table]) for item in done]
        return pushed if group is not None else pushed[0]

    def _from_connector(self, context: Any) -> dict[str, Any]:
        """The request read from the connector's stream, the manifest stamped from its proof."""
        contract = contract_of(self.contract, "contract")
        if self.request is None:
            self.request = upstream_output(self, context, PlanDeliveryOperator, "request")
        [request] = self._requests({contract.table.lower(): contract}, grouped=False)
        folder = self._folder(context)
        connector = connector_of(native(self.connector, "connector"))
        stream = str(self.stream or contract.table)
        self._written = []
        self.log.info("%s connector, stream %s, shape %s", connector.kind, stream, request.shape)
        with tempfile.TemporaryDirectory(prefix="dogana-extract-") as scratch, connector:
            target = folder / f"{contract.table}.parquet"
            local = self._local_path(target, Path(scratch))
            expected = self._check_streams([(contract, request, connector, stream)])
            try:
                delivered = extract_stream(
                    connector,
                    stream,
                    contract,
                    request,
                    local,
                    max_wait=self.max_wait,
                    row_group_rows=self.row_group_rows,
                    overwrite=True,
                )
            except ConnectorError as exc:
                if isinstance(exc, ReleasedPosition):
                    self._released(exc, contract.table, context)
                self.log.error("%s connector refused the read: %s", connector.kind, exc)
                self._full_read(exc, connector, contract, context)
                raise
            self.log.info("the read proves: %s", delivered.proof.why)
            extracted = Extracted(delivered.path, delivered.manifest)
            self._propose(expected, [extracted])
            path = connector.config.get("path")
            origin = Origin(
                connector.config.get("conn_id"),
                of_file(str(path)) if path else stream,
                str(context["dag"].dag_id),
                str(context["run_id"]),
                self.task_id,
            )
            return self._deliver(extracted, folder, origin)

    def _group_from_connector(self, context: Any, group: list[Any]) -> list[dict[str, Any]]:
        """A group's tables in one read of the connector (one log position: a slot's LSN, a
        binlog's file:offset): a delivery per table, every one with the same produced_at and
        position. A refusal names the full read of every table, which resets the group."""
        contracts = self._contracts(group)
        if self.request is None:
            self.request = upstream_output(self, context, PlanDeliveryOperator, "request")
        requests = self._requests(contracts, grouped=True)
        config = native(self.connector, "connector")
        reader = group_connector_of(config)
        since = _group_since(contracts, requests)
        folder = self._folder(context)
        self._written = []
        wait_for(max(r.until for r in requests), self.max_wait, ", ".join(contracts))
        asked = [(contracts[r.table.lower()], r) for r in requests]
        members = {c.table: reader.member(c.table) for c, _ in asked}
        # One table's policy refusal refuses the group's read: its tables move together.
        expected = self._check_streams(
            [(c, r, members[c.table], members[c.table].table) for c, r in asked]
        )
        try:
            readings = reader.read(since)
        except ReleasedPosition as exc:
            self._released(exc, requests[0].table, context)
            raise
        except RefusedRead as exc:
            self.log.error("%s group refused the read: %s", reader.kind, exc)
            if FULL_READ in str(exc):
                # One table's refusal resets the group: every table read whole at once.
                self._fail_for_full_read(exc, context, *contracts.values())
            raise
        done: list[Extracted] = []
        origins: list[Origin] = []
        with tempfile.TemporaryDirectory(prefix="dogana-extract-") as scratch:
            for request in requests:
                contract = contracts[request.table.lower()]
                member = members[contract.table]
                target = folder / f"{contract.table}.parquet"
                with OneOfGroup(member, readings[member.table]) as one:
                    delivered = extract_stream(
                        one,
                        member.table,
                        contract,
                        request,
                        self._local_path(target, Path(scratch)),
                        row_group_rows=self.row_group_rows,
                        overwrite=True,
                    )
                done.append(Extracted(delivered.path, delivered.manifest))
                origins.append(
                    Origin(
                        config.get("conn_id"),
                        member.table,
                        str(context["dag"].dag_id),
                        str(context["run_id"]),
                        self.task_id,
                    )
                )
            self._propose(expected, done)
            pushed = [
                self._deliver(item, folder, origin)
                for item, origin in zip(done, origins, strict=True)
            ]
        self.log.info("the read proves: %s", delivered.proof.why)
        return pushed

    def _full_read(
        self, refused: ConnectorError, connector: Any, contract: Contract, context: Any
    ) -> None:
        """A log's refusal that only a full read mends fails the task (a retry reads the same
        log again) with the command that triggers one: a run of this DAG whose plan asks for
        the contract's complete shape (PlanDeliveryOperator's RUN_SHAPE)."""
        if not isinstance(connector, LogConnector) or full_read(connector.table) not in str(
            refused
        ):
            return
        self._fail_for_full_read(refused, context, contract)

    def _fail_for_full_read(
        self, refused: ConnectorError, context: Any, *contracts: Contract
    ) -> None:
        """Fail with the command that triggers the contracts' full read, where they have one."""
        command = full_read_command(str(context["dag"].dag_id), *contracts)
        if command is None:
            return
        self.log.error("to run the full read: %s", command)
        raise AirflowFailException(f"{refused}\nto run the full read: {command}") from refused

    def _released(self, refused: ReleasedPosition, table: str, context: Any) -> None:
        """A read from a position the log released: a stale plan when the receiver published
        past it since (skipped when the run's requirement is met, else failed asking for a new
        plan), and the connector's refusal otherwise: the changes are lost."""
        receivers = [self.receiver_conn_id] if self.receiver_conn_id is not None else []
        receivers += [plan.receiver_conn_id for plan in plan_tasks(self)]
        if not receivers:
            return
        stale = stale_read(DoganaHook(str(receivers[0])), table, refused, planned(self, context))
        if stale is None:
            return
        reason, superseded = stale
        self.log.info("%s", reason)
        if superseded:
            raise AirflowSkipException(reason) from refused
        command = f"airflow dags trigger {shlex.quote(str(context['dag'].dag_id))}"
        self.log.error("to plan again: %s", command)
        raise AirflowFailException(f"{reason}\nto plan again: {command}") from refused

    def _origin(self, contract: Contract, context: Any) -> Origin:
        """The source and this task instance, as the publication's lineage edge names them."""
        relation = self._relation(contract)
        return Origin(
            without_credentials(str(self.source_conn_id)),
            relation.table if relation.table is not None else of_query(str(relation.sql)),
            str(context["dag"].dag_id),
            str(context["run_id"]),
            self.task_id,
        )

    # The schema policy (dogana_provider/schema/) ---------------------------------------------

    def _check_tables(self, hook: Any, reads: list[Read]) -> tuple[list[Read], dict[str, Expected]]:
        """A SQL source's tables checked (_check_schemas), their columns from its catalog."""
        dialect = dialect_for(hook)
        connection = hook.get_conn()
        try:
            return self._check_schemas(
                reads,
                lambda read: discover_columns(connection, dialect, read.relation),
                f"source connection {self.source_conn_id!r}",
            )
        finally:
            connection.close()

    def _check_streams(
        self, tables: Sequence[tuple[Contract, ExtractionRequest, Connector, str]]
    ) -> dict[str, Expected]:
        """A connector's tables (each one's contract, request, connector and stream) checked as a
        SQL source's are (_check_schemas), where the receiver is known: the columns are those
        the stream declares it delivers. A log connector's stream is its table's catalog now,
        which its reads hold to the declared columns. The policy's ways of reading a change
        otherwise (a column left out, or read as the published type) are a snapshot read's: a
        connector delivers its stream as it is, so they fail the task instead."""
        if self.receiver_conn_id is None:
            return {}
        # A Read names what is judged (the contract, the stream as its relation); nothing
        # reads it: the connector's read follows.
        reads = [Read(c, request, Relation(table=stream), "") for c, request, _, stream in tables]
        connectors = {contract.table: connector for contract, _, connector, _ in tables}

        def columns(read: Read) -> list[SourceColumn]:
            stream = connectors[read.contract.table].stream(str(read.relation.table))
            return [SourceColumn(c.name, c.type, c.nullable, c.type) for c in stream.columns]

        kind = tables[0][2].kind
        _, expected = self._check_schemas(reads, columns, f"{kind} connector")
        unread = [
            f"{table}: the held version's policy reads "
            + ", ".join(
                [f"{c} not at all" for c in outcome.left_out]
                + [f"{c} as {t}" for c, t in outcome.read_as.items()]
            )
            for table, outcome in expected.items()
            if outcome.left_out or outcome.read_as
        ]
        if unread:
            raise AirflowFailException(
                f"{kind} connector: "
                + "; ".join(unread)
                + ": a connector delivers its stream's columns as they are, so nothing was read"
            )
        return expected

    def _check_schemas(
        self,
        reads: list[Read],
        discover: Callable[[Read], list[SourceColumn]],
        source: str,
    ) -> tuple[list[Read], dict[str, Expected]]:
        """Each table's source columns, discovered without reading a row, judged by the policy
        of the version the receiver holds: a change it forbids fails the task before any row is
        read (no retry: the source must change, or a person); the reads as the policy has them
        (columns left out, or read as the published type). discover is the one part a source
        does its own way: a SQL table's catalog, a connector's stream."""
        receiver = DoganaHook(str(self.receiver_conn_id)).receiver
        tables = [read.contract.table for read in reads]
        held = held_versions(receiver.connect, receiver.dialect, receiver.store.prefix, tables)
        checked: list[Read] = []
        expected: dict[str, Expected] = {}
        self._discovered: dict[str, list[SourceColumn]] = {}
        refused: list[str] = []
        for read in reads:
            try:
                found = discover(read)
            except UndiscoverableSource as exc:
                if self._declared_policy(read.contract.table) is not None:
                    refused.append(f"{read.contract.table}: no schema check is possible: {exc}")
                else:
                    self.log.info("%s: schema not checked: %s", read.contract.table, exc)
                checked.append(read)
                continue
            outcome = self._judge(read, found, held[read.contract.table])
            if isinstance(outcome, str):
                refused.append(outcome)
                checked.append(read)
                continue
            self.log.info("schema: %s", outcome.summary())
            self._discovered[read.contract.table] = found  # for OpenLineage
            expected[read.contract.table] = outcome
            checked.append(_as_policy_reads(read, found, outcome))
        if refused:
            raise AirflowFailException(f"{source}: " + "\n".join(refused))
        return checked, expected

    def _judge(
        self, read: Read, found: list[SourceColumn], held: SchemaVersion | None
    ) -> Expected | str:
        contract = read.contract
        types = {name: str(kind) for name, kind in contract.types}
        types.update({name: str(kind) for name, kind in read.column_types.items()})
        flag = read.deleted_flag or contract.deleted_column
        renames = {flag: contract.deleted_column} if flag and contract.deleted_column else {}
        never = (contract.deleted_column,) if contract.deleted_column else ()
        columns = delivered(found, types, renames=renames, never_published=never)
        declared = SchemaPolicy.of(self._declared_policy(contract.table))
        try:
            return check_source(contract.table, held, columns, declared)
        except SchemaRefused as exc:
            return str(exc)

    def _declared_policy(self, table: str) -> Any:
        policy = self.schema_policy
        if isinstance(policy, Mapping) and not set(policy) <= {"tables", "columns", "data_type"}:
            return policy.get(table)
        return policy

    def _propose(self, expected: Mapping[str, Expected], done: Sequence[Extracted]) -> None:
        """Note the versions these deliveries bring, published with them (versions.py)."""
        proposals = [
            (
                item.manifest.table,
                item.manifest.identity,
                found.columns,
                found.policy,
                found.judged,
            )
            for item in done
            if (found := expected.get(item.manifest.table)) is not None and found.record
        ]
        if proposals:
            receiver = DoganaHook(str(self.receiver_conn_id)).receiver
            propose(
                receiver.connect,
                receiver.dialect,
                receiver.store.prefix,
                proposals,
                datetime.now(UTC),
            )

    def _deliver(
        self, item: Extracted, folder: ObjectStoragePath, origin: Origin
    ) -> dict[str, Any]:
        manifest = item.manifest
        target = folder / f"{manifest.table}.parquet"
        parts = delivery_parts(item.path)  # the file, or the parts several readers wrote
        if target.protocol not in LOCAL_PROTOCOLS:
            # Copied up byte for byte: the hash the manifest declares is the local file's.
            if Path(item.path).is_dir():
                deliveries.delete(target)
            for part in parts:
                sink_path = target / part.name if Path(item.path).is_dir() else target
                with open(part, "rb") as source, sink_path.open("wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
        self.log.info(
            "%s: shape %s, %d rows, %d tombstones, produced_at %s, sha256 %s -> %s",
            manifest.table,
            manifest.shape,
            manifest.rows,
            manifest.tombstones,
            manifest.produced_at.isoformat(),
            manifest.content_hash,
            target,
        )
        columns = [(field.name, str(field.type)) for field in pq.read_schema(parts[0])]
        self._written.append((manifest.table, str(target), columns))
        return {"manifest": manifest.to_dict(), "uri": str(target), "origin": origin.to_dict()}

    # OpenLineage (apache-airflow-providers-openlineage, the extra "openlineage") ------------------

    def get_openlineage_facets_on_start(self) -> Any:
        from dogana_provider.lineage import openlineage as lineage

        return lineage.lineage(inputs=[s for s in self._sources().values() if s is not None])

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: the source's tables (those a table_sql reads, as common-sql's SQLParser finds
        them), each with the schema its catalog declared when the schema policy discovered it,
        so that a source's schema change is a change of its schema facet; outputs: each
        delivered file, with its columns and, read from a table, each column's lineage from its
        namesake there."""
        from dogana_provider.lineage import openlineage as lineage

        sources = self._sources()
        for table, found in getattr(self, "_discovered", {}).items():
            if sources.get(table) is not None:
                declared = lineage.schema((c.name, c.native or c.type) for c in found)
                sources[table] = lineage.table_dataset(
                    str(self.source_conn_id), self._relation_table(table), {"schema": declared}
                )
        outputs = []
        for table, uri, columns in getattr(self, "_written", []):
            facets: dict[str, Any] = {"schema": lineage.schema(columns)}
            source = sources.get(table)
            if source is not None:
                names = [name for name, _ in columns]
                facets["columnLineage"] = lineage.column_lineage(names, source)
            outputs.append(lineage.file_dataset(uri, facets))
        inputs = [s for s in sources.values() if s is not None] + self._sql_inputs()
        return lineage.lineage(inputs=inputs, outputs=outputs)

    def _relation_table(self, table: str) -> str:
        """The source table a contract's table is read from."""
        name = _per_table(self.source_table, table)
        return str(name) if name is not None else table

    def _sources(self) -> dict[str, Any]:
        """table -> the source table it is read from; None when a table_sql reads it."""
        from dogana_provider.lineage import openlineage as lineage

        found: dict[str, Any] = {}
        if self.connector is not None:
            return found
        for contract in self._contracts(group_of(self.contract, self.group)).values():
            relation = self._relation(contract)
            found[contract.table] = (
                None
                if relation.table is None
                else lineage.table_dataset(str(self.source_conn_id), relation.table)
            )
        return found

    def _sql_inputs(self) -> list[Any]:
        """The tables each table_sql reads, parsed by common-sql's OpenLineage SQL parser."""
        from airflow.providers.openlineage.sqlparser import get_openlineage_facets_with_sql

        found: list[Any] = []
        if self.connector is not None:
            return found
        hook = sql_hook(str(self.source_conn_id), "source")
        for contract in self._contracts(group_of(self.contract, self.group)).values():
            relation = self._relation(contract)
            if relation.sql is None:
                continue
            parsed = get_openlineage_facets_with_sql(
                hook, relation.sql, str(self.source_conn_id), None
            )
            found += [] if parsed is None else parsed.inputs
        return found

    # Arguments --------------------------------------------------------------------------------

    def _contracts(self, group: list[Any] | None) -> dict[str, Contract]:
        if group is None:
            items = [contract_of(self.contract, "contract")]
        else:
            items = [contract_of(c, f"group[{i}]") for i, c in enumerate(group)]
        return {contract.table.lower(): contract for contract in items}

    def _requests(
        self, contracts: Mapping[str, Contract], *, grouped: bool
    ) -> list[ExtractionRequest]:
        value = native(self.request, "request")
        if value is None:
            raise ValueError(f"{self.task_id}: no request; did the plan task upstream push one?")
        many = isinstance(value, list | tuple)
        if many != grouped:
            raise ValueError(
                f"{self.task_id}: "
                + (
                    "a group reads a list of requests, one per table"
                    if grouped
                    else "one contract reads one request; give group for a list"
                )
            )
        values = list(value) if many else [value]
        requests = [request_of(v, f"request[{i}]") for i, v in enumerate(values)]
        for request in requests:
            if request.table.lower() not in contracts:
                raise ValueError(
                    f"{self.task_id}: the request reads {request.table!r}, which no contract names"
                )
        return requests

    def _relation(self, contract: Contract) -> Relation:
        sql = _per_table(self.table_sql, contract.table)
        if sql is not None:
            return Relation(sql=str(sql))
        name = _per_table(self.source_table, contract.table)
        columns = _per_table(self.columns, contract.table)
        return Relation(
            table=str(name) if name is not None else contract.table,
            columns=None if columns is None else tuple(str(c) for c in columns),
        )

    def _column_types(self, table: str) -> dict[str, str]:
        types = self.column_types
        if types and all(isinstance(v, Mapping) for v in types.values()):
            return {k: str(v) for k, v in dict(types.get(table, {})).items()}
        return {k: str(v) for k, v in types.items()}

    def _folder(self, context: Any) -> ObjectStoragePath:
        if self.output_folder:
            folder = ObjectStoragePath(str(self.output_folder))
        else:
            dag_id, run_id = str(context["dag"].dag_id), str(context["run_id"])
            retention = settings.delivery_retention()
            swept = deliveries.sweep(
                deliveries.dag_folder(dag_id), retention, keep=deliveries.safe(run_id)
            )
            if swept:
                self.log.info(
                    "%d files older than %s removed from the delivery folder", swept, retention
                )
            folder = deliveries.run_folder(dag_id, run_id)
        executors = settings.distributed_executors()
        if folder.protocol in LOCAL_PROTOCOLS and executors:
            self.log.warning(
                "%s is a local folder, and %s may run the gate on another worker, which will "
                "not find it: set %s to a folder every worker sees",
                folder,
                ", ".join(executors),
                settings.named(settings.DELIVERY_FOLDER),
            )
        return folder

    def _local_path(self, target: ObjectStoragePath, scratch: Path) -> Path:
        if target.protocol in LOCAL_PROTOCOLS:
            local = Path(str(target.path))
            local.parent.mkdir(parents=True, exist_ok=True)
            return local
        return scratch / Path(str(target.path)).name


def request_of(value: Any, what: str = "request") -> ExtractionRequest:
    """An ExtractionRequest from itself, its wire dict, or its JSON or repr text."""
    if isinstance(value, ExtractionRequest):
        return value
    value = native(value, what)
    if isinstance(value, Mapping):
        return ExtractionRequest.from_dict(dict(value))
    raise ValueError(f"{what}: expected an ExtractionRequest or its wire dict, got {value!r}")


def _check_policy(policy: Any, task_id: str) -> None:
    """Refuse a schema policy that does not parse when the DAG is, not when it runs."""
    if policy is None:
        return
    entities = {"tables", "columns", "data_type"}
    if isinstance(policy, Mapping) and not set(map(str, policy)) <= entities:
        for table, item in policy.items():
            SchemaPolicy.of(item, f"{task_id}: schema_policy[{table!r}]")
        return
    SchemaPolicy.of(policy, f"{task_id}: schema_policy")


def _as_policy_reads(read: Read, found: list[SourceColumn], expected: Expected) -> Read:
    """read, with the columns the policy leaves out not read and narrowed ones read as held."""
    relation = read.relation
    if expected.left_out and relation.table is not None:
        left_out = set(expected.left_out)
        chosen = tuple(c.name for c in found if c.name not in left_out)
        relation = Relation(table=relation.table, columns=chosen)
    types = {**dict(read.column_types), **dict(expected.read_as)}
    return replace(read, relation=relation, column_types=types)


def _per_table(value: Any, table: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(table)
    return value


def _group_since(
    contracts: Mapping[str, Contract], requests: Sequence[ExtractionRequest]
) -> int | None:
    """Where a group's one read starts: None when every table is read whole, else the one
    position every table's ledger holds. Tables read at one log position move together."""
    whole = [
        contracts[r.table.lower()].shape(r.shape).checkpoint is Checkpoint.NONE for r in requests
    ]
    if all(whole):
        return None
    positions = {r.since for r in requests}
    asked = ", ".join(f"{r.table}: {r.shape} from {r.since}" for r in requests)
    if any(whole) or len(positions) != 1 or not isinstance(next(iter(positions)), int):
        raise ConnectorError(
            "a group read at one log position reads every table whole, or every table's changes "
            f"from one position; the plan asks {asked}: run one delivery of every table's "
            "complete shape, which resets the group's position (and a PostgreSQL group's slot)"
        )
    return int(next(iter(positions)))  # type: ignore[arg-type]
