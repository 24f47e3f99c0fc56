"""DoganaHook on a receiver database where no table was ever registered."""

from __future__ import annotations

import pytest
from delivery_dags import ReceiverConnection, orders_contract

from dogana_provider.hooks.dogana import DoganaHook
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
