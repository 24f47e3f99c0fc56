"""Rules about the repository itself: layering, packaging and the test harness."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "dogana_core"
AIRFLOW = Path(sys.executable).parent / "airflow"

# Runs in a fresh interpreter without site-packages (-S) and isolated from the environment (-I),
# with a finder in front of every other that refuses any top-level module outside the standard
# library, so a core module that imports a third-party package fails to import.
IMPORT_ALL_OF_CORE = textwrap.dedent(
    """
    import importlib, pkgutil, sys

    ALLOWED = set(sys.stdlib_module_names) | {"dogana_core"}

    class StandardLibraryOnly:
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top not in ALLOWED:
                raise ImportError(f"dogana_core may import the standard library only: {name!r}")
            return None

    sys.meta_path.insert(0, StandardLibraryOnly())
    sys.path.insert(0, sys.argv[1])

    def fail(name):
        raise

    import dogana_core
    imported = ["dogana_core"]
    for module in pkgutil.walk_packages(dogana_core.__path__, "dogana_core.", onerror=fail):
        importlib.import_module(module.name)
        imported.append(module.name)
    outside = sorted(
        name for name in sys.modules
        if name.partition(".")[0] not in ALLOWED and name != "__main__"
    )
    if outside:
        raise SystemExit(f"non-standard modules were loaded: {outside}")
    print("\\n".join(imported))
    """
)


def test_core_imports_standard_library_only() -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", IMPORT_ALL_OF_CORE, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr or result.stdout
    assert "dogana_core" in result.stdout.split()


def test_core_source_imports_standard_library_only() -> None:
    """The same rule read from the source, so imports inside functions are caught too."""
    allowed = set(sys.stdlib_module_names) | {"dogana_core"}
    offending = []
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.partition(".")[0] not in allowed:
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno}: import {name}")
    assert not offending, "\n".join(offending)


def test_no_module_imports_another_modules_private_names() -> None:
    """Modules meet at public names (the receiver's two paths at receiver/steps.py's Steps), and
    the group path never imports the single-table one that composes it."""
    offending = []
    for path in sorted([*CORE.rglob("*.py"), *(ROOT / "dogana_provider").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            in_receiver = path.parent.name == "receiver"
            if in_receiver and isinstance(node, ast.Attribute) and _reaches_in(node):
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            private = [a.name for a in node.names if a.name.startswith("_") and a.name[-2:] != "__"]
            if private and node.module.partition(".")[0] in ("dogana_core", "dogana_provider"):
                offending.append(f"{where}: from {node.module} import {', '.join(private)}")
            if path.name == "together.py" and node.module.endswith("receiver.receiver"):
                offending.append(f"{where}: together.py imports receiver.py")
    assert not offending, "\n".join(offending)


def _reaches_in(node: ast.Attribute) -> bool:
    """obj._private where obj is not the object's own self or cls."""
    owner = node.value.id if isinstance(node.value, ast.Name) else None
    private = node.attr.startswith("_") and not node.attr.endswith("__")
    return private and owner not in ("self", "cls")


# What `git grep -n "dialect.name\|\.name ==\|name in (" dogana_provider` finds: a test of which
# database this is, or a line that reads like one.
DATABASE_TEST = re.compile(r"dialect.name|\.name ==|name in \(")
DIALECT_HOMES = {
    "dogana_provider/dialects",
    "dogana_provider/staging/sqlite.py",
    "dogana_provider/staging/postgres.py",
    "dogana_provider/staging/mariadb.py",
    "dogana_provider/sources/sqlite.py",
    "dogana_provider/sources/sqlite_reader.py",
    "dogana_provider/sources/postgres.py",
    "dogana_provider/sources/mysql.py",
}


def test_only_a_databases_own_modules_ask_which_database_it_is() -> None:
    """What differs between databases is a method or a flag of their Dialect (dialects/), or
    lives in that database's own staging or source module; code elsewhere asks the dialect,
    never its name."""
    offending = []
    for path in sorted((ROOT / "dogana_provider").rglob("*")):
        relative = path.relative_to(ROOT).as_posix()
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if any(relative == home or relative.startswith(f"{home}/") for home in DIALECT_HOMES):
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            if DATABASE_TEST.search(line):
                offending.append(f"{relative}:{number}: {line.strip()}")
    assert not offending, "\n".join(offending)


@pytest.mark.parametrize("package", ["dogana_core", "dogana_provider"])
def test_no_import_circles(package: str) -> None:
    """No module of a package reaches itself by its imports: module level, under TYPE_CHECKING
    and inside functions alike, since an import hidden in a function is the same dependency
    deferred. A shared name lives in a module both sides import (dogana_core/receipt.py)."""
    graph = _import_graph(ROOT / package, package)
    circles = [_circle(graph, component) for component in _components(graph)]
    assert not circles, "import circles:\n" + "\n".join(circles)


def _import_graph(root: Path, package: str) -> dict[str, dict[str, int]]:
    """module -> {module of the same package it imports: the line of the first such import}."""
    paths = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, dict[str, int]] = {name: {} for name in paths}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    kept = here[: len(here) - node.level + 1]
                    base = ".".join([*kept, base] if base else kept)
                # from a package import a module: the module; import a name: its module.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != name and target.partition(".")[0] == package:
                    graph[name].setdefault(target, node.lineno)
    return graph


def _components(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _circle(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """The modules of a component, and one shortest circle through the first, line by line."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while start not in came_from:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target in members and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    path = [start]
    while len(path) == 1 or path[-1] != start:
        path.append(came_from[path[-1]])
    path.reverse()
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in itertools.pairwise(path)]
    return f"  {', '.join(component)}: " + "; ".join(steps)


def test_provider_version_is_the_distribution_version() -> None:
    import dogana_provider

    assert dogana_provider.__version__ == importlib.metadata.version("airflow-provider-dogana")


@pytest.mark.airflow
def test_provider_info_is_valid_against_airflows_schema() -> None:
    import airflow
    import jsonschema

    from dogana_provider.get_provider_info import get_provider_info

    schema_path = Path(airflow.__file__).parent / "provider_info.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-provider-dogana"


@pytest.mark.airflow
def test_airflow_lists_the_provider(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("AIRFLOW")}
    env.update(
        {
            "AIRFLOW_HOME": str(tmp_path),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        }
    )
    result = subprocess.run(
        [str(AIRFLOW), "providers", "list", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    # Airflow may log to stdout before the JSON document, which is one line.
    document = next((line for line in result.stdout.splitlines() if line.startswith("[")), "")
    assert document, result.stdout
    providers = json.loads(document)
    listed = {provider["package_name"]: provider for provider in providers}
    assert "airflow-provider-dogana" in listed, sorted(listed)
    assert listed["airflow-provider-dogana"]["version"] == "0.1.0"


@pytest.mark.airflow
def test_airflow_home_fixture_migrates_a_temporary_sqlite_database(airflow_home: Path) -> None:
    database = airflow_home / "airflow.db"
    assert database.is_file()
    assert os.environ["AIRFLOW_HOME"] == str(airflow_home)
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("select name from sqlite_master")}
    assert {"dag", "dag_run", "task_instance", "alembic_version"} <= tables


SMOKE_DAG = textwrap.dedent(
    """
    import datetime

    from airflow.sdk import DAG, task

    START = datetime.datetime(2024, 1, 1)

    with DAG("dogana_harness_smoke", schedule=None, start_date=START) as dag:

        @task
        def answer():
            return 42

        answer()
    """
)


@pytest.mark.airflow
def test_airflow_home_fixture_runs_a_dag_with_dag_test(airflow_home: Path) -> None:
    path = airflow_home / "dags" / "dogana_harness_smoke.py"
    path.write_text(SMOKE_DAG, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("dogana_harness_smoke", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = module.dag.test()
    assert run.state == "success"


# Another process on the metadata database, as an `airflow` or `dogana` command of a test: it
# opens the database, reads, and closes it, as the last reader when it believes it is one.
OPEN_AND_CLOSE = (
    "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('select count(*) from log')"
)


@pytest.mark.airflow
def test_a_copy_of_the_metadata_database_leaves_this_process_its_connections(
    airflow_home: Path, copy_metadata_database: Callable[[Path], None], tmp_path: Path
) -> None:
    """The copy holds what this process committed; and after it, another process closing the
    database takes nothing from under this process: a connection opened later (a thread's
    session beside dag.test()'s) reads what an older one wrote since."""
    from airflow import settings
    from sqlalchemy import text

    database, copied = airflow_home / "airflow.db", tmp_path / "airflow.db"
    event = f"harness_copy_{uuid.uuid4().hex[:8]}"
    insert = text("INSERT INTO log (dttm, event) VALUES (CURRENT_TIMESTAMP, :event)")
    count = "SELECT count(*) FROM log WHERE event = ?"
    assert settings.engine is not None
    with settings.engine.connect() as held:  # as dag.test()'s session, open throughout
        held.execute(insert, {"event": event})
        held.commit()
        copy_metadata_database(copied)
        subprocess.run([sys.executable, "-c", OPEN_AND_CLOSE, str(database)], check=True)
        held.execute(insert, {"event": event})
        held.commit()
        with closing(sqlite3.connect(database)) as later:
            assert later.execute(count, (event,)).fetchone() == (2,)
    with closing(sqlite3.connect(copied)) as copy:
        assert copy.execute(count, (event,)).fetchone() == (1,)


@pytest.mark.postgres
def test_postgres_url_connects(postgres_url: str) -> None:
    import psycopg2

    with psycopg2.connect(postgres_url) as connection, connection.cursor() as cursor:
        cursor.execute("select current_database()")
        assert cursor.fetchone() == ("test",)
    connection.close()


@pytest.mark.mariadb
def test_mariadb_url_names_a_reachable_server(mariadb_url: str) -> None:
    assert mariadb_url == "mysql://root@127.0.0.1:3306/test"


def test_the_provider_keeps_at_most_five_modules_at_its_top() -> None:
    """Everything else lives in a room (a folder of one part of the design)."""
    top = sorted(p.name for p in (ROOT / "dogana_provider").glob("*.py"))
    assert len(top) <= 5, top


def test_no_two_test_modules_share_a_name() -> None:
    """pytest imports test folders without packages by their file's name alone: a second
    module of the same name fails the whole run's collection."""
    by_name: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {
        name: paths
        for name, paths in by_name.items()
        if len(paths) > 1 and name not in {"__init__.py", "conftest.py"}
    }
    assert not shared, shared
