"""Records from an HTTP JSON API and from a JSON Lines file into PostgreSQL: dogana's connectors
beside dlt's rest_api and filesystem sources, on the same server and file, in one run.

    dogana http     HttpJsonConnector, cursor pages of PAGE records, then the receiver: the
                    complete delivery written to Parquet, counted and hashed, staged, checked
                    and published with its ledger and receipt
    dogana jsonl    JsonLinesConnector on the file, then the receiver, alike
    dlt rest_api    rest_api_source with a cursor paginator on the same endpoint
    dlt filesystem  filesystem() | read_jsonl() on the same file

The API is a process of this script (--serve): a change log of N orders, by cursor, each body
carrying its instant. dlt runs in the virtual environment bench/pipeline.py makes for it, with
its own packages (rest_api and filesystem are in dlt itself); it is skipped, saying why, when it
cannot be made. Each variant runs in its own process into its own schema; "rows add" is its
peak RSS above what it held once everything was imported (bench/pipeline.py's measure). Every
target is counted. Not a timed test: it prints rates and ratios measured in this one run.

    PYTHONPATH=. .venv/bin/python bench/connectors.py               # 1,000,000 records
    PYTHONPATH=. .venv/bin/python bench/connectors.py --rows 20000 --no-dlt
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from pipeline import PG_SERVER, dlt_environment, peak_mib, reset_peak, rss_mib  # noqa: E402

PAGE = 10_000
DATABASE = f"{PG_SERVER}/test"
COLUMNS = {"seq": "int", "order_id": "int", "customer": "str", "amount": "float", "paid": "bool"}
DLT_PACKAGES = ["dlt[postgres,filesystem]>=1.0", "psycopg2-binary"]


def record(seq: int) -> dict[str, Any]:
    return {
        "seq": seq,
        "order_id": seq,
        "customer": f"customer {seq % 9973} «ü»",
        "amount": round(seq * 0.37 % 1000, 2),
        "paid": seq % 3 == 0,
    }


# The API ------------------------------------------------------------------------------------------


def serve(rows: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            after = int(query.get("after") or query.get("cursor") or 0)
            size = int(query.get("limit", PAGE))
            page = [record(seq) for seq in range(after + 1, min(after + size, rows) + 1)]
            body: dict[str, Any] = {"data": page, "as_of": datetime.now(UTC).isoformat()}
            if page and page[-1]["seq"] < rows:
                body["next_cursor"] = str(page[-1]["seq"])
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


# dogana ---------------------------------------------------------------------------------------


def dogana(variant: str, source: str, schema: str, home: Path) -> dict[str, Any]:
    """One variant in this process: the read, written and published; seconds and rows add."""
    import os

    import psycopg2

    from dogana_core import Contract, Shape
    from dogana_core.planner import next_extraction
    from dogana_provider.connectors import HttpJsonConnector, JsonLinesConnector
    from dogana_provider.connectors.extract import extract
    from dogana_provider.dialects import POSTGRES
    from dogana_provider.receiver.receiver import Receiver

    contract = Contract(
        "orders",
        ("order_id",),
        {"export": Shape.complete(), "feed": Shape.changes(checkpoint="generation")},
        types={"order_id": "int"},
    )
    if variant == "http":
        os.environ["AIRFLOW_CONN_BENCH_API"] = source
        connector: Any = HttpJsonConnector(
            {
                "conn_id": "bench_api",
                "endpoint": "/orders",
                "columns": COLUMNS,
                "key": ["order_id"],
                "pagination": {"type": "cursor", "size": PAGE, "cursor_field": "seq"},
                "feed": True,
                "instant_field": "as_of",
            }
        )
    else:
        connector = JsonLinesConnector(
            {"path": source, "columns": COLUMNS, "key": ["order_id"], "whole_history": True}
        )
    receiver = Receiver(
        lambda: psycopg2.connect(DATABASE, options=f"-csearch_path={schema}"), POSTGRES
    )
    receiver.register(contract)
    connector.connect()
    baseline = rss_mib()
    reset_peak()
    started = time.perf_counter()
    request = next_extraction(receiver.ledger("orders"), "export", datetime.now(UTC))
    delivered = extract(connector, "orders", contract, request, home / f"{variant}.parquet")
    read = time.perf_counter() - started
    receipt = receiver.receive(delivered.path, delivered.manifest)
    seconds = time.perf_counter() - started
    assert receipt.outcome == "accepted", receipt.checks
    return {
        "seconds": seconds,
        "read": read,
        "rows_add_mib": peak_mib() - baseline,
        "rows": delivered.manifest.rows,
    }


def dlt_run(variant: str, source: str, schema: str, home: Path) -> dict[str, Any]:
    python, failed = dlt_environment(DLT_PACKAGES)
    if failed:
        return {"skipped": failed}
    if variant == "http":
        resource = f"""
            from dlt.sources.rest_api import rest_api_source
            data = rest_api_source({{
                "client": {{"base_url": {source!r}}},
                "resources": [{{"name": "orders", "endpoint": {{
                    "path": "orders", "params": {{"limit": {PAGE}}}, "data_selector": "data",
                    "paginator": {{"type": "cursor", "cursor_path": "next_cursor",
                                   "cursor_param": "cursor"}}}}}}],
            }})
        """
    else:
        folder = Path(source).parent.as_uri()
        resource = f"""
            from dlt.sources.filesystem import filesystem, read_jsonl
            data = (filesystem(bucket_url={folder!r}, file_glob="*.jsonl") | read_jsonl()
                    ).with_name("orders")
        """
    target = DATABASE.replace("postgres@", "postgres:unused@")
    script = home / f"dlt_{variant}.py"
    script.write_text(
        textwrap.dedent(resource)
        + textwrap.dedent(
            f"""
            import json, resource, time
            import dlt
            pipeline = dlt.pipeline(pipeline_name="bench_{variant}",
                pipelines_dir={str(home / "dlt")!r},
                destination=dlt.destinations.postgres({target!r}), dataset_name={schema!r})
            started = time.perf_counter()
            pipeline.run(data, write_disposition="replace")
            print(json.dumps({{"seconds": time.perf_counter() - started,
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run([str(python), str(script)], capture_output=True, text=True)
    if done.returncode != 0:
        return {"skipped": f"it failed: {done.stderr[-400:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def count(schema: str) -> int:
    import psycopg

    with psycopg.connect(DATABASE) as connection:
        return int(connection.execute(f"SELECT count(*) FROM {schema}.orders").fetchone()[0])


def drop(schemas: list[str]) -> None:
    import psycopg

    with psycopg.connect(DATABASE, autocommit=True) as connection:
        for schema in schemas:
            connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--no-dlt", action="store_true", help="dogana's variants only")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.child:
        variant, source, schema, home = args.child
        print(json.dumps(dogana(variant, source, schema, Path(home))))
        return 0
    import psycopg

    uid = uuid.uuid4().hex[:8]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(args.rows)], stdout=subprocess.PIPE, text=True
    )
    schemas: list[str] = []
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline().split()[1])}"
        with tempfile.TemporaryDirectory(prefix="dogana-bench-") as scratch:
            home = Path(scratch)
            (home / "drop").mkdir()
            jsonl = home / "drop" / "orders.jsonl"
            with jsonl.open("w", encoding="utf-8") as out:
                for seq in range(1, args.rows + 1):
                    out.write(json.dumps(record(seq)) + "\n")
            found: dict[str, dict[str, Any]] = {}
            for tool, variant, source in (
                ("dogana", "http", url),
                ("dogana", "jsonl", str(jsonl)),
                ("dlt", "http", url),
                ("dlt", "jsonl", str(jsonl)),
            ):
                name = f"{tool} {'rest_api' if tool == 'dlt' and variant == 'http' else ''}"
                name = f"{tool} {variant}" if tool == "dogana" else name
                if tool == "dlt" and variant == "jsonl":
                    name = "dlt filesystem"
                schema = f"bench_{tool}_{variant}_{uid}"
                schemas.append(schema)
                if tool == "dlt":
                    found[name] = (
                        {"skipped": "--no-dlt"}
                        if args.no_dlt
                        else dlt_run(variant, source, schema, home)
                    )
                else:
                    with psycopg.connect(DATABASE, autocommit=True) as connection:
                        connection.execute(f"CREATE SCHEMA {schema}")
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", variant, source, schema, scratch],
                        capture_output=True,
                        text=True,
                    )
                    if done.returncode != 0:
                        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
                    found[name] = json.loads(done.stdout.strip().splitlines()[-1])
                if "skipped" not in found[name]:
                    found[name]["count"] = count(schema)
            report(args.rows, found)
    finally:
        server.kill()
        server.wait()
        drop(schemas)
    return 0


def report(rows: int, found: dict[str, dict[str, Any]]) -> None:
    print(f"{rows:,} records into PostgreSQL, page {PAGE:,} ({datetime.now(UTC):%Y-%m-%d %H:%M})")
    print(f"{'variant':<16} {'seconds':>8} {'records/s':>10} {'rows add':>9} {'published':>10}")
    for name, run in found.items():
        if "skipped" in run:
            print(f"{name:<16} skipped: {run['skipped'][:300]}")
            continue
        memory = (
            f"{run['rows_add_mib']:.0f} MB" if "rows_add_mib" in run else f"({run['peak_mib']:.0f})"
        )
        print(
            f"{name:<16} {run['seconds']:>8.2f} {rows / run['seconds']:>10,.0f} "
            f"{memory:>9} {run['count']:>10,}"
        )
    for variant, other in (("http", "dlt rest_api"), ("jsonl", "dlt filesystem")):
        ours, theirs = found[f"dogana {variant}"], found[other]
        if "skipped" not in theirs:
            ratio = theirs["seconds"] / ours["seconds"]
            print(f"dogana {variant}: {ratio:.2f}x dlt's rate (target at least 2x)")
    print("rows add: peak RSS above imports (dlt: its process's whole peak, in brackets)")


if __name__ == "__main__":
    sys.exit(main())
