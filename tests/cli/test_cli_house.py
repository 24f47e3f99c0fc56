"""The command line's house: common.py under every family and importing none, each family
importing only common.py of the command line, main.py the only module that knows them all; no
task imports the command line; and the command loads without Airflow, which only a command
opening a receiver needs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dogana_provider"
CLI = PACKAGE / "cli"


def imported(path: Path) -> set[str]:
    """Every module path imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def cli_modules(path: Path) -> set[str]:
    return {name for name in imported(path) if name.startswith("dogana_provider.cli.")}


def test_common_imports_no_family_of_commands() -> None:
    assert cli_modules(CLI / "common.py") == set()


def test_a_family_imports_only_common_of_the_command_line() -> None:
    families = [p for p in CLI.glob("*.py") if p.stem not in ("__init__", "common", "main")]
    assert {p.stem for p in families} >= {"sender", "receiver", "activation", "holds"}
    for path in families:
        modules = {name for name in cli_modules(path) if name.count(".") == 2}
        assert modules == {"dogana_provider.cli.common"}, path.name


def test_no_module_outside_the_command_line_imports_it() -> None:
    for path in PACKAGE.rglob("*.py"):
        if CLI in path.parents:
            continue
        names = imported(path)
        found = {
            n for n in names if n == "dogana_provider.cli" or n.startswith("dogana_provider.cli.")
        }
        assert not found, f"{path.relative_to(PACKAGE)} imports {sorted(found)}"


def test_the_command_line_loads_without_airflow() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dogana_provider.cli.main; print(sorted(m for m in sys.modules "
            "if m == 'airflow' or m.startswith('airflow.')))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
