"""OpenLineage events of real DAG runs of the examples, through the provider's file transport.

One process per database runs the DAGs (lineage_runs.py says why a process of its own), both at
once: the invoices, shipments and events examples, an orders delivery altered on its way and
rejected, and the freshness check.
The tests read back the events it wrote and assert what a lineage system would see.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

import dogana_provider

pytestmark = pytest.mark.airflow

RUNS = Path(__file__).with_name("lineage_runs.py")
FACET_SCHEMA = "lineage/DoganaDatasetFacet.json"
AIRFLOW_URL = "https://airflow.example.com"  # the deployment's [api] base_url in these runs


@dataclass(frozen=True)
class Emitted:
    kind: str
    events: list[dict[str, Any]]
    runs: dict[str, Any]
    source: str  # the namespace of the source's tables
    receiver: str  # ... and of the receiver's
    prefix: tuple[str, str]  # the name of a table is prefix + table: source's, receiver's

    def event(self, job: str, kind: str = "COMPLETE") -> dict[str, Any]:
        (found,) = [e for e in self.events if e["job"]["name"] == job and e["eventType"] == kind]
        return found


@dataclass(frozen=True)
class Started:
    process: subprocess.Popen[bytes]
    workdir: Path
    server: str


@pytest.fixture(scope="module")
def started(
    request: pytest.FixtureRequest,
    copy_metadata_database: Callable[[Path], None],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Started]]:
    """Both databases' runs at once, each in an Airflow home of its own: a copy of the
    session's migrated metadata database, so that the two never wait on one SQLite lock."""
    servers = {"sqlite": "-"}
    # Unreachable, the postgres tests skip with the reason, asking for postgres_url themselves.
    with contextlib.suppress(pytest.skip.Exception):
        servers["postgres"] = request.getfixturevalue("postgres_url")
    found = {}
    for kind, server in servers.items():
        workdir = tmp_path_factory.mktemp(f"lineage-{kind}")
        home = workdir / "home"
        (home / "dags").mkdir(parents=True)
        copy_metadata_database(home / "airflow.db")
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__API__BASE_URL": AIRFLOW_URL,
        }
        with (workdir / "output.log").open("wb") as output:
            process = subprocess.Popen(
                [sys.executable, str(RUNS), kind, server, str(workdir), str(workdir / "events")],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        found[kind] = Started(process, workdir, server)
    yield found
    for each in found.values():
        if each.process.poll() is None:
            each.process.kill()
            each.process.wait()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def emitted(request: pytest.FixtureRequest, started: dict[str, Started]) -> Emitted:
    if request.param not in started:
        request.getfixturevalue("postgres_url")  # skips, naming why
    run = started[request.param]
    code = run.process.wait(timeout=600)
    output = (run.workdir / "output.log").read_text(errors="replace")
    assert code == 0, output[-6000:]
    runs = json.loads((run.workdir / "runs.json").read_text())
    if request.param == "sqlite":
        source, receiver = (f"sqlite://{path}" for path in runs["paths"])
        prefix = ("", "")
    else:
        parts = urlsplit(run.server)
        source = receiver = f"postgres://{parts.hostname}:{parts.port or 5432}"
        database = parts.path.lstrip("/")
        prefix = (f"{database}.{runs['schemas'][0]}.", f"{database}.{runs['schemas'][1]}.")
    lines = (run.workdir / "events").read_text().splitlines()
    return Emitted(
        request.param, [json.loads(line) for line in lines], runs, source, receiver, prefix
    )


def test_the_runs_themselves_did_what_the_events_report(emitted: Emitted) -> None:
    assert set(emitted.runs["runs"]["invoices"].values()) == {"success"}
    assert emitted.runs["runs"]["refused"] == {"gate": "failed", "publish": "upstream_failed"}


def test_extract_reads_the_source_tables_named_as_the_sql_providers_name_them(
    emitted: Emitted,
) -> None:
    event = emitted.event("dogana_invoices.invoices.extract")
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [
        (emitted.source, f"{emitted.prefix[0]}invoices"),
        (emitted.source, f"{emitted.prefix[0]}invoice_lines"),
    ]


def test_extract_outputs_each_file_with_its_schema_and_each_columns_source_column(
    emitted: Emitted,
) -> None:
    event = emitted.event("dogana_invoices.invoices.extract")
    (lines,) = [d for d in event["outputs"] if d["name"].endswith("/invoice_lines.parquet")]
    assert lines["namespace"] == "file"
    fields = [field["name"] for field in lines["facets"]["schema"]["fields"]]
    assert fields == ["line_id", "invoice_id", "amount_cents"]
    lineage = lines["facets"]["columnLineage"]["fields"]
    assert set(lineage) == set(fields)
    for column, found in lineage.items():
        (upstream,) = found["inputFields"]
        assert (upstream["namespace"], upstream["name"], upstream["field"]) == (
            emitted.source,
            f"{emitted.prefix[0]}invoice_lines",
            column,
        )
        assert upstream["transformations"][0]["subtype"] == "IDENTITY"


def test_publish_outputs_the_receivers_tables_with_their_claims_and_columns_from_the_file(
    emitted: Emitted,
) -> None:
    extract = emitted.event("dogana_invoices.invoices.extract")
    files = {Path(d["name"]).stem: d["name"] for d in extract["outputs"]}
    event = emitted.event("dogana_invoices.invoices.publish")
    outputs = {d["name"]: d for d in event["outputs"]}
    tables = {f"{emitted.prefix[1]}{t}": t for t in ("invoices", "invoice_lines")}
    assert set(outputs) == set(tables)
    instants = set()
    for name, table in tables.items():
        dataset = outputs[name]
        assert dataset["namespace"] == emitted.receiver
        claims = dataset["facets"]["dogana"]
        assert claims["state"] == "complete"
        assert claims["publication_id"] == emitted.runs["published"][table]
        assert claims.get("window") is None  # the client leaves nulls out
        instants.add(claims["exact_as_of"])
        for found in dataset["facets"]["columnLineage"]["fields"].values():
            assert [(f["namespace"], f["name"]) for f in found["inputFields"]] == [
                ("file", files[table])
            ]
    assert len(instants) == 1 and None not in instants, "read together: exact at one instant"


def test_a_keyless_append_reads_its_source_table_and_publishes_it_with_its_claims(
    emitted: Emitted,
) -> None:
    assert set(emitted.runs["runs"]["events"].values()) == {"success"}
    extract = emitted.event("dogana_events_hourly.events.extract")
    assert [(d["namespace"], d["name"]) for d in extract["inputs"]] == [
        (emitted.source, f"{emitted.prefix[0]}events")
    ]
    (table,) = emitted.event("dogana_events_hourly.events.publish")["outputs"]
    assert (table["namespace"], table["name"]) == (emitted.receiver, f"{emitted.prefix[1]}events")
    claims = table["facets"]["dogana"]
    assert claims["state"] == "complete"
    assert claims["publication_id"] == emitted.runs["published"]["events"]
    assert claims["exact_as_of"] is not None
    columns = {field["name"] for field in table["facets"]["schema"]["fields"]}
    assert {"kind", "payload", "recorded_at"} <= columns


def test_a_window_delivery_states_its_claims_over_that_window(emitted: Emitted) -> None:
    (table,) = emitted.event("dogana_shipments_window.shipments.publish")["outputs"]
    assert table["name"] == f"{emitted.prefix[1]}shipments"
    claims = table["facets"]["dogana"]
    low, high = (end["$date"] for end in emitted.runs["shipments_window"])
    assert claims["window"] == [low, high]
    assert claims["state"] == "complete" and claims["exact_as_of"] is not None


def test_the_dogana_facet_validates_against_its_published_schema(emitted: Emitted) -> None:
    # Read as shipped, beside the module (importing it would import Airflow's OpenLineage).
    schema = json.loads((Path(dogana_provider.__file__).parent / FACET_SCHEMA).read_text())
    own = schema["$defs"]["DoganaDatasetFacet"]["allOf"][1]
    facets = [
        dataset["facets"]["dogana"]
        for event in emitted.events
        for dataset in event.get("inputs", []) + event.get("outputs", [])
        if "dogana" in dataset.get("facets", {})
    ]
    assert len(facets) >= 8  # plan, publish and sensor of invoices and of shipments; freshness
    for facet in facets:
        jsonschema.validate(facet, own)
        # Served there by the plugin's app (tests/ui proves it serves this very file).
        assert facet["_schemaURL"] == (
            f"{AIRFLOW_URL}/dogana/schemas/openlineage/{schema['$id']}#/$defs/DoganaDatasetFacet"
        )


def test_gate_and_publish_carry_the_receipts_checks_as_data_quality_assertions(
    emitted: Emitted,
) -> None:
    for job in ("dogana_invoices.invoices.gate", "dogana_invoices.invoices.publish"):
        for dataset in emitted.event(job)["inputs"]:
            assertions = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
            names = {a["assertion"] for a in assertions}
            assert {"manifest", "transition", "content_hash"} <= names, names
            assert all(a["success"] for a in assertions)


def test_a_rejected_delivery_fails_with_an_event_naming_the_failed_checks(
    emitted: Emitted,
) -> None:
    event = emitted.event("dogana_test_redeliver.gate", "FAIL")
    (dataset,) = event["inputs"]
    assert dataset["name"] == urlsplit(emitted.runs["refused_uri"]).path
    assertions = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert {a["assertion"] for a in assertions if not a["success"]} == {"content_hash"}
    assert event["run"]["facets"]["errorMessage"]["message"].count("content_hash") >= 1


def test_freshness_and_the_sensor_read_the_tables_with_their_claims(emitted: Emitted) -> None:
    sensor = emitted.event("dogana_invoices.wait_exact")
    assert [d["name"] for d in sensor["inputs"]] == [
        f"{emitted.prefix[1]}invoices",
        f"{emitted.prefix[1]}invoice_lines",
    ]
    freshness = [e for e in emitted.events if e["job"]["name"] == "dogana_freshness.freshness"][-1]
    claimed = {
        d["name"]: d["facets"]["dogana"]["state"]
        for d in freshness["inputs"]
        if "dogana" in d["facets"]
    }
    assert claimed[f"{emitted.prefix[1]}invoices"] == "complete"
    # shipments is judged over its window, where it is complete; whole, it would be unknown.
    (shipments,) = [d for d in freshness["inputs"] if d["name"].endswith("shipments")]
    low, high = (end["$date"] for end in emitted.runs["shipments_window"])
    assert shipments["facets"]["dogana"]["window"] == [low, high]
    assert shipments["facets"]["dogana"]["state"] == "complete"
