"""`dogana lineage`, and the lineage `dogana status --table` shows, as a person at a terminal.

The receiver holds the tables of tests/several_tables.py (four tables from two sources, one
delivery refused), delivered through the Receiver with their origins, and the installed `dogana`
script reads it by URL. On SQLite only, and in few calls (each starts Airflow): the command
reads through the Receiver, whose edges the conformance cases check on every database
(tests/receiver/lineage_conformance.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_fixtures import DOGANA, dogana
from several_tables import LOGISTICS, SHOP, Live, filled_receiver
from test_cli_help import examples

from dogana_core.gate import Outcome


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with filled_receiver("sqlite", tmp_path_factory.mktemp("lineage")) as found:
        yield found


def lineage(live: Live, tmp_path: Path, *args: str) -> dict:
    result = dogana("lineage", live.url, *args, "--json", cwd=tmp_path)
    assert result.code == 0, result.err
    return json.loads(result.out)


def published(live: Live, table: str) -> list[list[str]]:
    """What the table's receipts say was published, newest first."""
    accepted = [r for r in live.receiver.receipts(table) if r.outcome is Outcome.ACCEPTED]
    return [[str(r.publication_id), r.manifest.identity] for r in reversed(accepted)]


def answered(found: dict) -> list[list[str]]:
    return [[edge["publication_id"], edge["manifest_identity"]] for edge in found["edges"]]


def test_lineage_output_answers_what_fed_the_table_as_its_receipts_say(
    live: Live, tmp_path: Path
) -> None:
    found = lineage(live, tmp_path, "--output", "orders")
    assert answered(found) == published(live, "orders")
    assert [(e["source_conn_id"], e["source"], e["run_id"]) for e in found["edges"]] == [
        (SHOP, "shop.orders", "run_2"),
        (SHOP, "shop.orders", "run_1"),
    ]  # the refused delivery of orders wrote no edge
    result = dogana("lineage", live.url, "--output", "orders", cwd=tmp_path)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].endswith("what fed orders: 2 publications, newest first")
    assert "shop_db: shop.orders" in lines[3] and "several / run_2 / orders.extract" in lines[3]


def test_lineage_input_answers_what_the_source_produced(live: Live, tmp_path: Path) -> None:
    found = lineage(live, tmp_path, "--input", "logistics.shipments", "--source-conn", LOGISTICS)
    assert answered(found) == published(live, "shipments")


def test_lineage_is_bounded_by_since_and_limit(live: Live, tmp_path: Path) -> None:
    newest = published(live, "orders")[:1]
    bounded = lineage(live, tmp_path, "--output", "orders", "--since", "1d", "--limit", "1")
    assert answered(bounded) == newest and bounded["since"] is not None


def test_an_unfiltered_lineage_question_is_refused(live: Live, tmp_path: Path) -> None:
    result = dogana("lineage", live.url, "--since", "1d", "--limit", "5", cwd=tmp_path)
    assert result.code == 2 and result.out == ""
    assert "every edge at once is an export, not a query" in result.err


def test_status_of_a_table_shows_its_sources_and_last_publications(
    live: Live, tmp_path: Path
) -> None:
    result = dogana("status", live.url, "--table", "invoices", cwd=tmp_path)
    assert result.code == 0, result.err
    text = result.out
    sources = text[text.index("sources, the most recent first") :]
    assert "shop_db: shop.invoices  1" in sources
    runs = text[text.index("last publications' lineage") :]
    assert "several / run_3 / invoices.extract" in runs


def test_the_lineage_help_examples_run_as_written(live: Live, tmp_path: Path) -> None:
    """By URL (sqlite:///warehouse.db) and as the connection dogana_default, on the tables of
    several_tables.py, whose orders come from shop.orders on shop_db as the examples say."""
    (tmp_path / "warehouse.db").symlink_to(live.url.removeprefix("sqlite:///"))
    env = {
        **os.environ,
        "PATH": f"{DOGANA.parent}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_CONN_DOGANA_DEFAULT": live.connection,
    }
    lines = examples("lineage", tmp_path)
    assert len(lines) == 3
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        assert "shop.orders" in done.stdout, f"{line}\n{done.stdout}"
