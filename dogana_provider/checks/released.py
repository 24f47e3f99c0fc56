"""Rows a person released: how a staged row is known again in a later delivery.

A release of a held delivery (receiver/holds.py) is a person's judgment on the rows a held
expectation faulted: these rows, as they are, are acceptable. The release records each of them
as accepted for that expectation as declared then (its rule): the row's key and a hash of its
content, in the store's released rows. A later delivery carrying the same row with the same
content (the next full read, a changes read still inside its lookback) is not held for it again
(expectations.unreleased); a row whose content changed hashes otherwise and is judged afresh; an
expectation declared anew with another rule judges every row afresh.

Only a rule that faults rows can be released row by row: a null, a value beyond a min or max, a
row failing a predicate, a value a unique_check finds repeated. A rule about the whole delivery
(a distinct count, an aggregate, the row count) faults no row in particular, so a release covers
it for the released delivery alone.

A row's content is every staged column but the staging row number and the deleted flag, in
column name order, each value as the database spells it as text (an instant in UTC, whatever the
session's time zone), prefixed with its length so that no two rows spell alike, and NULL apart
from every value; hashed with SHA-256. Recording and excluding are set-based SQL over the staged
rows (INSERT ... SELECT, NOT EXISTS); SQLite, which has no SHA-256 of its own, computes it with a
deterministic function registered on the connection, inside the statement. A hash is compared
only with hashes the same database made.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dogana_core.contract import Contract
from dogana_provider.checks.expectations import Expectation, Expectations
from dogana_provider.dialects import Dialect
from dogana_provider.staging import ROW_COLUMN, Staged


def rule(expectation: Expectation) -> str:
    """The digest of an expectation as declared: a release covers this rule, not its name."""
    text = json.dumps(Expectations((expectation,)).to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_hash(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> str:
    """The SQL of a staged row's content hash, its columns qualified by the staging table."""
    deleted = contract.deleted_column
    columns = sorted(name for name, _ in staged.columns if name not in (ROW_COLUMN, deleted))
    return dialect.sha256_hex(connection, _spelled(dialect, staged, columns))


def row_key(dialect: Dialect, staged: Staged, contract: Contract) -> str:
    """The SQL of a staged row's key as text, for a person reading what was released; ''
    for a keyless table, whose rows are known by their content alone."""
    return _spelled(dialect, staged, list(contract.key)) if contract.key else "''"


def _spelled(dialect: Dialect, staged: Staged, columns: list[str]) -> str:
    table = dialect.quote(staged.table)
    parts = []
    for column in columns:
        value = dialect.spelled(f"{table}.{dialect.quote(column)}", staged.logical(column))
        spelled = dialect.concat([dialect.char_length(value), "':'", value])
        parts.append(f"COALESCE({spelled}, '-')")
    return dialect.concat(parts) if parts else "''"
