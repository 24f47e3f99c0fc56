"""The common-sql hook behind a connection id: how a receiver and a source reach their database.

dogana adds no connection type: a connection's own provider gives its hook (SqliteHook,
PostgresHook, MySqlHook). The sqlite provider is a requirement of this package; the others are
extras, so a connection of their type on a machine without them fails here, naming the extra
to install, before Airflow's own "unknown hook type" would leave the user to guess.
"""

from __future__ import annotations

import importlib.util
from typing import Any

# Connection type -> (this package's extra, the Airflow provider's module that holds its hook).
EXTRAS: dict[str, tuple[str, str]] = {
    "postgres": ("postgres", "airflow.providers.postgres"),
    "mysql": ("mysql", "airflow.providers.mysql"),
}


class MissingExtra(RuntimeError):
    """A connection's provider is not installed; the message names the pip install to run."""


def sql_hook(conn_id: str, role: str) -> Any:
    """The DbApiHook of connection conn_id, which serves as role (a receiver, a source)."""
    from airflow.providers.common.sql.hooks.sql import DbApiHook
    from airflow.sdk import BaseHook

    connection = BaseHook.get_connection(conn_id)
    conn_type = str(connection.conn_type or "")
    require_provider(conn_id, conn_type)
    hook = connection.get_hook()
    if not isinstance(hook, DbApiHook):
        raise ValueError(
            f"connection {conn_id!r} is of type {conn_type!r}, whose hook {type(hook).__name__} "
            f"is not a common-sql DbApiHook; a dogana {role} needs a sqlite, postgres or mysql "
            "connection"
        )
    return hook


def require_provider(conn_id: str, conn_type: str) -> None:
    """Raise MissingExtra when conn_type's hook is in a provider this machine lacks."""
    if conn_type not in EXTRAS:
        return
    extra, module = EXTRAS[conn_type]
    if importlib.util.find_spec(module) is not None:
        return
    distribution = "apache-airflow-providers-" + module.rpartition(".")[2]
    raise MissingExtra(
        f"connection {conn_id!r} is of type {conn_type!r}, whose hook is in {distribution}, "
        f"which is not installed here. Install dogana with its {extra} extra on every machine "
        f"that runs tasks: pip install 'airflow-provider-dogana[{extra}]'"
    )
