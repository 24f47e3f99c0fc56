"""The test API (api_server.py) as a process on 127.0.0.1, and connectors configured on it."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SERVER = Path(__file__).resolve().parent / "api_server.py"
COLUMNS = {"seq": "int", "order_id": "int", "amount": "float", "deleted": "bool"}
NESTED = {
    "columns": {
        "seq": "int",
        "order_id": "int",
        "amount": "float",
        "customer_id": "int",
        "country": "str",
        "deleted": "bool",
    },
    "paths": {
        "order_id": "order.id",
        "amount": "order.amount",
        "customer_id": "order.customer.id",
        "country": "order.customer.country",
    },
}
"""The columns of the nested change log (/v1/order-changes) and the fields they read."""


class Api:
    def __init__(self, port: int, conn_id: str) -> None:
        self.port = port
        self.conn_id = conn_id
        self.url = f"http://127.0.0.1:{port}"

    def config(self, endpoint: str = "/feed", **options: Any) -> dict[str, Any]:
        """A change log by cursor, seq its position, as_of its instant."""
        found: dict[str, Any] = {
            "conn_id": self.conn_id,
            "endpoint": endpoint,
            "stream": "orders",
            "columns": dict(COLUMNS),
            "key": ["order_id"],
            "pagination": {"type": "cursor", "size": 3, "cursor_field": "seq"},
            "feed": True,
            "deleted_field": "deleted",
            "instant_field": "as_of",
            "backoff": 0.01,
        }
        found.update(options)
        return found

    def append(self, *orders: dict[str, Any]) -> None:
        request = urllib.request.Request(
            f"{self.url}/append",
            data=json.dumps({"orders": list(orders)}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as response:
            assert response.status == 200

    def hits(self) -> list[list[Any]]:
        with urllib.request.urlopen(f"{self.url}/hits") as response:
            return json.loads(response.read())


@contextmanager
def api_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    process = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().split()[1])
        conn_id = f"api_{uuid.uuid4().hex[:8]}"
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", f"http://127.0.0.1:{port}")
        yield Api(port, conn_id)
    finally:
        process.kill()
        process.wait()
