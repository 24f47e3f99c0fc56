"""Every command's --help carries examples, and they run as written.

The examples are read from the installed script's own --help output and run with bash in a
directory holding the files they name, in the order a sender and an operator would: manifest,
check, fold, claims. An example that stops working fails here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from cli_fixtures import (
    DOGANA,
    ORDERS,
    PRODUCED,
    SINCE,
    dogana,
    history,
    honest,
    order,
    write,
    write_contract,
)
from test_cli_holds import hold_two

from dogana_provider.dialects import SQLITE
from dogana_provider.receiver import Receiver

COMMANDS = ["manifest", "check", "fold", "claims"]
SOURCE_COMMANDS = ["require-activation", "activate", "deactivate"]
"""Commands on a live receiver whose examples run here: on sqlite:///warehouse.db."""
HOLD_COMMANDS = ["holds", "hold"]
"""Commands whose examples read a live receiver: sqlite:///warehouse.db, or dogana_default."""


def examples(command: str, cwd: Path) -> list[str]:
    """The example command lines of `dogana COMMAND --help`, continuations joined."""
    text = dogana(command, "--help", cwd=cwd).out
    section = text.split("\nexamples:\n", 1)[1].split("\nexit status:", 1)[0]
    lines: list[str] = []
    pending = ""
    for raw in section.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    return lines


@pytest.mark.parametrize("command", [*COMMANDS, *SOURCE_COMMANDS, *HOLD_COMMANDS, "conformance"])
def test_every_command_has_examples_and_its_exit_status(tmp_path: Path, command: str) -> None:
    result = dogana(command, "--help", cwd=tmp_path)
    assert result.code == 0
    assert examples(command, tmp_path), f"dogana {command} --help shows no example"
    assert "exit status: 0 success, 1 dogana refuses, 2 usage error" in result.out
    assert all(line.startswith("dogana ") for line in examples(command, tmp_path))


def test_the_help_examples_run_as_written(tmp_path: Path) -> None:
    write_contract(tmp_path)
    write(tmp_path / "orders.parquet", honest())
    september = [order(i, day) for i, day in enumerate(range(1, 31), 1)]
    write(tmp_path / "orders-2026-09.csv", september)
    changed = [
        order(1, updated=SINCE + timedelta(hours=1)),
        order(2, updated=PRODUCED),
        order(3, deleted=True),
    ]
    write(tmp_path / "orders-changes.parquet", changed)
    (tmp_path / "orders-changes.parquet.json").write_text(
        "an earlier sidecar, overwritten by --force"
    )
    for index, receipt in enumerate(history()[:2], 1):
        (tmp_path / f"receipt-{index}.json").write_text(receipt.to_json())
    env = {**os.environ, "PATH": f"{DOGANA.parent}{os.pathsep}{os.environ['PATH']}"}
    for command in COMMANDS:
        for line in examples(command, tmp_path):
            done = subprocess.run(
                ["bash", "-c", line],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "orders.ledger.json").exists()


def test_the_source_commands_help_examples_run_as_written(tmp_path: Path) -> None:
    import sqlite3

    from dogana_provider.dialects import SQLITE
    from dogana_provider.receiver import Receiver

    # The receiver the examples name, its orders table registered by a first delivery's plan.
    Receiver(lambda: sqlite3.connect(tmp_path / "warehouse.db"), SQLITE).register(ORDERS)
    env = {**os.environ, "PATH": f"{DOGANA.parent}{os.pathsep}{os.environ['PATH']}"}
    for command in SOURCE_COMMANDS:
        for line in examples(command, tmp_path):
            done = subprocess.run(
                ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"


@pytest.mark.airflow  # the commands open the receiver through DoganaHook
def test_the_receiver_examples_run_as_written(tmp_path: Path) -> None:
    """The holds examples against a receiver holding orders-1 and orders-2, by URL and as the
    connection dogana_default."""
    path = tmp_path / "warehouse.db"
    hold_two(Receiver(lambda: sqlite3.connect(path), SQLITE), tmp_path)
    env = {
        **os.environ,
        "PATH": f"{DOGANA.parent}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_CONN_DOGANA_DEFAULT": json.dumps({"conn_type": "sqlite", "host": str(path)}),
    }
    for command in HOLD_COMMANDS:
        for line in examples(command, tmp_path):
            done = subprocess.run(
                ["bash", "-c", line],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    assert Receiver(lambda: sqlite3.connect(path), SQLITE).holds() == []
