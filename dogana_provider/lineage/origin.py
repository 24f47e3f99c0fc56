"""Where a delivery's rows came from: the source and the Airflow task instance that read it.

An Origin travels beside a delivery, as the operators hand it over in XCom: the ExtractOperator
names its source connection, the table (or query) it read and its own task instance; the
GateOperator passes it on, naming itself for a file a sender pushed; the PublishOperator hands
it to the receiver, which writes it into the publication's lineage edge (receiver/lineage.py)
in the commit that records the receipt.

It names, never authenticates: a connection by its id, a file by its URI with any user and
password removed (without_credentials), a query by the digest of its text. Nothing in it is a
credential, so it may sit in XCom and in the receiver's tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

LONGEST = 250
"""The longest text a field holds: Airflow's own limit on dag, run and task ids."""
QUERY = "query:"
"""How a source read by a query (ExtractOperator's table_sql) is named: its text's digest."""


@dataclass(frozen=True)
class Origin:
    """A delivery's source and reader; every field may be unknown (None).

    source_conn_id: the source's Airflow connection; source: the source's table, ``query:``
    and the digest of the query that read it, or the URI of a file a sender pushed; dag_id,
    run_id, task_id: the task instance that read the source (the extract), or that took a
    pushed file (the gate).
    """

    source_conn_id: str | None = None
    source: str | None = None
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise ValueError(f"Origin.{field.name}: {value!r} is not a non-empty string")
            if len(value) > LONGEST:
                raise ValueError(
                    f"Origin.{field.name}: {len(value)} characters, more than {LONGEST}"
                )
            if without_credentials(value) != value:
                raise ValueError(f"Origin.{field.name}: a URI carrying a user or password")

    def to_dict(self) -> dict[str, str | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "origin") -> Origin:
        """An Origin from its dict, as XCom hands it over; ValueError naming what is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, got {str(data)[:80]!r}")
        known = {field.name for field in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{where}: unknown fields {', '.join(sorted(map(str, unknown)))}")
        try:
            return cls(**{name: data.get(name) for name in known})
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None


def of_query(sql: str) -> str:
    """A source read by a query, named by its text's digest: the text may be long, and is the
    DAG's to show, not the receiver's."""
    return QUERY + hashlib.sha256(sql.encode("utf-8")).hexdigest()[:16]


def of_file(uri: str) -> str:
    """A delivered file, by its URI without credentials; a URI longer than a field holds keeps
    its end, the file's own name."""
    named = without_credentials(uri)
    return named if len(named) <= LONGEST else "..." + named[-(LONGEST - 3) :]


def without_credentials(text: str) -> str:
    """text with the user and password of a URI removed; anything else as it is."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        if parts.username is None and parts.password is None:
            return text
        host = parts.netloc.rpartition("@")[2]
    except ValueError:  # not a URI after all (an unmatched bracket, a bad port)
        return text
    return urlunsplit(parts._replace(netloc=host))


def origins_of(data: Any, where: str = "origins") -> dict[str, Origin]:
    """Origins by table, as a gate hands them to publish: {table: origin dict}."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object of origins by table")
    return {
        str(table): Origin.from_dict(item, f"{where}[{table!r}]") for table, item in data.items()
    }
