"""The operator's command on a table's schema versions.

    dogana schema RECEIVER TABLE    each version: when, which delivery brought it, what changed

A version is the source's columns as an extract discovered them before reading, recorded when
the delivery bringing a change was published (dogana_provider/schema/); the policy it was
declared with governs the change after it.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from dogana_provider.cli.common import (
    OK,
    Command,
    Refused,
    open_receiver,
    receiver_argument,
    receiver_call,
)
from dogana_provider.receiver.transactions import transaction
from dogana_provider.report.table import plural, text_table, when
from dogana_provider.schema.policy import column_dict
from dogana_provider.schema.versions import SchemaVersion, SchemaVersions, judged_dict

SCHEMA_EXAMPLES = """
examples:
  # every schema version of table orders in the receiver behind dogana_default
  dogana schema dogana_default orders

  # the same as JSON, from a SQLite warehouse
  dogana schema sqlite:///data/warehouse.db orders --json
"""


def add_commands(command: Command) -> None:
    """schema."""
    schema = command(
        "schema",
        "a table's schema versions: when, which delivery, what changed",
        """
        Read a live receiver (an Airflow connection id or a database URL) and print each schema
        version of a table, oldest first: when it was published, the publication and the
        delivery (manifest identity) that brought it, and each change with its outcome under
        the policy of the version before it (recorded, applied: a widened published column,
        discarded, refused). Then the held version's columns and its policy, which governs the
        next change. A table whose extracts never checked a schema has no version.
        """,
        SCHEMA_EXAMPLES,
    )
    receiver_argument(schema)
    schema.add_argument("table", metavar="TABLE", help="the table, as its contract names it")
    schema.add_argument("--json", action="store_true", help="print the versions as JSON")
    schema.set_defaults(run=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    with open_receiver(args.receiver) as (hook, name):
        receiver = hook.receiver
        receiver_call(lambda: receiver.ledger(args.table), name)  # an unknown table refuses
        versions = SchemaVersions(receiver.dialect, receiver.store.prefix)
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            history = versions.history(connection, args.table)
    if args.json:
        print(json.dumps([_as_dict(version) for version in history], indent=2))
        return OK
    if not history:
        raise Refused(
            f"receiver {name}: table {args.table} has no schema version: no extract with the "
            "receiver's connection has published it yet"
        )
    print(f"receiver {name}: table {args.table}, {plural(len(history), 'schema version')}")
    print()
    rows = []
    for version in history:
        changes = [str(j) for j in version.judged] or ["-"]
        first = [
            version.version,
            when(_instant(version.published_at)),
            (version.publication_id or "-")[:12],
            version.manifest_identity[:12],
        ]
        rows.append([*first, changes[0]])
        rows += [["", "", "", "", change] for change in changes[1:]]
    print(text_table(["version", "published", "publication", "delivery", "changes"], rows))
    held = history[-1]
    print()
    print(f"version {held.version}'s columns, under policy {held.policy}:")
    print(
        text_table(
            ["column", "type", "nullable", "source type"],
            [
                [c.name, c.type, "yes" if c.nullable else "no", c.native or "-"]
                for c in held.columns
            ],
            indent="  ",
        )
    )
    return OK


def _instant(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _as_dict(version: SchemaVersion) -> dict[str, Any]:
    return {
        "version": version.version,
        "published_at": version.published_at,
        "publication_id": version.publication_id,
        "manifest_identity": version.manifest_identity,
        "policy": version.policy.to_dict(),
        "columns": [column_dict(column) for column in version.columns],
        "changes": [judged_dict(judged) for judged in version.judged],
    }
