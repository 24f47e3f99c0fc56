"""The conformance cases of source activation (dogana_provider/receiver/activation.py).

ReceiverConformance (receiver_conformance.py) inherits this class, so every case runs on SQLite,
PostgreSQL and MariaDB with the suite's fixtures and helpers (receiver, source, state, ...). One
test per rule, named after it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from receiver_deliveries import NOW, Source, at

from dogana_core.gate import Outcome
from dogana_provider.dialects import execute
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.activating import CONFIGURED
from dogana_provider.receiver.activation import SOURCE_ACTIVE, ActivationRefused, Status
from dogana_provider.receiver.transactions import transaction

CORE = ["manifest", "receiver_time", "transition"]  # the spec's checks, which come first
STEWARD = "Ada Steward"  # who records activations in these tests: never the owner
EXPIRES = NOW + timedelta(days=30)

ACCOUNTS = (
    "svc_loader",
    "SVC_x",
    "System ",
    "automation",
    "airflow",
    "orders-bot",
    "svc-a@corp.example",
)
"""Grantors that are accounts, not people: each one's authorization is refused."""
PEOPLE = ("Carla Grantor", "Robotham", "José Álvarez", "c.grantor@corp.example")
"""Grantors that are people, some of them close to an account's words."""

MISSING: dict[str, tuple[dict[str, Any], str]] = {
    # case: (what the activation leaves out or gets wrong, the words naming it)
    "no owner": ({"owner": " "}, "an owner"),
    "no authorization": ({"authorized_by": ""}, "an authorization granted by a named person"),
    "no expiry": ({"expires_at": None}, "the authorization's expiry (expires_at)"),
    "an expired authorization": (
        {"granted_at": NOW - timedelta(days=2), "expires_at": NOW},
        "an unexpired authorization",
    ),
    "an expiry before the grant": (
        {"granted_at": NOW - timedelta(days=1), "expires_at": NOW - timedelta(days=2)},
        "an expiry after the grant",
    ),
    "a grant in the future": (
        {"granted_at": NOW + timedelta(hours=1)},
        "an authorization already granted",
    ),
    "no licence": ({"licence": ""}, "a licence"),
    "no purpose": ({"purposes": ["", " "]}, "an allowed purpose"),
    "no provenance": ({"provenance": ""}, "provenance (how the data is obtained)"),
    "the owner recording it": ({"owner": " ada  STEWARD"}, "an owner other than who recorded"),
}


def grant(**changes: Any) -> dict[str, Any]:
    """Everything activation requires, changed as given."""
    fields: dict[str, Any] = {
        "owner": "Bea Owner",
        "authorized_by": "Carla Grantor",
        "expires_at": EXPIRES,
        "licence": "internal-use-only",
        "purposes": ["billing", "finance reporting"],
        "provenance": "nightly read of the ERP replica",
        "by": STEWARD,
    }
    fields.update(changes)
    return fields


class ActivationConformance:
    """Cases on a receiver requiring activation; the fixtures and the helpers they call (state,
    publish_checked, assert_refused_changes_nothing, pair...) are ReceiverConformance's."""

    dialect: Any
    driver_error: type[Exception]

    def clocked(self, connect: Any, uid: str, clock: list[datetime]) -> Receiver:
        """A receiver on the suite's store whose clock the test moves: clock[0]."""
        return Receiver(connect, self.dialect, prefix=f"s{uid}", clock=lambda: clock[0])

    def published_once(self, receiver: Receiver, source: Source) -> tuple[Any, ...]:
        """One publication with activation not yet required, then the state to compare with."""
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        return self.state(receiver, source.table)

    def raw_insert(self, receiver: Receiver, columns: dict[str, Any]) -> None:
        """An INSERT into the sources table as a person at a SQL shell writes it."""
        names = ", ".join(columns)
        marks = ", ".join(self.dialect.placeholder for _ in columns)
        table = self.dialect.quote(receiver.steps.sources.own_names[1])
        with transaction(receiver.connect, self.dialect) as connection:
            execute(
                connection,
                f"INSERT INTO {table} ({names}) VALUES ({marks})",
                tuple(columns.values()),
            )

    # Pending --------------------------------------------------------------------------------

    def test_a_table_without_activation_publishes_nothing_and_its_rejection_is_recorded(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.published_once(receiver, source)
        receiver.sources.require(True, by=STEWARD)
        source.put(4, 4, "four", at(3))
        receipt = receiver.receive(*source.changes(at(2), at(4)))
        # Refused before its rows were staged: no row check ran.
        assert [c.name for c in receipt.checks] == [*CORE, SOURCE_ACTIVE]
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        assert "pending: no activation is recorded" in receipt.failed[0].detail
        assert "a licence" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_a_pending_record_publishes_nothing_naming_what_it_lacks(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.published_once(receiver, source)
        receiver.sources.require(True, by=STEWARD)
        receiver.sources.activate(source.table, **grant())
        receiver.sources.deactivate(source.table, by=STEWARD, reason="the ERP contract ended")
        source.put(4, 4, "four", at(3))
        receipt = receiver.receive(*source.changes(at(2), at(4)))
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        assert f"table {source.table} is pending" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        events = [(e.event, e.actor) for e in receiver.sources.log(source.table)]
        assert events == [("activated", STEWARD), ("deactivated", STEWARD)]
        assert receiver.sources.log(source.table)[-1].detail["reason"] == "the ERP contract ended"

    # Active ---------------------------------------------------------------------------------

    def test_an_active_table_is_published_its_receipt_saying_so(
        self, receiver: Receiver, source: Source
    ) -> None:
        receiver.sources.require(True, by=STEWARD)
        state = receiver.sources.activate(source.table, **grant())
        assert state.status is Status.ACTIVE and state.line() == "active until 2027-01-31 00:00:00"
        source.put(1, 1, "one", at(1))
        receipt = self.publish_checked(receiver, source, source.full(at(2)))
        (active,) = [c for c in receipt.checks if c.name == SOURCE_ACTIVE]
        assert active.passed and "active until 2027-01-31T00:00:00+00:00" in active.detail
        logged = receiver.sources.log(source.table)
        assert [(e.event, e.actor, e.at) for e in logged] == [("activated", STEWARD, NOW)]
        assert logged[0].detail["granted_by"] == "Carla Grantor"

    def test_a_table_may_be_activated_before_it_is_registered(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        source = Source(f"later_{uid}", tmp_path)
        receiver.sources.require(True, by=STEWARD)
        receiver.sources.activate(source.table, **grant())
        receiver.register(source.contract)
        source.put(1, 1, "one", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))

    # Expired --------------------------------------------------------------------------------

    def test_an_expired_authorization_stops_publication_naming_its_expiry(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        clock = [NOW]
        moving = self.clocked(connect, uid, clock)
        moving.sources.require(True, by=STEWARD)
        moving.sources.activate(source.table, **grant(expires_at=NOW + timedelta(days=1)))
        before = self.published_once(moving, source)
        clock[0] = NOW + timedelta(days=1)  # the instant it expires: no longer active
        for hour in (3, 5):
            source.put(hour, hour, "late", at(hour))
            receipt = moving.receive(*source.changes(at(2), at(hour + 1)))
            assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
            assert "expired at 2027-01-02T00:00:00+00:00" in receipt.failed[0].detail
            self.assert_refused_changes_nothing(moving, source.table, before, receipt)
            before = self.state(moving, source.table)
        # The refusals logged the expiry once, with whose authorization lapsed and when.
        logged = [(e.event, e.actor, e.at) for e in moving.sources.log(source.table)]
        assert logged == [
            ("activated", STEWARD, NOW),
            ("expired", "Carla Grantor", NOW + timedelta(days=1)),
        ]
        assert moving.sources.state(source.table).line() == "expired at 2027-01-02 00:00:00"
        assert len(moving.sources.log(source.table)) == 2

    def test_an_authorization_expiring_between_gate_and_publish_is_refused_at_publish(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        clock = [NOW]
        moving = self.clocked(connect, uid, clock)
        moving.sources.require(True, by=STEWARD)
        moving.sources.activate(source.table, **grant(expires_at=NOW + timedelta(hours=1)))
        before = self.published_once(moving, source)
        source.put(4, 4, "four", at(3))
        decision = moving.decide(*source.changes(at(2), at(4)))
        assert decision.to_publish, decision.receipt.failed
        clock[0] = NOW + timedelta(hours=2)
        receipt = moving.publish(decision)
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        assert "expired at" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(moving, source.table, before, receipt)
        assert [e.event for e in moving.sources.log(source.table)] == ["activated", "expired"]

    def test_a_deactivation_between_gate_and_publish_is_refused_at_publish(
        self, receiver: Receiver, source: Source
    ) -> None:
        receiver.sources.require(True, by=STEWARD)
        receiver.sources.activate(source.table, **grant())
        before = self.published_once(receiver, source)
        source.put(4, 4, "four", at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        assert decision.to_publish, decision.receipt.failed
        receiver.sources.deactivate(source.table, by=STEWARD, reason="licence withdrawn")
        receipt = receiver.publish(decision)
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_a_publication_locks_the_tables_activation_record_until_it_ends(
        self, connect: Any, receiver: Receiver, source: Source
    ) -> None:
        """The publication's read of the table's head and activation (one statement where the
        database locks an outer join's rows) locks the record: a deactivation waits for it."""
        if not self.dialect.row_locks:
            pytest.skip("BEGIN IMMEDIATE locks the whole database: no row to look at")
        receiver.sources.require(True, by=STEWARD)
        receiver.sources.activate(source.table, **grant())
        self.published_once(receiver, source)
        sources = self.dialect.quote(receiver.steps.sources.own_names[1])
        with transaction(receiver.connect, self.dialect) as publishing:
            _, activation = receiver.steps.locked_with_activation(publishing, source.table)
            assert activation.required and activation.record is not None
            assert activation.record.status == Status.ACTIVE
            other = connect()
            try:
                with pytest.raises(self.driver_error):
                    execute(
                        other,
                        f"SELECT status FROM {sources} WHERE table_name = "
                        f"{self.dialect.placeholder} FOR UPDATE NOWAIT",
                        (source.table,),
                    )
            finally:
                other.rollback()
                other.close()

    # Who may authorize ----------------------------------------------------------------------

    @pytest.mark.parametrize("grantor", ACCOUNTS)
    def test_a_service_account_cannot_authorize_a_source(
        self, receiver: Receiver, source: Source, grantor: str
    ) -> None:
        receiver.sources.require(True, by=STEWARD)
        with pytest.raises(ActivationRefused) as refused:
            receiver.sources.activate(source.table, **grant(authorized_by=grantor))
        (missing,) = refused.value.missing
        assert missing.startswith("an authorization granted by a named person: ")
        assert f"{grantor.strip()!r}" in missing or f"{grantor!r}" in missing
        assert receiver.sources.state(source.table).status is Status.PENDING
        assert receiver.sources.log(source.table) == []

    @pytest.mark.parametrize("grantor", PEOPLE)
    def test_a_named_person_may_authorize_a_source(
        self, receiver: Receiver, source: Source, grantor: str
    ) -> None:
        receiver.sources.require(True, by=STEWARD)
        state = receiver.sources.activate(source.table, **grant(authorized_by=grantor))
        assert state.status is Status.ACTIVE

    @pytest.mark.parametrize("account", ["svc_steward", "SYSTEM"])
    def test_an_account_can_neither_own_a_source_nor_record_its_activation(
        self, receiver: Receiver, source: Source, account: str
    ) -> None:
        for role in ("owner", "by"):
            with pytest.raises(ActivationRefused, match="is an account") as refused:
                receiver.sources.activate(source.table, **grant(**{role: account}))
            assert len(refused.value.missing) == 1, refused.value.missing
        assert receiver.sources.log(source.table) == []

    @pytest.mark.parametrize("case", sorted(MISSING))
    def test_an_activation_missing_a_part_is_refused_naming_it(
        self, receiver: Receiver, source: Source, case: str
    ) -> None:
        changes, named = MISSING[case]
        with pytest.raises(ActivationRefused) as refused:
            receiver.sources.activate(source.table, **grant(**changes))
        assert [m for m in refused.value.missing if named in m], refused.value.missing
        assert len(refused.value.missing) == 1, refused.value.missing
        assert named in str(refused.value)
        assert receiver.sources.state(source.table).record is None
        assert receiver.sources.log(source.table) == []

    # The schema's default -------------------------------------------------------------------

    def test_a_row_inserted_by_hand_without_a_status_is_pending(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.published_once(receiver, source)
        receiver.sources.require(True, by=STEWARD)
        self.raw_insert(
            receiver,
            {
                "table_name": source.table,
                "owner": "Bea Owner",
                "registered_by": STEWARD,
                "granted_by": "Carla Grantor",
                "granted_at": NOW.isoformat(),
                "expires_at": EXPIRES.isoformat(),
                "licence": "internal-use-only",
                "purposes": '["billing"]',
                "provenance": "typed in by hand",
            },
        )
        state = receiver.sources.state(source.table)
        assert state.record is not None and state.record.status == "pending"
        assert state.status is Status.PENDING
        source.put(4, 4, "four", at(3))
        receipt = receiver.receive(*source.changes(at(2), at(4)))
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_a_row_inserted_by_hand_as_active_with_nothing_else_is_pending(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.published_once(receiver, source)
        receiver.sources.require(True, by=STEWARD)
        self.raw_insert(receiver, {"table_name": source.table, "status": "active"})
        source.put(4, 4, "four", at(3))
        receipt = receiver.receive(*source.changes(at(2), at(4)))
        assert [c.name for c in receipt.failed] == [SOURCE_ACTIVE]
        assert "is pending: missing an owner" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_the_status_column_holds_only_pending_or_active(
        self, receiver: Receiver, source: Source
    ) -> None:
        receiver.sources.require(True, by=STEWARD)
        with pytest.raises(self.driver_error):
            self.raw_insert(receiver, {"table_name": source.table, "status": "approved"})

    # The setting ----------------------------------------------------------------------------

    def test_without_require_activation_there_is_no_gate(
        self, receiver: Receiver, source: Source
    ) -> None:
        receiver.sources.activate(source.table, **grant())
        receiver.sources.deactivate(source.table, by=STEWARD, reason="pending, but not gated")
        assert not receiver.sources.required()
        source.put(1, 1, "one", at(1))
        receipt = self.publish_checked(receiver, source, source.full(at(2)))
        assert SOURCE_ACTIVE not in {c.name for c in receipt.checks}
        assert receiver.sources.state(source.table).line() == "not required (pending)"

    def test_switching_require_activation_off_needs_a_named_person(
        self, receiver: Receiver, source: Source
    ) -> None:
        receiver.sources.require(True, by="deploy pipeline")
        with pytest.raises(ActivationRefused, match="'svc_ops' is an account"):
            receiver.sources.require(False, by="svc_ops")
        assert receiver.sources.required()
        receiver.sources.require(False, by=STEWARD)
        assert not receiver.sources.required()
        changes = [(e.event, e.actor) for e in receiver.sources.log()]
        assert changes == [("required", "deploy pipeline"), ("not_required", STEWARD)]

    def test_a_receiver_configured_to_require_activation_switches_it_on_never_off(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        configured = Receiver(
            connect, self.dialect, prefix=f"s{uid}", clock=lambda: NOW, require_activation=True
        )
        configured.register(source.contract)
        assert receiver.sources.required()
        receiver.sources.require(False, by=STEWARD)
        receiver.register(source.contract)  # not configured: leaves it off
        assert not receiver.sources.required()
        configured.register(source.contract)
        assert receiver.sources.required()
        changes = [(e.event, e.actor) for e in receiver.sources.log()]
        assert changes == [
            ("required", CONFIGURED),
            ("not_required", STEWARD),
            ("required", CONFIGURED),
        ]

    def test_a_store_made_before_activation_decides_as_before(
        self, connect: Any, receiver: Receiver, source: Source, uid: str
    ) -> None:
        with transaction(receiver.connect, self.dialect) as connection:
            for name in receiver.steps.sources.own_names:
                execute(connection, f"DROP TABLE {self.dialect.quote(name)}")
        older = Receiver(connect, self.dialect, prefix=f"s{uid}", clock=lambda: NOW)
        source.put(1, 1, "one", at(1))
        receipt = self.publish_checked(older, source, source.full(at(2)))
        assert SOURCE_ACTIVE not in {c.name for c in receipt.checks}
        assert older.sources.state(source.table).line() == "not required"

    # Groups ---------------------------------------------------------------------------------

    def test_a_group_with_one_inactive_table_is_rejected_whole(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        receiver.sources.require(True, by=STEWARD)
        receiver.sources.activate(orders.table, **grant())
        deliveries = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        # Refused before any rows were staged: no row check ran, for either table.
        assert [c.name for c in receipts[0].checks] == [*CORE, "together"]
        assert [c.name for c in receipts[1].checks] == [*CORE, SOURCE_ACTIVE]
        assert [c.name for c in receipts[0].failed] == ["together"]
        assert f"table {lines.table} is pending" in receipts[0].failed[0].detail
        assert [c.name for c in receipts[1].failed] == [SOURCE_ACTIVE]
        assert self.staging_left(receiver, *(m for _, m in deliveries.values())) == []
        for table in (orders.table, lines.table):
            assert receiver.verify(table).publications == 0
        receiver.sources.activate(lines.table, **grant())
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2

    def test_a_group_whose_table_expires_before_publish_is_refused_whole(
        self, connect: Any, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        clock = [NOW]
        moving = self.clocked(connect, uid, clock)
        group, orders, lines = self.pair(moving, uid, tmp_path)
        moving.sources.require(True, by=STEWARD)
        moving.sources.activate(orders.table, **grant())
        moving.sources.activate(lines.table, **grant(expires_at=NOW + timedelta(hours=1)))
        decision = moving.decide_group(
            group, {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        )
        assert decision.to_publish, [r.failed for r in decision.receipts]
        clock[0] = NOW + timedelta(hours=1)
        receipts = moving.publish_group(decision)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert [c.name for c in receipts[1].failed] == [SOURCE_ACTIVE]
        assert "expired at" in receipts[1].failed[0].detail
        for table in (orders.table, lines.table):
            assert moving.verify(table).publications == 0
        assert self.staging_left(moving, *(r.manifest for r in receipts)) == []
