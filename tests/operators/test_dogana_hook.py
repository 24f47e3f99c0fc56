"""DoganaHook on a receiver database where no table was ever registered; the receiver its hooks
share inside shared_receivers."""

from __future__ import annotations

from pathlib import Path

import pytest
from delivery_dags import ReceiverConnection, orders_contract, sqlite_connection

from dogana_provider.hooks.dogana import DoganaHook, shared_receivers
from dogana_provider.receiver.receiver import UnknownTable

pytestmark = pytest.mark.airflow


def test_a_receiver_that_never_registered_a_table_knows_none(
    receiver_connection: ReceiverConnection,
) -> None:
    """Its own tables do not exist yet: reading a ledger is UnknownTable, not a database error,
    and the first registration makes them."""
    hook = DoganaHook(receiver_connection.conn_id)
    with pytest.raises(UnknownTable, match="no table was ever registered"):
        hook.ledgers(["orders"])
    hook.receiver.register(orders_contract("orders"))
    assert set(hook.ledgers(["orders"])) == {"orders"}
    with pytest.raises(UnknownTable, match="'other'"):
        hook.ledgers(["orders", "other"])


@pytest.mark.parametrize("receiver_connection", ["sqlite"], indirect=True)
def test_hooks_of_one_connection_share_one_receiver_only_inside_shared_receivers(
    receiver_connection: ReceiverConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside shared_receivers (DeliverOperator's steps and batch) a connection's hooks give one
    receiver, so its idle connections pass from step to step; another connection, or a hook
    outside, gets its own."""
    other = "receiver_other"
    monkeypatch.setenv(f"AIRFLOW_CONN_{other.upper()}", sqlite_connection(tmp_path / "other.db"))
    conn_id = receiver_connection.conn_id
    assert DoganaHook(conn_id).receiver is not DoganaHook(conn_id).receiver
    with shared_receivers():
        shared = DoganaHook(conn_id).receiver
        assert DoganaHook(conn_id).receiver is shared
        assert DoganaHook(other).receiver is not shared
        assert DoganaHook(conn_id, prefix="other").receiver is not shared
    assert DoganaHook(conn_id).receiver is not shared
