"""DoganaHook: the dogana receiver behind an Airflow connection.

dogana adds no connection type. Any connection whose hook is a common-sql DbApiHook is a
receiver: ``sqlite`` (SqliteHook, the embedded default), ``postgres`` (PostgresHook) and
``mysql`` (MySqlHook, for MySQL and MariaDB). The receiver keeps its tables (one row per table
with contract, ledger and publication head; every receipt) beside the published tables in that
database, under ``prefix``. For example::

    AIRFLOW_CONN_DOGANA_DEFAULT='{"conn_type": "sqlite", "host": "/data/warehouse.db"}'
    AIRFLOW_CONN_DOGANA_DEFAULT='postgresql://loader@db.internal:5432/warehouse'

The hook never logs the connection's URI, login or password: only its id and its type.

Inside ``shared_receivers()`` every hook of one connection and prefix gives the same Receiver:
DeliverOperator's steps, and a batch's deliveries, then borrow each other's idle connections
(transactions.Reusing) and what the receiver found in the catalog once (own_tables.py), instead
of each step opening its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from airflow.providers.common.sql.hooks.sql import DbApiHook
from airflow.sdk import BaseHook

from dogana_core.claims import Claims
from dogana_core.contract import Contract
from dogana_core.ledger import Ledger
from dogana_provider import settings
from dogana_provider.dialects import declared_types
from dogana_provider.hooks.sql import sql_hook
from dogana_provider.receiver.receiver import Receiver, UnknownTable
from dogana_provider.receiver.transactions import transaction
from dogana_provider.report.table import plural

_SHARED: ContextVar[dict[tuple[str, str], Receiver] | None] = ContextVar(
    "dogana_shared_receivers", default=None
)


@contextmanager
def shared_receivers() -> Iterator[None]:
    """Inside, DoganaHook gives one Receiver per connection and prefix (the module docstring)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


class DoganaHook(BaseHook):
    """The receiver (dogana_provider.receiver.Receiver) of one common-sql connection.

    :param receiver_conn_id: a sqlite, postgres or mysql connection (any DbApiHook).
    :param prefix: the prefix of the receiver's own tables in that database.
    """

    conn_name_attr = "receiver_conn_id"
    default_conn_name = "dogana_default"
    hook_name = "Dogana receiver"

    def __init__(
        self, receiver_conn_id: str = default_conn_name, *, prefix: str = "dogana", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.receiver_conn_id = receiver_conn_id
        self.prefix = prefix
        self._receiver: Receiver | None = None

    def get_db_hook(self) -> DbApiHook:
        """The connection's own DbApiHook (SqliteHook, PostgresHook, MySqlHook...)."""
        return sql_hook(self.receiver_conn_id, "receiver")

    def get_conn(self) -> Receiver:
        """The receiver, built once per hook (once per connection inside shared_receivers)."""
        shared = _SHARED.get()
        key = (self.receiver_conn_id, self.prefix)
        if self._receiver is None and shared is not None:
            self._receiver = shared.get(key)
        if self._receiver is None:
            db_hook = self.get_db_hook()
            self._receiver = Receiver.from_hook(
                db_hook, prefix=self.prefix, require_activation=settings.require_activation()
            )
            self.log.info(
                "dogana receiver: connection %r (%s), tables prefixed %r",
                self.receiver_conn_id,
                self._receiver.dialect,
                self.prefix,
            )
            if shared is not None:
                shared[key] = self._receiver
        return self._receiver

    @property
    def receiver(self) -> Receiver:
        return self.get_conn()

    @contextmanager
    def committed(self) -> Iterator[Any]:
        """A read transaction on the receiver: everything read in it is one committed state.

        Separate reads could straddle a group's commit and show two tables at different instants
        (The receiver, what it owes 4). Raises UnknownTable in a database where no table was
        ever registered (the receiver's own tables are made by the first registration).
        """
        receiver = self.receiver
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            if not declared_types(connection, receiver.dialect, f"{self.prefix}_tables"):
                raise UnknownTable(
                    f"no contract is registered in receiver {self.receiver_conn_id!r}: no table "
                    "was ever registered there"
                )
            yield connection

    def ledgers(self, tables: Iterable[str]) -> dict[str, Ledger]:
        """The ledgers of tables, read in ONE read transaction: one committed state.

        A table not registered raises UnknownTable, so a sensor or a freshness check waits or
        reports instead of failing on a missing table.
        """
        found: dict[str, Ledger] = {}
        with self.committed() as connection:
            for table in tables:
                state = self.receiver.store.state(connection, table)
                if state is None:
                    raise UnknownTable(
                        f"no contract is registered for table {table!r} in receiver "
                        f"{self.receiver_conn_id!r}"
                    )
                found[table] = state.ledger
        return found

    def contracts(self) -> list[Contract]:
        """Every contract registered in the receiver, by table name; none in a receiver where
        no table was ever registered."""
        receiver = self.receiver
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            if not declared_types(connection, receiver.dialect, f"{self.prefix}_tables"):
                return []
            return receiver.store.contracts(connection)


def claims_line(claims: Claims) -> str:
    """Claims in one line a person reads at a glance: state, the two dates, the common instant."""

    def iso(value: datetime | None) -> str:
        return "none" if value is None else value.isoformat()

    return (
        f"{claims.state}, complete as of {iso(claims.complete_as_of)}, deletions as of "
        f"{iso(claims.deletions_as_of)}, exact as of {iso(claims.exact_as_of)} "
        f"({plural(claims.count, 'region')})"
    )


def claims_dates(claims: Claims) -> dict[str, str | None]:
    """What a reader uses of claims, as plain JSON a template reads: the state and the three
    dates in ISO 8601 (null when not claimed), without the wire format's tags."""

    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "state": str(claims.state),
        "complete_as_of": iso(claims.complete_as_of),
        "deletions_as_of": iso(claims.deletions_as_of),
        "exact_as_of": iso(claims.exact_as_of),
    }
