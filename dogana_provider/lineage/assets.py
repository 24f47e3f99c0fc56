"""The ``dogana`` Asset URI scheme: dogana://<receiver_conn_id>/<table>.

Declared in get_provider_info's ``asset-uris``, as the postgres provider declares
``postgres://``: Airflow calls sanitize_uri on every Asset of the scheme when a DAG is defined,
so a misspelt URI fails there, naming what is wrong, instead of naming an Asset no publication
will ever update. create_asset is the factory Airflow lists for the scheme.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import SplitResult

from airflow.sdk import Asset

from dogana_core.contract import IDENTIFIER

SCHEME = "dogana"
FORMAT = f"{SCHEME}://<receiver_conn_id>/<table>"
# Airflow's connection ids: letters, digits and the separators its UI accepts.
CONN_ID = re.compile(r"[A-Za-z0-9_.-]+", re.ASCII)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """The normal form of a dogana URI, or ValueError naming what is wrong with it."""
    if uri.username is not None or uri.password is not None or uri.port is not None:
        raise ValueError(f"URI format {FORMAT}: no user, password or port, got {uri.netloc!r}")
    if not CONN_ID.fullmatch(uri.netloc):
        raise ValueError(f"URI format {FORMAT}: {uri.netloc!r} is not a connection id")
    table = uri.path.removeprefix("/")
    if not IDENTIFIER.fullmatch(table):
        raise ValueError(
            f"URI format {FORMAT}: {uri.path!r} is not one table name (a letter or _, then "
            "letters, digits or _)"
        )
    if uri.query:
        raise ValueError(f"URI format {FORMAT}: no query, got {uri.query!r}")
    return uri._replace(scheme=SCHEME)


def create_asset(*, table: str, receiver_conn_id: str = "dogana_default", **kwargs: Any) -> Asset:
    """The Asset of a table published by a receiver; PublishOperator emits its events."""
    return Asset(uri=f"{SCHEME}://{receiver_conn_id}/{table}", **kwargs)
