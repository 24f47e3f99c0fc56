"""A small JSON API for the HTTP connector's tests, run as its own process on 127.0.0.1.

    python api_server.py          prints "port N" once it listens, then serves until killed

It holds a change log of orders, {"seq", "order_id", "amount", "deleted"}, seq in commit order,
and serves it by every pagination the connector speaks, with the faults a real API has:

    GET  /feed?cursor=T|after=SEQ&limit=N   the log by opaque token; the last page has no
                                            next_cursor at all (the peer's defect)
    GET  /pages?page=P&per_page=N           the live orders (folded log) by page number
    GET  /offsets?offset=K&limit=N          the same by offset; each request after the first
                                            deletes the first live order and creates a new one:
                                            a collection that changes while it is read
    GET  /v1/order-changes?...              /feed, each record nested as a shop's API nests it:
                                            {"seq", "deleted", "order": {"id", "amount",
                                            "customer": {"id", "country"}}}, a deletion's order
                                            holding its id only
    GET  /unfit-object/v1/order-changes     its record seq 2's order.customer is a string
    GET  /unfit-value/v1/order-changes      its record seq 2's order.id is a string
    GET  /rate-limited/...                  /feed, whose second request is 429 Retry-After: 2
    GET  /failing/...                       /feed, whose second request is a 500
    GET  /malformed/...                     /feed, whose second page is cut mid-JSON
    GET  /keyless/...                       /feed, one of whose records has no order_id (nested:
                                            no order.id)
    GET  /html/...                          a 200 whose body is an HTML page
    POST /append                            {"orders": [...]} appended to the log
    GET  /hits                              each path's requests: [[path, status, instant]]

Every body carries "as_of", the server's instant to the microsecond, beside the Date header.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
LOG: list[dict[str, Any]] = []
HITS: list[list[Any]] = []
COUNTS: dict[str, int] = {}


def append(order_id: int, amount: float | None, deleted: bool = False) -> None:
    LOG.append({"seq": len(LOG) + 1, "order_id": order_id, "amount": amount, "deleted": deleted})


for n in range(1, 8):
    append(n, n * 10.0)


def token(seq: int) -> str:
    return base64.urlsafe_b64encode(f"after-{seq}".encode()).decode()


def untoken(text: str) -> int:
    return int(base64.urlsafe_b64decode(text.encode()).decode().removeprefix("after-"))


def nest(change: dict[str, Any]) -> dict[str, Any]:
    """A change as a shop's API nests it: the order, and its customer, as objects."""
    order: dict[str, Any] = {"id": change["order_id"]}
    if not change["deleted"]:
        customer = {
            "id": 1000 + change["order_id"],
            "country": ("IT", "FR")[change["order_id"] % 2],
        }
        order.update(amount=change["amount"], customer=customer)
    return {"seq": change["seq"], "deleted": change["deleted"], "order": order}


def live() -> list[dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for change in LOG:
        if change["deleted"]:
            found.pop(change["order_id"], None)
        else:
            found[change["order_id"]] = change
    return sorted(found.values(), key=lambda row: row["order_id"])


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # the test's output stays its own
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with LOCK:
            for order in body["orders"]:
                append(order["order_id"], order.get("amount"), order.get("deleted", False))
        self.reply(200, {"appended": len(body["orders"])})

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        with LOCK:
            if path == "/hits":
                self.reply(200, HITS)
                return
            fault = path.strip("/").split("/")[0]
            COUNTS[fault] = COUNTS.get(fault, 0) + 1
            second = COUNTS[fault] == 2
            if fault == "rate-limited" and second:
                self.reply(429, {"error": "slow down"}, {"Retry-After": "2"})
            elif fault == "failing" and second:
                self.reply(500, {"error": "boom"})
            elif fault == "html":
                self.send(200, b"<html><body>maintenance</body></html>", "text/html")
            elif fault == "pages":
                self.pages(query)
            elif fault == "offsets":
                self.offsets(query)
            else:
                self.feed(query, fault, second, nested=path.endswith("/v1/order-changes"))

    def feed(self, query: dict[str, str], fault: str, second: bool, *, nested: bool) -> None:
        after = untoken(query["cursor"]) if "cursor" in query else int(query.get("after", 0))
        limit = int(query.get("limit", 3))
        changes = [change for change in LOG if change["seq"] > after][:limit]
        page = [nest(change) if nested else dict(change) for change in changes]
        if fault == "keyless" and page:
            if nested:
                del page[-1]["order"]["id"]
            else:
                del page[-1]["order_id"]
        for record in page:
            if record["seq"] == 2 and fault == "unfit-object":
                record["order"]["customer"] = "c-1002"
            elif record["seq"] == 2 and fault == "unfit-value":
                record["order"]["id"] = "2"
        body: dict[str, Any] = {"data": page}
        if page and page[-1]["seq"] < LOG[-1]["seq"]:
            body["next_cursor"] = token(page[-1]["seq"])
        if fault == "malformed" and second:
            raw = self.encoded(body)
            self.send(200, raw[: len(raw) // 2], "application/json")
        else:
            self.reply(200, body)

    def pages(self, query: dict[str, str]) -> None:
        size = int(query.get("per_page", 3))
        start = (int(query.get("page", 1)) - 1) * size
        self.reply(200, {"data": live()[start : start + size]})

    def offsets(self, query: dict[str, str]) -> None:
        offset, size = int(query.get("offset", 0)), int(query.get("limit", 3))
        if offset > 0:  # between pages, a row the read has passed goes and a new one comes
            rows = live()
            append(rows[0]["order_id"], None, deleted=True)
            append(max(row["order_id"] for row in rows) + 1, 1.0)
        self.reply(200, {"data": live()[offset : offset + size]})

    def encoded(self, body: Any) -> bytes:
        if isinstance(body, dict):
            body = {**body, "as_of": datetime.now(UTC).isoformat()}
        return json.dumps(body).encode()

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.send(status, self.encoded(body), "application/json", headers)

    def send(
        self, status: int, raw: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        HITS.append([self.path, status, datetime.now(UTC).isoformat()])
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
