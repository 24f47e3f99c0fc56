"""GateOperator: the receiver's steps 1 to 3 on one delivery, handing the decision to publish.

    1. receipt lookup: a manifest already accepted is a replay, answered with its receipt
    2. Gate.preflight against the ledger
    3. the rows staged beside (not into) the published table, row checks in SQL, Gate.evaluate

A delivery comes from the extract task's XCom ({"manifest": <Manifest wire dict>, "uri": ...},
or a list of them for a group read in one snapshot) or from a drop folder where a sender left a
file and its manifest sidecar FILE.json: pushed and pulled deliveries pass the same gate.

A table's quality expectations (checks/expectations.py) run in step 3 with the row checks. Declared
here (``expectations=``), they are stored in the receiver for the table before deciding, replacing
what it held; not given, the receiver's stay as they are. The log states each one's result: a
violated ``warn`` is logged as a warning and published; a violated ``block`` (or ``hold``) rejects;
a table declaring none says ``none_declared``.

It pushes the Decision's wire dict (the receipt and where the staged rows wait), under
"origins" where each table's rows came from (the extract's origin, lineage/origin.py; for a
file a sender pushed, the file and this task instance), and under "delivered" the URIs of the
files it read, which publish removes once published when they lie in the configured delivery
folder (delivery/folders.py); other files are their owner's.
A local file missing fails the task naming the setting to change ([dogana] delivery_folder),
as under a distributed executor a run's gate may run on another worker than its extract. A
rejection is
saved as a receipt by the receiver and FAILS the task with every failed check, named; it is not
retried, since the same delivery would be refused again. A replay succeeds, and publish then
changes nothing.

A held delivery (an expectation declared on_violation="hold" was violated, receiver/holds.py) is
shown in the log for a person: each held expectation, the rows violating it (up to show_rows,
through report/table.py's text_table) and their count, and the exact commands that release or
discard it; a group held whole shows each held table's. The task then fails, not retried, so the
publish task never runs and the on-call is alerted. Once a person has released it, clearing the task
finds the release's acceptance as a replay, and the publish task emits the Asset event a publication
owes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, ObjectStoragePath
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from dogana_core.contract import Contract
from dogana_core.gate import Outcome, Receipt
from dogana_core.group import Group
from dogana_core.manifest import Manifest
from dogana_provider.checks.expectations import (
    NONE_DETAIL,
    Expectations,
    InvalidExpectation,
    reported,
)
from dogana_provider.delivery import folders as deliveries
from dogana_provider.delivery.folders import LOCAL_PROTOCOLS, missing_delivery
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.lineage.origin import Origin, of_file
from dogana_provider.operators.arguments import contract_field, contract_of, native, upstream_output
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.superseded import planned, superseded, superseded_group
from dogana_provider.receiver.receiver import Decision, Receiver
from dogana_provider.report.holds import held_names, hold_lines
from dogana_provider.report.receipts import receipt_line

SWEEP_AFTER = timedelta(days=1)
"""How long a decision's staging table waits for its publish before a gate sweeps it."""
SHOW_ROWS = 20
"""How many rows violating a held expectation the log shows, beside their count."""
SIDECAR_SUFFIX = ".json"
DELIVERED = "delivered"  # beside the decision in the XCom: the files publish removes
ORIGINS = "origins"  # beside it too: where each table's rows came from, for its lineage edge


class GateOperator(BaseOperator):
    """Decide a delivery: replay, preflight, staged row checks, evaluate.

    :param receiver_conn_id: the receiver's connection (sqlite, postgres or mysql).
    :param delivery: {"manifest": <Manifest wire dict>, "uri": "<file uri>"}, or a list of them
        for a group (templated; by default the XCom of the ExtractOperator upstream, or of the
        only upstream task, whatever its id). The uri is a local
        path, a file:// URI or any fsspec URL, which is streamed to a temporary file first.
    :param drop_folder: instead of delivery, a folder where senders leave FILE and its manifest
        sidecar FILE.json (templated). Files are taken in name order; those already published
        are replays and passed over; the first new one is decided. Nothing new: the task skips.
    :param pattern: which files of the drop folder are deliveries (a glob, templated).
    :param contract: the table's Contract, its wire dict or a path to its JSON, registered (or
        evolved) before deciding: pushed deliveries have no plan task to register it (templated).
    :param table: the table this task gates, or the tables of a group; by default the
        contract's table. A delivery for any other table is refused, recorded as a rejection
        under the configured table naming both, and fails the task: a sender never chooses
        the table. With neither, the delivery's manifest names it.
    :param expectations: the table's quality expectations (an Expectations, or its dict of
        common-sql's ``column_mapping`` and ``checks`` with an ``on_violation`` each), or for a
        group a mapping from table to them. Stored in the receiver before deciding, replacing
        what it held; ``{}`` declares none. None (the default): the receiver's stay as they are.
    :param show_rows: on a held delivery, how many of the rows violating each held expectation
        the task's log shows, beside their count (default 20).
    :param sweep_after: before deciding, the receiver's staging tables nothing will use are
        dropped (Receiver.sweep): those of a recorded decision or of a killed load at once, and
        those of a decision not published within sweep_after (default a day; it must be longer
        than a decision waits for its publish). None: never sweep here.
    """

    template_fields: Sequence[str] = (
        "receiver_conn_id",
        "delivery",
        "drop_folder",
        "pattern",
        "contract",
        "expectations",
    )
    template_fields_renderers = {"contract": "json", "expectations": "json"}

    def __init__(
        self,
        *,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        delivery: Any = None,
        drop_folder: str | None = None,
        pattern: str = "*",
        contract: Contract | dict | str | None = None,
        table: str | Sequence[str] | None = None,
        sweep_after: timedelta | None = SWEEP_AFTER,
        expectations: Expectations | Mapping[str, Any] | None = None,
        show_rows: int = SHOW_ROWS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.show_rows = show_rows
        # Kept as JSON, read at run time: an upstream task's output (expectations_in_folder)
        # arrives only then. A value given in the DAG is checked now, when the DAG is parsed.
        self.expectations = expectations_field(expectations, f"{self.task_id}: expectations")
        self.contract = contract_field(contract)
        self.table = table
        self.sweep_after = sweep_after
        self.receiver_conn_id = receiver_conn_id
        self.delivery = delivery
        self.drop_folder = drop_folder
        self.pattern = pattern

    def execute(self, context: Any) -> Any:
        self._context = context  # a rejection asks the plan upstream what the run needed
        self._files: dict[str, str] = {}  # table -> the delivered file's uri, for lineage
        self._receipts: list[Receipt] = []
        receiver = DoganaHook(self.receiver_conn_id).receiver
        with receiver.step():
            return self._execute(receiver, context)

    def _execute(self, receiver: Receiver, context: Any) -> Any:
        self.tables: tuple[str, ...] = configured_tables(self.table)
        if self.sweep_after is not None:
            swept = receiver.sweep(self.sweep_after)
            if swept:
                self.log.info("swept %d staging tables nothing will use: %s", len(swept), swept)
        if self.contract is not None:
            contract = contract_of(self.contract)
            receiver.register(contract)
            self.log.info("%s: contract registered", contract.table)
            self.tables = self.tables or (contract.table,)
        if self.drop_folder is not None:
            return self._from_drop_folder(receiver)
        if self.delivery is None:
            self.delivery = upstream_output(self, context, ExtractOperator, "delivery")
        delivery = native(self.delivery, "delivery")
        if isinstance(delivery, list):
            return self._group(receiver, delivery)
        manifest, uri = _delivery(delivery, "delivery")
        self._files[manifest.table] = uri
        table = self._table_of(manifest)
        self._declare(receiver, [table or manifest.table])
        origin = self._origin(delivery, uri, "delivery")
        with local_file(uri) as path:
            decision = receiver.decide(path, manifest, table=table)
        return {
            **self._handed_over(receiver, decision),
            DELIVERED: [uri],
            ORIGINS: {decision.receipt.table: origin.to_dict()},
        }

    def _origin(self, delivery: Any, uri: str, what: str) -> Origin:
        """Where a delivery's rows came from: the extract's origin, or else the file and this
        task instance."""
        if isinstance(delivery, dict) and delivery.get("origin") is not None:
            return Origin.from_dict(delivery["origin"], f"{what}.origin")
        context = self._context
        return Origin(
            None, of_file(uri), str(context["dag"].dag_id), str(context["run_id"]), self.task_id
        )

    def _table_of(self, manifest: Manifest) -> str | None:
        """The table a single delivery is decided for: the configured one (a manifest naming
        another is refused by the receiver's manifest check), else the manifest's."""
        if len(self.tables) > 1:
            raise AirflowFailException(
                f"{manifest.table}: a single delivery to a task configured for the group "
                f"{', '.join(self.tables)}; nothing was decided"
            )
        return self.tables[0] if self.tables else None

    def _declare(self, receiver: Receiver, tables: Sequence[str]) -> None:
        """Store the declared expectations of the tables about to be decided."""
        by_table = declared_expectations(
            native(self.expectations, "expectations"), f"{self.task_id}: expectations"
        )
        if by_table is None:
            return
        for table in tables:
            declared = by_table.get(table, by_table.get(None))
            if declared is None:
                continue
            receiver.declare(table, declared)
            self.log.info(
                "%s: expectations declared: %s", table, ", ".join(declared.names) or NONE_DETAIL
            )

    def _log_expectations(self, receipt: Receipt) -> None:
        """Each expectation's result: a warned violation as a warning, since it is published."""
        found = reported(receipt)
        self.log.info("%s: expectations: %s", receipt.table, found.short)
        for check in found.violations:
            log = self.log.warning if check.passed else self.log.error
            log("%s: expectation %s %s", receipt.table, check.name, check.detail)

    def _handed_over(self, receiver: Receiver, decision: Decision) -> dict[str, Any]:
        receipt = decision.receipt
        self._receipts = [receipt]
        if decision.hold is not None:
            self._held(receiver, decision.hold)
        self.log.info("%s: %s", receipt.table, receipt_line(receipt, "decided"))
        self._log_expectations(receipt)
        if receipt.outcome is Outcome.REJECTED:
            hook = DoganaHook(self.receiver_conn_id)
            reason = superseded(hook, receipt, planned(self, self._context))
            if reason is not None:
                self.log.info("%s", reason)
                raise AirflowSkipException(reason)
            raise AirflowFailException(rejection_message(receipt))
        return decision.to_dict()

    def _held(self, receiver: Receiver, hold_id: str) -> None:
        """Show a person what holds the delivery, and how to end the hold; then fail, not
        retried: the publish downstream must not run, and the on-call is alerted."""
        hold = receiver.find_hold(hold_id)
        violations = receiver.violations(hold, self.show_rows)
        # One record per line, so that the tables' columns line up in the task's log.
        for line in "\n".join(hold_lines(hold, violations, receiver=self.receiver_conn_id)).split(
            "\n"
        ):
            self.log.warning("%s", line)
        tables = ", ".join(held.table for held in hold.tables)
        raise AirflowFailException(
            f"{tables}: delivery held as {hold_id} (nothing published, nothing recorded yet): "
            f"{held_names(hold)}; a person ends it with `dogana hold release "
            f"{self.receiver_conn_id} {hold_id} --by NAME` or `dogana hold discard ...`, "
            "then clears this task to hand the release's receipt to the publish task"
        )

    def _from_drop_folder(self, receiver: Receiver) -> Any:
        folder = Path(str(self.drop_folder))
        if not folder.is_dir():
            raise FileNotFoundError(f"drop_folder {str(folder)!r} is not a folder")
        candidates = sorted(
            path
            for path in folder.glob(self.pattern)
            if path.is_file() and not path.name.endswith(SIDECAR_SUFFIX) and sidecar(path).is_file()
        )
        self.log.info(
            "drop folder %s: %d deliveries with a sidecar match %r",
            folder,
            len(candidates),
            self.pattern,
        )
        for path in candidates:
            try:
                manifest = Manifest.from_json(sidecar(path).read_bytes())
            except ValueError as exc:
                raise AirflowFailException(
                    f"{sidecar(path)}: not a dogana manifest, so no receipt can name it: {exc}"
                ) from None
            table = self._table_of(manifest)
            self._declare(receiver, [table or manifest.table])
            decision = receiver.decide(path, manifest, table=table)
            self._files[manifest.table] = str(path)
            if decision.receipt.outcome is Outcome.REPLAYED:
                self.log.info("%s: already published (replay), passed over", path.name)
                continue
            self.log.info("%s: decided", path.name)
            origin = self._origin(None, str(path), "drop_folder")
            return {
                **self._handed_over(receiver, decision),
                ORIGINS: {decision.receipt.table: origin.to_dict()},
            }
        raise AirflowSkipException(
            f"drop folder {folder}: no new delivery matching {self.pattern!r}"
        )

    def _group(self, receiver: Receiver, deliveries: list[Any]) -> dict[str, Any]:
        by_table: dict[str, tuple[str, Manifest]] = {}
        uris = []
        origins: dict[str, Origin] = {}
        with ExitStack() as stack:
            for index, item in enumerate(deliveries):
                manifest, uri = _delivery(item, f"delivery[{index}]")
                self._files[manifest.table] = uri
                uris.append(uri)
                origins[manifest.table] = self._origin(item, uri, f"delivery[{index}]")
                by_table[manifest.table] = (stack.enter_context(local_file(uri)), manifest)
            if self.tables and set(by_table) != set(self.tables):
                # Each delivery for a table not configured is refused, filed under one that is.
                filed = file_under(self.tables, list(by_table))
                refused = [receiver.decide(*by_table[t], table=filed[t]).receipt for t in filed]
                raise AirflowFailException(
                    f"a group for {', '.join(sorted(by_table))} to a task configured for "
                    f"{', '.join(self.tables)}: "
                    + " | ".join(rejection_message(r) for r in refused)
                )
            ledgers = DoganaHook(self.receiver_conn_id).ledgers(by_table)
            group = Group(tuple(ledger.contract for ledger in ledgers.values()))
            self._declare(receiver, group.tables)
            decision = receiver.decide_group(group, by_table)
        self._receipts = list(decision.receipts)
        if decision.hold is not None:  # held whole: each held table's violations, then fail
            self._held(receiver, decision.hold)
        for receipt in decision.receipts:
            self.log.info("%s: %s", receipt.table, receipt_line(receipt, "decided"))
            self._log_expectations(receipt)
        rejected = [r for r in decision.receipts if r.outcome is Outcome.REJECTED]
        if rejected:
            hook = DoganaHook(self.receiver_conn_id)
            reason = superseded_group(hook, decision.receipts, planned(self, self._context))
            if reason is not None:
                self.log.info("%s", reason)
                raise AirflowSkipException(reason)
            raise AirflowFailException(
                "group rejected as one: " + " | ".join(rejection_message(r) for r in rejected)
            )
        staged: list[Any] = list(decision.staged) or [None] * len(decision.receipts)
        return {
            "decisions": [
                Decision(receipt, files).to_dict()
                for receipt, files in zip(decision.receipts, staged, strict=True)
            ],
            DELIVERED: uris,
            ORIGINS: {table: origin.to_dict() for table, origin in origins.items()},
        }

    # OpenLineage (apache-airflow-providers-openlineage, the extra "openlineage") ------------------

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Inputs: each delivered file, with the receipt's checks as DataQualityAssertions."""
        from dogana_provider.lineage import openlineage as lineage

        inputs = [
            lineage.with_assertions(lineage.file_dataset(self._files[r.table]), r)
            for r in getattr(self, "_receipts", [])
            if r.table in self._files
        ]
        return lineage.lineage(inputs=inputs)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """A rejection too: its failure event names every check, the failed ones unsuccessful."""
        return self.get_openlineage_facets_on_complete(task_instance)


def expectations_field(value: Any, where: str = "expectations") -> Any:
    """An expectations argument as the operator keeps it: as JSON (by table where given by
    table), so that Rendered Templates shows it; an upstream task's output (an XComArg) or a
    template as given, to be read when the task runs."""
    if value is None or isinstance(value, str) or not isinstance(value, Expectations | Mapping):
        return value
    declared = declared_expectations(value, where)
    assert declared is not None
    if set(declared) == {None}:
        return declared[None].to_dict()
    return {table: item.to_dict() for table, item in declared.items()}


def declared_expectations(
    value: Any, where: str = "expectations"
) -> dict[str | None, Expectations] | None:
    """An expectations argument by table (None: every table the task decides), or None when
    nothing is declared. One table's are an Expectations or its dict (column_mapping, checks);
    anything else is a mapping from table to them."""
    if value is None:
        return None
    if isinstance(value, Expectations):
        return {None: value}
    if not isinstance(value, Mapping):
        raise InvalidExpectation(f"{where}: an Expectations, its dict, or one per table")
    if set(value) <= {"column_mapping", "checks"}:
        return {None: Expectations.from_dict(value, where)}
    return {
        str(table): Expectations.from_dict(item, f"{where}[{table!r}]")
        for table, item in value.items()
    }


def configured_tables(table: str | Sequence[str] | None) -> tuple[str, ...]:
    """A task's table argument as a tuple: none, one table, or a group's tables."""
    if table is None:
        return ()
    return (table,) if isinstance(table, str) else tuple(table)


def file_under(configured: Sequence[str], delivered: Sequence[str]) -> dict[str, str]:
    """Where the rejection of each delivered table not configured is filed: under a configured
    table that got no delivery, in order, else under the first configured table."""
    foreign = [table for table in delivered if table not in configured]
    missing = [table for table in configured if table not in delivered]
    return {
        table: (missing[i] if i < len(missing) else configured[0])
        for i, table in enumerate(foreign)
    }


def sidecar(path: Path) -> Path:
    """A sender's manifest beside its file: FILE.json, as ``dogana manifest`` writes it."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _delivery(value: Any, what: str) -> tuple[Manifest, str]:
    if not isinstance(value, dict) or "manifest" not in value or "uri" not in value:
        raise ValueError(
            f"{what}: expected {{'manifest': <Manifest wire dict>, 'uri': <file uri>}}, got "
            f"{str(value)[:120]!r}; did the extract task upstream push one?"
        )
    return Manifest.from_dict(value["manifest"]), str(value["uri"])


@contextmanager
def local_file(uri: str) -> Iterator[str]:
    """A local path holding the delivery's bytes: the file itself when it is local, else a
    temporary copy streamed from object storage (fsspec) and removed afterwards. A local file
    that is not there raises MissingDelivery, naming the setting to change."""
    path = ObjectStoragePath(uri)
    if path.protocol in LOCAL_PROTOCOLS:
        if not path.exists():
            raise missing_delivery(uri)
        yield str(path.path)
        return
    suffix = Path(str(path.path)).suffix
    with tempfile.TemporaryDirectory(prefix="dogana-gate-") as folder:
        local = Path(folder) / f"delivery{suffix}"
        if deliveries.parted(path):  # read by several readers: its parts, in order
            local.mkdir()
            for part in deliveries.parts(path):
                with part.open("rb") as source, (local / part.name).open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
            yield str(local)
            return
        with path.open("rb") as source, local.open("wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        yield str(local)


def rejection_message(receipt: Receipt) -> str:
    """Every failed check, named, for the task's failure."""
    failed = "; ".join(f"{check.name}: {check.detail}" for check in receipt.failed)
    return (
        f"{receipt.table}: delivery {receipt.manifest.identity[:12]} rejected (receipt recorded, "
        f"nothing published): {failed}"
    )
