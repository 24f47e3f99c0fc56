"""Lineage edges as people read them (receiver/lineage_store.py): what fed a table, what a
source produced, a table's sources. `dogana lineage`, `dogana status --table` and the UI page
print through these, so they read alike.

Ids are shortened to their first twelve characters, as receipt lines shorten them; the JSON
(Edge.to_dict) carries them whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver.lineage_store import Edge, Feeding
from dogana_provider.report.table import text_table, when

SHORT = 12


def source_name(origin: Origin) -> str:
    """A source as a person names it: connection and table, either unknown as '-'."""
    if origin.source_conn_id is None and origin.source is None:
        return "-"
    return f"{origin.source_conn_id or '-'}: {origin.source or '-'}"


def task_instance(origin: Origin) -> str:
    """The DAG, run and task that read the source: dag / run / task, or '-' when unknown."""
    parts = (origin.dag_id, origin.run_id, origin.task_id)
    if all(part is None for part in parts):
        return "-"
    return " / ".join(part or "-" for part in parts)


def fed_by(edges: Sequence[Edge], *, indent: str = "") -> str:
    """The publications into one table, newest first: their sources and task instances."""
    header = ["published at", "source", "dag / run / task", "rows", "produced at"]
    rows = [
        [
            when(e.published_at),
            source_name(e.origin),
            task_instance(e.origin),
            e.rows,
            when(e.produced_at),
            *_ids(e),
        ]
        for e in edges
    ]
    return text_table([*header, "publication", "manifest"], rows, indent=indent)


def produced(edges: Sequence[Edge], *, indent: str = "") -> str:
    """The publications a source fed, newest first: into which table, read by which task."""
    header = ["published at", "table", "source", "dag / run / task", "rows", "produced at"]
    rows = [
        [
            when(e.published_at),
            e.table,
            source_name(e.origin),
            task_instance(e.origin),
            e.rows,
            when(e.produced_at),
            *_ids(e),
        ]
        for e in edges
    ]
    return text_table([*header, "publication", "manifest"], rows, indent=indent)


def sources(feeding: Sequence[Feeding], *, indent: str = "") -> str:
    """A table's sources, the most recent first: how many publications each fed, and when last."""
    rows = [[source_name(f.origin), f.publications, when(f.last_published_at)] for f in feeding]
    return text_table(["source", "publications", "last published at"], rows, indent=indent)


def _ids(edge: Edge) -> list[str]:
    return [edge.publication_id[:SHORT], edge.manifest_identity[:SHORT]]
