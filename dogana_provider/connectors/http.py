"""An HTTP JSON API, page by page, through Airflow's HttpHook (the `http` extra).

    HttpJsonConnector({
        "conn_id": "shop_api",                 # an http connection: host, auth, headers
        "endpoint": "/v1/order-changes",
        "columns": {"seq": "int", "order_id": "int", "amount": "float", "deleted": "bool"},
        "paths": {"order_id": "order.id", "amount": "order.amount"},   # nested fields
        "key": ["order_id"],
        "pagination": {"type": "cursor", "cursor_field": "seq"},
        "feed": True,                          # the cursor walks a change log in commit order
        "deleted_field": "deleted",
        "instant_field": "as_of",              # the server's instant in each body
    })

Records are flattened to the declared columns: a column reads the record's field of its own
name, or the nested field its ``paths`` entry names, a dotted path through objects
(``"customer_id": "customer.id"`` reads ``{"customer": {"id": 7}}``; dlt would call that column
``customer__id``). A missing field or a null object on the way is a null; an array on the way,
or a value of another JSON kind than declared, does not fit.

Pagination, each page's records at ``records`` (default "data") in the body:

- cursor: the server's opaque token (``next_cursor``, sent back as ``cursor``); the last page
  has none. With ``cursor_field``, a record field in commit order the API also takes as
  ``after``, a position can point after any row, and the end of a read whose last page gave no
  token is the last row's value: the peer found that without it a resume restarts from the
  beginning. Without one, such a read is refused (no_position) rather than resumed from nowhere.
- page: ``page`` and ``per_page``; offset: ``offset`` and ``limit``. A page shorter than the
  size is the last.

What a read proves. Only a change log walked in commit order (``feed``, cursor pagination)
proves anything: read from its start, it is the table at the last page's instant (a complete
read issuing its position); from a position, the changes since, checkpoint generation, with
tombstones when a record field says which are deletions. A paged collection (page numbers,
offsets, or a cursor over current rows) is not one snapshot: rows created or deleted between
pages make the read a set the source held at no instant (docs/concepts.md, "A paged API is not
one snapshot"), so it proves no shape, and an extract of it is refused. produced_at is the
server's instant: ``instant_field`` of the last page's body, else its Date header (whole
seconds, taken as the lower bound it is); an answer with neither is refused, never stamped with
the worker's clock.

Requests are retried with backoff on 429, 5xx and a broken connection (tenacity), waiting what a
Retry-After asks; when the attempts run out, the source is unavailable, an operational failure
that raises (SourceUnavailable), not a refusal. A body that is not JSON (not_json), JSON cut
short (malformed_json), a record whose value does not fit its declared column
(record_does_not_fit, naming the record and the field's path) or that has no key
(record_missing_key) refuses the read, naming the page. Each body is parsed by Arrow's JSON
reader into an explicit schema of the declared columns, nested objects as structs, and each
column taken from it by its path: no Python object per value. Only a refusal parses the page
again in Python, to name the record that did not fit.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from dogana_core.contract import IDENTIFIER
from dogana_core.shape import Shape
from dogana_core.values import Position, Scalar
from dogana_provider.connectors.contract import (
    Connector,
    ConnectorError,
    Health,
    Proof,
    Reading,
    RefusedRead,
    Stream,
    StreamColumn,
    check_bounded,
    check_limit,
)
from dogana_provider.delivery.files import CANONICAL

PAGINATIONS = ("cursor", "page", "offset")
START = "start"  # the position of a read that has read nothing from the start
NOT_ONE_SNAPSHOT = (
    "a paged API is not one snapshot: rows created or deleted between pages make the read a "
    "set the source held at no instant"
)
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "cursor": {"cursor_param": "cursor", "after_param": "after", "size_param": "limit"},
    "page": {"page_param": "page", "size_param": "per_page", "start_page": 1},
    "offset": {"offset_param": "offset", "size_param": "limit"},
}


class SourceUnavailable(ConnectorError):
    """The API did not answer after every retry: an operational failure, not a refusal."""


class _Retry(Exception):
    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HttpJsonConnector(Connector):
    """An HTTP JSON API's collection or change log as one stream (see the module's text)."""

    kind = "http"
    options: ClassVar[Mapping[str, str]] = {
        "conn_id": "the Airflow http connection: base URL, auth, headers",
        "endpoint": "the collection's path",
        "stream": "the stream's name (by default the endpoint's last part)",
        "columns": "column -> logical type, in order: each record flattened to them",
        "paths": "column -> the dotted path of the nested field it reads (customer.id)",
        "key": "the key columns",
        "records": "the body's field holding a page's records (default data)",
        "pagination": "{type: cursor|page|offset, size, and the parameters' names}",
        "feed": "true when the cursor walks a change log in commit order from its start",
        "deleted_field": "a bool field true for a deletion",
        "instant_field": "the body's field holding the server's instant (else its Date header)",
        "retries": "attempts per request on 429, 5xx and broken connections (default 5)",
        "backoff": "seconds before the first retry, doubling (default 1)",
        "max_backoff": "the longest wait between attempts, Retry-After included (default 60)",
        "timeout": "seconds a request may take (default 30)",
    }
    required = ("conn_id", "endpoint", "columns")

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.session: Any = None
        self.url = ""

    # Configuration ----------------------------------------------------------------------------

    @property
    def pagination(self) -> dict[str, Any]:
        given = dict(self.option("pagination") or {"type": "cursor"})
        kind = str(given.get("type", "cursor"))
        return {"size": 100, **DEFAULT_PARAMS.get(kind, {}), **given, "type": kind}

    @property
    def paths(self) -> dict[str, tuple[str, ...]]:
        """Each column -> the path of the record's field it reads: its own name by default."""
        given = dict(self.option("paths") or {})
        return {
            name: tuple(str(given.get(name, name)).split(".")) for name in self.config["columns"]
        }

    def number(self, option: str, default: float) -> float:
        return float(self.option(option, default))

    def check(self) -> tuple[str, ...]:
        problems: list[str] = []
        for option in ("conn_id", "endpoint", "records", "stream", "instant_field"):
            value = self.config.get(option)
            if option in self.config and (not isinstance(value, str) or not value):
                problems.append(f"{option}: {value!r} is not a name")
        columns = self.config.get("columns")
        if "columns" in self.config:
            if not isinstance(columns, Mapping) or not columns:
                problems.append("columns: a mapping from column to logical type, not empty")
                columns = {}
            for name, kind in columns.items():
                if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
                    problems.append(f"columns: {name!r} is not a column name")
                if kind not in CANONICAL:
                    problems.append(
                        f"columns: {name}: {kind!r} is not one of {', '.join(CANONICAL)}"
                    )
        columns = columns if isinstance(columns, Mapping) else {}
        key = self.config.get("key", [])
        if not isinstance(key, list | tuple) or not all(isinstance(k, str) for k in key):
            problems.append(f"key: {key!r} is not a list of column names")
        else:
            problems += [f"key: {k!r} is not one of the columns" for k in key if k not in columns]
        pagination = self.config.get("pagination", {"type": "cursor"})
        if not isinstance(pagination, Mapping):
            problems.append("pagination: a mapping with its type")
        else:
            kind = pagination.get("type", "cursor")
            if kind not in PAGINATIONS:
                problems.append(f"pagination: type {kind!r} is not one of {', '.join(PAGINATIONS)}")
            known = {"type", "size", "cursor_field", "next_cursor", *DEFAULT_PARAMS.get(kind, {})}
            problems += [
                f"pagination: {name!r} is not an option of {kind} pagination"
                for name in pagination
                if name not in known
            ]
            size = pagination.get("size", 100)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                problems.append(f"pagination: size {size!r} is not a positive number of records")
            field = pagination.get("cursor_field")
            if field is not None and columns.get(field) not in ("int", "str"):
                problems.append(f"pagination: cursor_field {field!r} is not an int or str column")
            if self.config.get("feed") and kind != "cursor":
                problems.append("feed: a change log is walked by cursor, not by page or offset")
        problems += _path_problems(self.config.get("paths", {}), columns)
        deleted = self.config.get("deleted_field")
        if deleted is not None and columns.get(deleted) != "bool":
            problems.append(f"deleted_field: {deleted!r} is not a bool column")
        if not isinstance(self.config.get("feed", False), bool):
            problems.append("feed: true or false")
        for option in ("retries", "backoff", "max_backoff", "timeout"):
            value = self.config.get(option, 1)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"{option}: {value!r} is not a positive number")
        return tuple(problems)

    # Session ----------------------------------------------------------------------------------

    def open(self) -> None:
        try:
            from airflow.providers.http.hooks.http import HttpHook
        except ImportError:
            raise ConnectorError(
                "the http connector needs Airflow's http provider: "
                "pip install 'airflow-provider-dogana[http]'"
            ) from None
        hook = HttpHook(method="GET", http_conn_id=str(self.config["conn_id"]))
        self.session = hook.get_conn()
        self.url = hook.url_from_endpoint(str(self.config["endpoint"]))

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def get(self, params: Mapping[str, Any]) -> Any:
        """One page, retried on 429, 5xx and broken connections; any other 4xx raises."""
        import requests
        import tenacity

        attempts = int(self.number("retries", 5))
        backoff, longest = self.number("backoff", 1), self.number("max_backoff", 60)

        def wait(state: tenacity.RetryCallState) -> float:
            failure = state.outcome.exception() if state.outcome else None
            asked = getattr(failure, "retry_after", None)
            if asked is not None:
                return float(min(asked, longest))
            return float(min(backoff * 2 ** (state.attempt_number - 1), longest))

        try:
            for attempt in tenacity.Retrying(
                stop=tenacity.stop_after_attempt(attempts),
                wait=wait,
                retry=tenacity.retry_if_exception_type(_Retry),
                reraise=True,
            ):
                with attempt:
                    try:
                        response = self.session.get(
                            self.url, params=dict(params), timeout=self.number("timeout", 30)
                        )
                    except (requests.ConnectionError, requests.Timeout) as exc:
                        raise _Retry(f"{type(exc).__name__}: {exc}", None) from None
                    status = response.status_code
                    if status == 429 or status >= 500:
                        raise _Retry(f"HTTP {status}", _retry_after(response))
                    if status >= 400:
                        raise ConnectorError(
                            f"{self.url} {dict(params)}: HTTP {status}: {response.text[:200]}"
                        )
                    return response
        except _Retry as exc:
            raise SourceUnavailable(
                f"{self.url} {dict(params)}: {exc} after {attempts} attempts"
            ) from None
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover

    # Operations -------------------------------------------------------------------------------

    def discover(self) -> tuple[Stream, ...]:
        self.connect()
        columns = tuple(StreamColumn(n, k) for n, k in dict(self.config["columns"]).items())
        name = self.option("stream") or str(self.config["endpoint"]).strip("/").split("/")[-1]
        return (
            Stream(
                str(name),
                columns,
                tuple(self.option("key", ())),
                self.option("deleted_field"),
            ),
        )

    def health(self) -> Health:
        problems = self.validate()
        if problems:
            return Health(False, "; ".join(problems))
        try:
            self.connect()
            response = self.get(_first_page(self.pagination, size=1))
        except Exception as exc:  # health reports whatever stops the source; it never raises
            return Health(False, f"{type(exc).__name__}: {exc}")
        return Health(True, f"{self.url}: HTTP {response.status_code}")

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        start = None if since is None else _position(str(since), self.pagination)
        return HttpReading(self, found, start, limit=limit, end=None)

    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        check_bounded(low, high)
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        end = _position(str(high), self.pagination)
        if end is None or end[0] == "cursor":
            raise RefusedRead(
                "unbounded_backfill",
                f"{high!r}: a backfill ends at a row's position (after:VALUE or offset:N), "
                "which the server's opaque tokens do not name",
            )
        start = _position(str(low), self.pagination)
        return HttpReading(self, found, start, limit=limit, end=end)


def _retry_after(response: Any) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def _first_page(pagination: Mapping[str, Any], *, size: int | None = None) -> dict[str, Any]:
    size = size or int(pagination["size"])
    if pagination["type"] == "page":
        return {pagination["page_param"]: pagination["start_page"], pagination["size_param"]: size}
    if pagination["type"] == "offset":
        return {pagination["offset_param"]: 0, pagination["size_param"]: size}
    return {pagination["size_param"]: size}


def _position(text: str, pagination: Mapping[str, Any]) -> tuple[str, str] | None:
    """A position's kind and value: cursor:TOKEN, after:VALUE or offset:N; start is None."""
    if text == START:
        return None
    kind, sep, value = text.partition(":")
    allowed = {"cursor": ("cursor", "after"), "page": ("offset",), "offset": ("offset",)}
    if not sep or kind not in allowed[pagination["type"]]:
        raise ConnectorError(
            f"{text!r} is not a position of {pagination['type']} pagination "
            f"({' or '.join(k + ':...' for k in allowed[pagination['type']])})"
        )
    if kind == "offset" and not value.isdigit():
        raise ConnectorError(f"{text!r}: an offset is a number of records")
    return kind, value


def _path_problems(paths: Any, columns: Mapping[str, Any]) -> list[str]:
    """What is wrong with the paths option: each a declared column's, none empty, and no field
    both a value and an object holding others (order and order.id)."""
    if not isinstance(paths, Mapping):
        return ["paths: a mapping from column to the dotted path of a record's field"]
    problems: list[str] = []
    for name, path in paths.items():
        if name not in columns:
            problems.append(f"paths: {name!r} is not one of the columns")
        elif not isinstance(path, str) or "" in path.split("."):
            problems.append(f"paths: {name}: {path!r} is not a dotted path (customer.id)")
    if problems:
        return problems
    every = {name: str(paths.get(name, name)) for name in columns if isinstance(name, str)}
    reader = {path: name for name, path in every.items()}
    for name, path in every.items():
        if list(every.values()).count(path) > 1:
            problems.append(f"paths: {path} is read by more than one column")
        parts = path.split(".")
        for end in range(1, len(parts)):
            held = reader.get(".".join(parts[:end]))
            if held is not None:
                problems.append(
                    f"paths: {'.'.join(parts[:end])} is both column {held}'s value and the "
                    f"object holding column {name}'s {path}"
                )
    return sorted(set(problems))


def _record_type(paths: Mapping[str, tuple[str, ...]], schema: pa.Schema) -> pa.StructType:
    """A record's Arrow type: each column's field at its path, nested objects as structs."""
    tree: dict[str, Any] = {}
    for name, path in paths.items():
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = schema.field(name).type

    def struct(node: dict[str, Any]) -> pa.StructType:
        return pa.struct([(k, struct(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return struct(tree)


JSON_KINDS = {"int": "number", "float": "number", "str": "string", "bool": "boolean"}
"""The JSON kind of each declared type's values, as Arrow's JSON reader names kinds; dates and
instants are strings Arrow parses."""


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _misfit(
    records: Any, paths: Mapping[str, tuple[str, ...]], types: Mapping[str, str]
) -> str | None:
    """The first record whose field at a column's path is not what was declared, said in
    words; None when none is found (then Arrow's own message must do). Only for a refusal."""
    if not isinstance(records, list):
        return None
    for number, record in enumerate(records, 1):
        for name, path in paths.items():
            value = record
            for depth, part in enumerate(path):
                if value is None:
                    break
                if not isinstance(value, dict):
                    where = ".".join(path[:depth]) or "the record"
                    return (
                        f"record {number}: {where} is {_kind(value)}, not an object holding "
                        f"{'.'.join(path)} (column {name})"
                    )
                value = value.get(part)
            else:
                kind = types[name]
                if value is None or (kind not in JSON_KINDS and _kind(value) == "string"):
                    continue
                fits = _kind(value) == JSON_KINDS.get(kind) and not (
                    kind == "int" and isinstance(value, float) and not value.is_integer()
                )
                if not fits:
                    return (
                        f"record {number}: {'.'.join(path)} is {_kind(value)} "
                        f"{json.dumps(value)[:40]}, not the {kind} column {name} declares"
                    )
    return None


class HttpReading(Reading):
    """One read of an API's collection, page after page, from a position or the start."""

    def __init__(
        self,
        connector: HttpJsonConnector,
        stream: Stream,
        start: tuple[str, str] | None,
        *,
        limit: int | None,
        end: tuple[str, str] | None,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.start = start
        self.limit = limit
        self.end = end
        self.pagination = connector.pagination
        self.at: tuple[str, str] | None = start
        self.rows = 0
        self.finished = False
        self.stopped_by_limit = False
        self.produced_at: datetime | None = None
        self.pages = 0
        self._skip = 0  # rows of the first page before the position (page pagination)
        self.schema = stream.schema()
        self.paths = connector.paths
        records = _record_type(self.paths, self.schema)
        fields = [(str(connector.option("records", "data")), pa.list_(records))]
        fields.append((str(self.pagination.get("next_cursor", "next_cursor")), pa.string()))
        instant = connector.option("instant_field")
        if instant:
            fields.append((str(instant), pa.string()))
        self.body_schema = pa.schema(fields)

    def checkpoint(self) -> Position:
        if self.at is None:
            if self.rows == 0:
                return START
            raise RefusedRead(
                "no_position",
                f"{self.connector.url}: the read stopped inside a page or on a last page "
                "without a next cursor, and no cursor_field names a row's position: a resume "
                "would restart from the beginning",
            )
        return f"{self.at[0]}:{self.at[1]}"

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        params = self._params(self.at)
        skip = self._skip
        while True:
            if self.limit is not None and self.rows >= self.limit:
                self.stopped_by_limit = True
                break
            response = self.connector.get(params)
            self.pages += 1
            batch, following = self._page(response)
            size = int(self.pagination["size"])
            short = self.pagination["type"] != "cursor" and batch.num_rows < size
            if skip:
                batch, skip = batch.slice(skip), 0
            taken = batch
            if self.end is not None:
                taken = self._before_end(batch)
            if self.limit is not None and taken.num_rows > self.limit - self.rows:
                taken = taken.slice(0, self.limit - self.rows)
            self.rows += taken.num_rows
            whole_page = taken.num_rows == batch.num_rows
            self.at = self._after(taken, following if whole_page else None, whole_page)
            if taken.num_rows:
                yield taken
            if not whole_page:
                self.stopped_by_limit = self.end is None
                break
            ended = (
                batch.num_rows == 0
                or short
                or (self.pagination["type"] == "cursor" and following is None)
            )
            if ended:
                break
            params = (
                self._params(self.at) if following is None else self._params(("cursor", following))
            )
        self.finished = True

    def proof(self) -> Proof:
        if self.produced_at is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        position = self.checkpoint()
        shape: Shape | None
        if self.stopped_by_limit:
            shape, why = None, "stopped by its limit before the last page"
        elif self.end is not None:
            shape, why = None, "a backfill rereads a past range; it proves no new shape"
        elif not (self.connector.option("feed") and self.pagination["type"] == "cursor"):
            shape, why = None, NOT_ONE_SNAPSHOT
        elif self.start is None:
            shape = Shape.complete()
            why = "the change log from its start, folded: the table at the last page's instant"
        else:
            deleted = self.stream.deleted_column is not None
            shape = Shape.changes(checkpoint="generation", tombstones=deleted)
            why = "the change log after the held position"
        instant = self.connector.option("instant_field")
        clock = f"the server's {instant!r} in the last page" if instant else "its Date header"
        return Proof(
            shape,
            self.produced_at,
            clock,
            None if self.start is None else f"{self.start[0]}:{self.start[1]}",
            position,
            f"{why} ({self.pages} pages)",
        )

    # Pages ------------------------------------------------------------------------------------

    def _params(self, at: tuple[str, str] | None) -> dict[str, Any]:
        pagination = self.pagination
        params = _first_page(pagination)
        if at is None:
            return params
        kind, value = at
        if kind == "offset":
            offset = int(value)
            if pagination["type"] == "page":
                size = int(pagination["size"])
                page = int(pagination["start_page"]) + offset // size
                params[pagination["page_param"]] = page
                self._skip = offset % size
            else:
                params[pagination["offset_param"]] = offset
        elif kind == "after":
            params[pagination["after_param"]] = value
        else:
            params[pagination["cursor_param"]] = value
        return params

    def _page(self, response: Any) -> tuple[pa.RecordBatch, str | None]:
        """A page's records in the stream's columns, and its next cursor."""
        where = f"{self.connector.url} page {self.pages} ({response.request.url})"
        raw = response.content
        kind = response.headers.get("Content-Type", "")
        if "json" not in kind and not raw.lstrip().startswith((b"{", b"[")):
            raise RefusedRead(
                "not_json", f"{where}: the body is {kind or 'untyped'}, not JSON: {raw[:80]!r}"
            )
        try:
            body = pa_json.read_json(
                io.BytesIO(raw),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=self.body_schema,
                    unexpected_field_behavior="ignore",
                    newlines_in_values=True,
                ),
            )
        except pa.ArrowInvalid as exc:
            raise self._refusal(str(exc).removeprefix("JSON parse error: "), raw, where) from None
        if body.num_rows != 1:
            raise RefusedRead("malformed_json", f"{where}: {body.num_rows} JSON values, not one")
        self.produced_at = self._instant(body, response, where)
        records = body.column(0).combine_chunks()
        if records.null_count:
            raise RefusedRead("malformed_json", f"{where}: no {body.schema[0].name} list")
        flat = records.flatten()
        batch = pa.RecordBatch.from_arrays(
            [pc.struct_field(flat, list(self.paths[c.name])) for c in self.stream.columns],
            schema=self.schema,
        )
        for name in self.stream.key:
            missing = batch.column(name).null_count
            if missing:
                row = pc.index(pc.is_null(batch.column(name)), True).as_py()
                path = ".".join(self.paths[name])
                what = "a key column" if path == name else f"the key column {name}"
                raise RefusedRead(
                    "record_missing_key", f"{where}: record {row + 1} has no {path}, {what}"
                )
        following = body.column(1)[0].as_py()
        return batch, following

    def _refusal(self, message: str, raw: bytes, where: str) -> RefusedRead:
        """Why Arrow could not read a page into the declared schema: a record that does not fit
        (named, with its field's path), else JSON that is not the page's."""
        records = str(self.connector.option("records", "data"))
        pointer = re.search(r"Column\((/[^)]*)\) changed from (\w+) to (\w+)", message)
        inside = pointer is not None and pointer.group(1).startswith(f"/{records}/[]/")
        if not inside and "Failed to convert JSON" not in message:
            return RefusedRead("malformed_json", f"{where}: {message}")
        try:
            found = _misfit(
                json.loads(raw).get(records),
                self.paths,
                {c.name: c.type for c in self.stream.columns},
            )
        except (ValueError, AttributeError):
            found = None
        if found is None and pointer is not None:
            path = pointer.group(1).removeprefix(f"/{records}/[]/").replace("/", ".")
            found = f"{path} is {pointer.group(3)}, not {pointer.group(2)}"
        declared = ", ".join(
            f"{c.name} {c.type}"
            if self.paths[c.name] == (c.name,)
            else f"{c.name} {c.type} at {'.'.join(self.paths[c.name])}"
            for c in self.stream.columns
        )
        return RefusedRead(
            "record_does_not_fit",
            f"{where}: {found or message}; the declared columns are {declared}",
        )

    def _instant(self, body: pa.Table, response: Any, where: str) -> datetime:
        field = self.connector.option("instant_field")
        try:
            if field:
                text = body.column(str(field))[0].as_py()
                if text is None:
                    raise RefusedRead("no_server_instant", f"{where}: the body has no {field}")
                found = datetime.fromisoformat(text)
                if found.tzinfo is None:
                    raise RefusedRead(
                        "no_server_instant", f"{where}: {field} {text!r} carries no UTC offset"
                    )
                return found.astimezone(UTC)
            date = response.headers.get("Date")
            if date is None:
                raise RefusedRead(
                    "no_server_instant",
                    f"{where}: no Date header and no instant_field: the read's instant would "
                    "be the worker's clock",
                )
            return parsedate_to_datetime(date).astimezone(UTC)
        except ValueError as exc:
            raise RefusedRead("no_server_instant", f"{where}: {exc}") from None

    def _after(
        self, taken: pa.RecordBatch, following: str | None, whole_page: bool
    ) -> tuple[str, str] | None:
        """The position after the rows taken so far."""
        field = self.pagination.get("cursor_field")
        kind = self.pagination["type"]
        if kind != "cursor":
            done = self.rows + (0 if self.start is None else int(self.start[1]))
            return ("offset", str(done))
        if whole_page and following is not None:
            return ("cursor", following)
        if taken.num_rows == 0:
            return self.at
        if field is not None:
            return ("after", str(taken.column(field)[-1].as_py()))
        return None

    def _before_end(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        assert self.end is not None
        kind, value = self.end
        if kind == "offset":
            done = self.rows + (0 if self.start is None else int(self.start[1]))
            return batch.slice(0, max(0, int(value) - done))
        field = str(self.pagination.get("cursor_field"))
        bound = pa.scalar(value).cast(self.schema.field(field).type)
        return batch.filter(pc.less_equal(batch.column(field), bound))
