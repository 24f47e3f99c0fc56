"""Which of the receiver's own tables exist, read from the catalog once for them all.

A receiver's stores ask whether one of their tables exists before they read it: a store made by
an earlier version has none of the tables added since, until a registration creates them. Asked
one table at a time, that is a catalog query per table in each step of a delivery. Asked through
OwnTables, the first question reads the catalog for every own table and index at once
(Dialect.existing_names); a table found is known for good, since the receiver never drops its
own, and one not found is looked up again at the next question, as another process may have
created it meanwhile; except within one step (OwnTables.step: a gate's sweep and decision, a
publication), where the catalog's answer stands until the step ends. What a step reads of such
a table was written before the step began (a schema version's proposal, by the extract that made
the delivery), so a table made meanwhile holds nothing for it; the tables this process makes
are added as it makes them (made).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from dogana_provider.dialects import Dialect, declared_types


class OwnTables:
    """The receiver's own tables and indexes (Steps.own_names), and those found to exist."""

    def __init__(self, dialect: Dialect, names: Iterable[str]) -> None:
        self.dialect = dialect
        self.names = tuple(names)
        self.found: set[str] = set()
        self.missing: set[str] | None = None
        """Within a step, the names its catalog read did not find (None: outside a step)."""

    @contextmanager
    def step(self) -> Iterator[None]:
        """One step: a name the catalog did not show is missing until the step ends, not
        looked up again. A step within a step is the outer one's."""
        if self.missing is not None:
            yield
            return
        self.missing = set()
        try:
            yield
        finally:
            self.missing = None

    def exist(self, connection: Any, names: Iterable[str]) -> bool:
        """Whether every one of names exists; the catalog is read only while one is not known,
        and within a step only until it was read once."""
        unknown = set(names) - self.found
        if unknown and not (self.missing and unknown <= self.missing):
            self.found |= self.dialect.existing_names(connection, self.names)
            if self.missing is not None:
                self.missing = set(self.names) - self.found
        return not unknown - self.found

    def made(self, names: Iterable[str]) -> None:
        """This process created names (CREATE ... IF NOT EXISTS): they exist."""
        self.found |= set(names)
        if self.missing:
            self.missing -= self.found

    def known(self, name: str) -> bool:
        """Whether name was found to exist already; asks nothing."""
        return name in self.found


def table_exists(connection: Any, dialect: Dialect, name: str, own: OwnTables | None) -> bool:
    """Whether the receiver's table name exists: through own, where a receiver's steps gave the
    store one, else by the table's columns in the catalog."""
    if own is not None and name in own.names:
        return own.exist(connection, (name,))
    return bool(declared_types(connection, dialect, name))
