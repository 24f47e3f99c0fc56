"""A decision handed from the gate task to the publish task: JSON only, never a pickle.

XCom carries wire dictionaries (design.md, How a delivery flows through a DAG), so a Decision
becomes {"receipt": <Receipt wire dict>, "staged": {...} or null}. The staged part says where the
rows wait (the staging table) and what the file said, which publish needs to decide again when
the decision went stale: the file's columns (for the column hash), its row count and the SHA-256
of its bytes. A column's Arrow type travels as its Arrow IPC schema, base64, so it comes back
exactly, whatever it was.
"""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa

from dogana_core.errors import SerializationError
from dogana_provider.delivery.files import Column
from dogana_provider.staging import Staged


def staged_to_dict(staged: Staged) -> dict[str, Any]:
    return {
        "path": staged.path,
        "table": staged.table,
        "columns": [[name, kind] for name, kind in staged.columns],
        "file_columns": [_column_to_dict(column) for column in staged.file_columns],
        "rows": staged.rows,
        "sha256": staged.sha256,
        "unreadable": staged.unreadable,
        "unstorable": staged.unstorable,
        "misnamed": staged.misnamed,
    }


def staged_from_dict(data: Any) -> Staged:
    try:
        return Staged(
            path=str(data["path"]),
            table=str(data["table"]),
            columns=tuple((str(name), str(kind)) for name, kind in data["columns"]),
            file_columns=tuple(_column_from_dict(column) for column in data["file_columns"]),
            rows=int(data["rows"]),
            sha256=None if data["sha256"] is None else str(data["sha256"]),
            unreadable=None if data["unreadable"] is None else str(data["unreadable"]),
            unstorable=bool(data.get("unstorable", False)),
            misnamed=bool(data.get("misnamed", False)),
        )
    except (KeyError, TypeError, ValueError, pa.ArrowInvalid) as exc:
        raise SerializationError("Decision.staged", f"not a staged delivery ({exc})") from None


def _column_to_dict(column: Column) -> dict[str, Any]:
    schema = pa.schema([pa.field(column.name, column.arrow_type)]).serialize()
    return {
        "name": column.name,
        "arrow_schema": base64.b64encode(schema.to_pybytes()).decode("ascii"),
        "logical": column.logical,
        "problem": column.problem,
    }


def _column_from_dict(data: Any) -> Column:
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(data["arrow_schema"])))
    return Column(
        str(data["name"]),
        schema.field(0).type,
        None if data["logical"] is None else str(data["logical"]),
        None if data["problem"] is None else str(data["problem"]),
    )
