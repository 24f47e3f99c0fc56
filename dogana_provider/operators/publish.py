"""PublishOperator: the receiver's step 4, then an Asset event carrying the table's claims.

In ONE transaction the receiver locks the table's head, compares it with the decision's
base_publication_id (stale: it decides again, replay lookup, preflight and row checks on the
same staged rows, never a rebased plan), runs the plan on the published table, saves the ledger
and the receipt, and drops the staging table. A group's tables are published in one commit.

Then every outlet Asset gets an event whose extra states the table's claims after the commit:
its state (complete, patched, ...), complete_as_of, deletions_as_of, exact_as_of (ISO 8601, or
null) and publication_id. Each table's Asset (dogana_asset) carries its own table's claims; an
outlet naming a table this task does not publish is refused before anything is published, since
its event could only state another table's dates. An AssetAlias outlet (dogana_alias) gets one
event per published table, for that table's Asset: the way a task mapped over contracts known
only at run time emits each of its tables, since static outlets are fixed when the DAG is
parsed. A delivery of a window (a window shape) states them over that window, named in the
extra's "window" ([low, high], or null for the whole table): a rolling window's table is unknown
outside it, so its whole-table dates are null forever and would tell a reader nothing. A replay
publishes nothing, and still emits the event: the run that published may have failed before its
own event, and the claims it states are true. The extra's "expectations" states what the
receipt says of the table's quality expectations: ``none_declared``, or how many were met and
each violation (a warned delivery is published) by name, with its detail.

The publication's lineage edge (receiver/lineage_store.py) names the origin the gate handed over
beside the decision: the source and the extract's task instance.

A held decision is never published: the task fails naming the hold, since only a person's
release publishes it (Receiver.release).

Once published (or replayed), the delivery's files the gate names under "delivered" are removed,
unless ``[dogana] keep_published`` keeps them for the retention's sweep (delivery/folders.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from airflow.sdk import Asset, AssetAlias, BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from dogana_core.claims import NO_LIMIT
from dogana_core.gate import Outcome, Receipt
from dogana_core.group import Group
from dogana_provider import settings
from dogana_provider.checks.expectations import reported
from dogana_provider.delivery import folders as deliveries
from dogana_provider.hooks.dogana import DoganaHook, claims_dates, claims_line
from dogana_provider.lineage.assets import SCHEME, create_asset
from dogana_provider.lineage.origin import Origin, origins_of
from dogana_provider.operators.arguments import native, upstream_output
from dogana_provider.operators.gate import (
    DELIVERED,
    ORIGINS,
    GateOperator,
    configured_tables,
    file_under,
    rejection_message,
)
from dogana_provider.operators.superseded import planned, superseded, superseded_group
from dogana_provider.receiver.receiver import Decision
from dogana_provider.receiver.together import GroupDecision
from dogana_provider.report.receipts import receipt_line


def dogana_asset(table: str, receiver_conn_id: str = DoganaHook.default_conn_name) -> Asset:
    """The Asset of a table published by a receiver: dogana://<conn_id>/<table>.

    PublishOperator emits its events; a DAG scheduled on it runs after each publication, and
    reads the claims from the triggering event's extra.
    """
    return create_asset(table=table, receiver_conn_id=receiver_conn_id)


def dogana_alias(receiver_conn_id: str = DoganaHook.default_conn_name) -> AssetAlias:
    """An AssetAlias for the outlets of a publish whose tables are known only at run time.

    A PublishOperator with this outlet emits, for each table it publishes, an event of that
    table's dogana_asset carrying its claims; a DAG scheduled on dogana_asset(table) runs after
    it as after a static outlet.
    """
    return AssetAlias(name=f"{SCHEME}://{receiver_conn_id}")


class PublishOperator(BaseOperator):
    """Publish a decision from the gate task, and emit Asset events carrying the claims.

    :param receiver_conn_id: the receiver's connection (sqlite, postgres or mysql).
    :param decision: the Decision's wire dict (templated; by default the XCom of the
        GateOperator upstream, whatever its id).
    :param table: the table published, or the tables of a group; when outlets are not given,
        they default to each table's ``dogana_asset(table, receiver_conn_id)``. A decision for
        any other table is refused, recorded as a rejection under the configured table naming
        both, and fails the task: a sender never chooses the table.
    :param outlets: Assets to emit events for. A table's Asset (dogana_asset) carries that
        table's claims, and must name a table this task publishes; any other Asset carries the
        claims of every table it publishes, together; an AssetAlias (dogana_alias) gets each
        published table's Asset event.
    """

    template_fields: Sequence[str] = ("receiver_conn_id", "decision")

    def __init__(
        self,
        *,
        receiver_conn_id: str = DoganaHook.default_conn_name,
        decision: Any = None,
        table: str | Sequence[str] | None = None,
        # A list, neither None nor a tuple: .partial() records this default as a mapped task's
        # outlets, which Airflow adds to its inlets (a list) when it builds the context. Never
        # mutated: __init__ hands BaseOperator a copy.
        outlets: Any = [],  # noqa: B006
        **kwargs: Any,
    ) -> None:
        if not outlets and table is not None:
            outlets = [dogana_asset(t, receiver_conn_id) for t in configured_tables(table)]
        super().__init__(outlets=list(outlets or ()), **kwargs)
        self.receiver_conn_id = receiver_conn_id
        self.decision = decision
        self.table = table

    def execute(self, context: Any) -> Any:
        hook = DoganaHook(self.receiver_conn_id)
        if self.decision is None:
            self.decision = upstream_output(self, context, GateOperator, "decision")
        data = native(self.decision, "decision")
        if data is None:
            raise ValueError("decision: nothing to publish; is the gate task's XCom there?")
        delivered = data.get(DELIVERED, []) if isinstance(data, dict) else []
        origins = origins_of(data.get(ORIGINS) if isinstance(data, dict) else None)
        if isinstance(data, dict):
            data = {key: value for key, value in data.items() if key not in (DELIVERED, ORIGINS)}
        grouped = isinstance(data, dict) and "decisions" in data
        items = data["decisions"] if grouped else [data]
        decisions = [Decision.from_dict(item) for item in items]
        self._decisions, self._receipts = decisions, [d.receipt for d in decisions]  # lineage
        held = sorted({d.hold for d in decisions if d.hold is not None})
        if held:
            # Only a person's release publishes a held delivery (Receiver.release).
            raise AirflowFailException(
                f"{', '.join(d.receipt.table for d in decisions)}: held as {', '.join(held)}; "
                "nothing is published without a release: `dogana hold release "
                f"{self.receiver_conn_id} {held[0]} --by NAME`, then clear the gate task"
            )
        self._refuse_other_tables(hook, decisions)
        self._check_outlets([decision.receipt.table for decision in decisions])
        if grouped:
            receipts = self._publish_group(hook, decisions, origins)
        else:
            origin = origins.get(decisions[0].receipt.table)
            receipts = (hook.receiver.publish(decisions[0], origin=origin),)
        self._receipts = list(receipts)
        for receipt in receipts:
            self.log.info("%s: %s", receipt.table, receipt_line(receipt, "published"))
        rejected = [r for r in receipts if r.outcome is Outcome.REJECTED]
        if rejected:
            # A stale decision made again under the lock, and refused: recorded, not published.
            stated = planned(self, context)
            reason = (
                superseded_group(hook, receipts, stated)
                if grouped
                else superseded(hook, rejected[0], stated)
            )
            if reason is not None:
                self.log.info("%s", reason)
                self._remove(delivered, "superseded, not published")
                raise AirflowSkipException(reason)
            raise AirflowFailException(" | ".join(rejection_message(r) for r in rejected))
        self._emit(context, hook, receipts)
        self._remove(delivered)
        if len(receipts) == 1 and not grouped:
            return receipts[0].to_dict()
        return [receipt.to_dict() for receipt in receipts]

    def _remove(self, delivered: list[str], spent: str = "published") -> None:
        """Remove the delivery's files, spent once published or superseded, unless kept."""
        if settings.keep_published():
            self.log.info("delivered files kept (%s)", settings.named(settings.KEEP_PUBLISHED))
        else:
            deliveries.remove(delivered, spent)

    def _refuse_other_tables(self, hook: DoganaHook, decisions: list[Decision]) -> None:
        """Refuse decisions for tables this task is not configured for: each recorded as a
        rejection under a configured table (Receiver.refuse), the others' staged rows dropped,
        and the task failed, before anything is published or any event emitted."""
        configured = configured_tables(self.table)
        delivered = [decision.receipt.table for decision in decisions]
        if not configured or set(delivered) == set(configured):
            return
        filed = file_under(configured, delivered)
        refused = []
        for decision in decisions:
            table = decision.receipt.table
            if table in filed:
                refused.append(hook.receiver.refuse(decision, filed[table]))
            else:
                hook.receiver.discard(decision)
        raise AirflowFailException(
            f"decisions for {', '.join(sorted(set(delivered)))} to a task configured for "
            f"{', '.join(configured)}: " + " | ".join(rejection_message(r) for r in refused)
        )

    def _check_outlets(self, tables: list[str]) -> None:
        """Refuse, before publishing, a table's Asset naming a table this task does not publish:
        its event would state another table's dates to every DAG scheduled on it."""
        for outlet in self.outlets:
            if not isinstance(outlet, Asset):
                continue
            named = _asset_table(outlet)
            if named is None:
                continue
            conn_id, table = named
            if conn_id == self.receiver_conn_id and table in tables:
                continue
            published = ", ".join(f"{SCHEME}://{self.receiver_conn_id}/{t}" for t in tables)
            raise ValueError(
                f"outlet {outlet.uri}: not a table this task publishes ({published}); nothing "
                "was published. Give each table's Asset to the task that publishes it, or, for "
                "tables known only at run time (a mapped publish), the outlet dogana_alias("
                f"{self.receiver_conn_id!r})"
            )

    def _publish_group(
        self, hook: DoganaHook, decisions: list[Decision], origins: dict[str, Origin]
    ) -> tuple[Receipt, ...]:
        receipts = tuple(decision.receipt for decision in decisions)
        staged = tuple(d.staged for d in decisions if d.staged is not None)
        group = Group(tuple(receipt.contract for receipt in receipts))
        decision = GroupDecision(group, receipts, staged if len(staged) == len(receipts) else ())
        return hook.receiver.publish_group(decision, origins)

    def _emit(self, context: Any, hook: DoganaHook, receipts: Sequence[Receipt]) -> None:
        """Each outlet's event extra: the claims of its table, or of every table, over the
        window each delivery covered (the whole table when it covered no window)."""
        if not any(isinstance(outlet, Asset | AssetAlias) for outlet in self.outlets):
            return
        tables = [receipt.table for receipt in receipts]
        windows = {r.table: r.manifest.window for r in receipts if r.manifest.window is not None}
        now = datetime.now(UTC)
        # One read of every ledger: the claims and the head come from one committed state.
        ledgers = hook.ledgers(tables)
        extras: dict[str | None, dict[str, Any]] = {}
        quality = {r.table: reported(r).extra()["expectations"] for r in receipts}
        for table, ledger in ledgers.items():
            window = windows.get(table)
            claims = ledger.claims(now, limit=NO_LIMIT, window=window)
            extras[table] = _extra([table], claims, ledger.publication_id, window)
            extras[table]["expectations"] = quality[table]
            over = "" if window is None else f" over window {_plain(window)}"
            self.log.info("%s: published; claims%s %s", table, over, claims_line(claims))
        if len(tables) == 1:  # any other Asset: the one table's claims
            extras[None] = extras[tables[0]]
        else:  # any other Asset: the group's claims, every table at once
            group = Group(tuple(ledger.contract for ledger in ledgers.values()))
            together = group.claims(ledgers, now, limit=NO_LIMIT, windows=windows or None)
            extras[None] = _extra(tables, together, None)
            extras[None]["expectations"] = quality
            if windows:  # {table: [low, high]} for its windowed tables
                extras[None]["window"] = {table: _plain(w) for table, w in windows.items()}
        for outlet in self.outlets:
            if isinstance(outlet, AssetAlias):
                for table in tables:
                    asset = dogana_asset(table, self.receiver_conn_id)
                    context["outlet_events"][outlet].add(asset, extra=extras[table])
                    self.log.info("asset %s: event extra %s", asset.uri, extras[table])
            elif isinstance(outlet, Asset):
                named = _asset_table(outlet)
                extra = extras[None if named is None else named[1]]
                context["outlet_events"][outlet].extra = extra
                self.log.info("asset %s: event extra %s", outlet.uri, extra)

    # OpenLineage (apache-airflow-providers-openlineage, the extra "openlineage") ------------------

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Outputs: each published table, with its schema, its columns' lineage from the
        delivered file and its claims after the commit (the dogana facet, over the delivery's
        window); inputs: each file, with the receipt's checks as DataQualityAssertions."""
        from dogana_provider.lineage import openlineage as lineage

        inputs, files = [], {}
        for decision in getattr(self, "_decisions", []):
            if decision.staged is not None:
                files[decision.receipt.table] = lineage.file_dataset(decision.staged.path)
        for receipt in getattr(self, "_receipts", []):
            if receipt.table in files:
                inputs.append(lineage.with_assertions(files[receipt.table], receipt))
        published = [r for r in getattr(self, "_receipts", []) if r.outcome is not Outcome.REJECTED]
        tables = [receipt.table for receipt in published]
        staged = {
            d.receipt.table: d.staged.columns for d in getattr(self, "_decisions", []) if d.staged
        }
        outputs = lineage.receiver_tables(
            self.receiver_conn_id,
            tables,
            windows={r.table: r.manifest.window for r in published if r.manifest.window},
            columns=staged,
            upstream=files,
        )
        return lineage.lineage(inputs=inputs, outputs=outputs)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """A stale decision refused when made again: the failure event names its checks."""
        return self.get_openlineage_facets_on_complete(task_instance)


def _asset_table(asset: Asset) -> tuple[str, str] | None:
    """(receiver_conn_id, table) of a dogana_asset; None for any other Asset."""
    scheme, _, rest = asset.uri.partition("://")
    conn_id, _, table = rest.partition("/")
    if scheme != SCHEME:
        return None
    return conn_id, table


def _extra(
    tables: list[str], claims: Any, publication_id: str | None, window: Any = None
) -> dict[str, Any]:
    return {
        "tables": tables,
        **claims_dates(claims),
        "publication_id": publication_id,
        "window": _plain(window),
    }


def _plain(window: Any) -> list[Any] | None:
    """A window as JSON: [low, high], dates and datetimes in ISO 8601; None stays None."""
    if window is None:
        return None
    return [v.isoformat() if isinstance(v, date | datetime) else v for v in window]
