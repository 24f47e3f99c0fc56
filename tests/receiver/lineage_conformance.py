"""The conformance cases of lineage edges (dogana_provider/receiver/lineage_store.py).

ReceiverConformance (receiver_conformance.py) inherits this class, so every case runs on SQLite,
PostgreSQL and MariaDB with the suite's fixtures and helpers. One test per rule, named after it.

The pipeline of every case: three tables from two sources. The shop database feeds orders
(a full read, then a changes read) and customers, read with orders in one snapshot as a group;
the support database feeds tickets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from receiver_deliveries import NOW, Source, at

from dogana_core.gate import Outcome, Receipt
from dogana_core.group import Group
from dogana_provider.dialects import execute
from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.lineage_store import Edge, Unfiltered
from dogana_provider.receiver.transactions import transaction

SHOP, SUPPORT = "shop_db", "support_db"


@dataclass(frozen=True)
class Pipeline:
    orders: Source
    customers: Source
    tickets: Source

    def origin(self, source: Source, run: str = "run_1") -> Origin:
        conn = SUPPORT if source is self.tickets else SHOP
        name = f"{'support' if source is self.tickets else 'shop'}.{source.table}"
        return Origin(conn, name, "pipeline", run, f"{source.table}.extract")


class LineageConformance:
    """Cases on lineage edges; the fixtures and helpers are ReceiverConformance's."""

    @pytest.fixture
    def pipeline(self, receiver: Receiver, uid: str, tmp_path: Path) -> Pipeline:
        """Orders and customers from the shop, tickets from support, each published once."""
        found = Pipeline(*(Source(f"{name}_{uid}", tmp_path) for name in ("o", "c", "t")))
        for source in (found.orders, found.customers, found.tickets):
            receiver.register(source.contract)
            for id_ in range(1, 4):
                source.put(id_, id_, f"{source.table} {id_}", at(1))
        group = Group((found.orders.contract, found.customers.contract))
        together = {s.table: s.full(at(2)) for s in (found.orders, found.customers)}
        origins = {s.table: found.origin(s) for s in (found.orders, found.customers)}
        receipts = receiver.receive_group(group, together, origins)
        assert all(r.outcome is Outcome.ACCEPTED for r in receipts), [r.failed for r in receipts]
        self.accepted(receiver, found.tickets.full(at(2)), found.origin(found.tickets))
        found.orders.put(4, 4, "late order", at(3))
        changes = found.orders.changes(at(2), at(4))
        self.accepted(receiver, changes, found.origin(found.orders, "run_2"))
        return found

    def accepted(self, receiver: Receiver, delivery: tuple[Path, Any], origin: Origin) -> Receipt:
        receipt = receiver.receive(*delivery, origin=origin)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        return receipt

    def answers(self, edges: list[Edge]) -> list[tuple[str, str, str]]:
        return [(e.table, e.publication_id, e.manifest_identity) for e in edges]

    def receipted(self, receiver: Receiver, table: str) -> list[tuple[str, str, str]]:
        """What the receipts say was published into table, newest first."""
        accepted = [r for r in receiver.receipts(table) if r.outcome is Outcome.ACCEPTED]
        return [(r.table, str(r.publication_id), r.manifest.identity) for r in reversed(accepted)]

    # What fed a table, and what a source produced -------------------------------------------

    def test_what_fed_a_table_is_what_its_receipts_published(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        for source in (pipeline.orders, pipeline.customers, pipeline.tickets):
            edges = receiver.lineage(output=source.table)
            assert self.answers(edges) == self.receipted(receiver, source.table)
        orders = receiver.lineage(output=pipeline.orders.table)
        assert [(e.origin.run_id, e.rows) for e in orders] == [("run_2", 1), ("run_1", 3)]
        assert {e.origin for e in orders} == {
            pipeline.origin(pipeline.orders),
            pipeline.origin(pipeline.orders, "run_2"),
        }

    def test_what_a_source_produced_is_what_its_tables_published(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        name = pipeline.origin(pipeline.customers).source
        edges = receiver.lineage(source=name, source_conn_id=SHOP)
        assert self.answers(edges) == self.receipted(receiver, pipeline.customers.table)
        assert receiver.lineage(source=name, source_conn_id=SUPPORT) == []
        tickets = receiver.lineage(source=pipeline.origin(pipeline.tickets).source)
        assert self.answers(tickets) == self.receipted(receiver, pipeline.tickets.table)

    def test_an_answer_is_bounded_by_since_and_limit(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        table = pipeline.orders.table
        newest = self.receipted(receiver, table)[0]
        assert self.answers(receiver.lineage(output=table, limit=1)) == [newest]
        assert receiver.lineage(output=table, since=NOW + timedelta(seconds=1)) == []
        assert len(receiver.lineage(output=table, since=NOW)) == 2

    def test_an_unfiltered_question_is_refused(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        with pytest.raises(Unfiltered, match="an export, not a query"):
            receiver.lineage(since=at(0), limit=5)

    # Written once per publication ------------------------------------------------------------

    def test_a_replay_writes_no_edge(self, receiver: Receiver, pipeline: Pipeline) -> None:
        table = pipeline.tickets.table
        before = receiver.lineage(output=table)
        delivery = pipeline.tickets.full(at(5))
        self.accepted(receiver, delivery, pipeline.origin(pipeline.tickets, "run_3"))
        again = receiver.receive(*delivery, origin=pipeline.origin(pipeline.tickets, "run_4"))
        assert again.outcome is Outcome.REPLAYED
        edges = receiver.lineage(output=table)
        assert len(edges) == len(before) + 1 and edges[0].origin.run_id == "run_3"

    def test_a_retried_publish_writes_its_edge_once(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        """The publish task run again with the decision its gate handed over (a retry after a
        commit whose success never reached the scheduler), and the gate run again: replays,
        and no second edge."""
        table = pipeline.tickets.table
        pipeline.tickets.put(9, 9, "new ticket", at(5))
        delivery = pipeline.tickets.full(at(6))
        decision = receiver.decide(*delivery)
        origin = pipeline.origin(pipeline.tickets, "run_5")
        assert receiver.publish(decision, origin=origin).outcome is Outcome.ACCEPTED
        assert receiver.publish(decision, origin=origin).outcome is Outcome.REPLAYED
        assert receiver.receive(*delivery, origin=origin).outcome is Outcome.REPLAYED
        assert self.answers(receiver.lineage(output=table)) == self.receipted(receiver, table)

    def test_an_edge_recorded_again_is_not_written_twice(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        """The edge's id is its publication's: recording the same edge again inserts nothing."""
        (edge,) = receiver.lineage(output=pipeline.customers.table)
        with transaction(receiver.connect, receiver.dialect) as connection:
            receiver.steps.lineage.record(connection, replace(edge, rows=edge.rows + 1))
        assert receiver.lineage(output=pipeline.customers.table) == [edge]

    def test_a_refused_delivery_writes_no_edge(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        table = pipeline.orders.table
        before = receiver.lineage(output=table)
        path, manifest = pipeline.orders.full(at(6))
        refused = receiver.receive(path, replace(manifest, rows=manifest.rows + 1))
        assert refused.outcome is Outcome.REJECTED
        assert receiver.lineage(output=table) == before

    def test_a_publication_without_an_origin_has_an_edge_naming_no_source(
        self, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        table = pipeline.tickets.table
        pipeline.tickets.put(8, 8, "pushed", at(5))
        receipt = receiver.receive(*pipeline.tickets.full(at(6)))
        (edge,) = receiver.lineage(output=table, limit=1)
        assert edge.publication_id == receipt.publication_id and edge.origin == Origin()

    def test_a_store_made_before_lineage_gains_its_table_at_the_next_publication(
        self, connect: Any, uid: str, receiver: Receiver, pipeline: Pipeline
    ) -> None:
        with transaction(receiver.connect, receiver.dialect) as connection:
            execute(connection, f"DROP TABLE {receiver.steps.lineage.table}")
        upgraded = self.make(connect, uid)  # type: ignore[attr-defined]
        assert upgraded.lineage(output=pipeline.tickets.table) == []
        pipeline.tickets.put(7, 7, "after the upgrade", at(5))
        origin = pipeline.origin(pipeline.tickets)
        receipt = upgraded.receive(*pipeline.tickets.full(at(6)), origin=origin)
        (edge,) = upgraded.lineage(output=pipeline.tickets.table)
        assert edge.publication_id == receipt.publication_id and edge.origin == origin
