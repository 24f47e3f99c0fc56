#!/usr/bin/env python3
"""The repository's two commands. Standard library only; run with plain python3.

    python3 dev.py demo          run the demo pipeline (examples/demo.py)
    python3 dev.py test [ARGS]   ruff, mypy, the docs, then pytest on every core (ARGS go to pytest)

Both create .venv on first use and install the project into it with its test extra; they
reinstall only when pyproject.toml has changed since the last install.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".dogana-installed"
PYPROJECT = ROOT / "pyproject.toml"
DEMO = ROOT / "examples" / "demo.py"

# This machine's pip configuration names local indexes that may not exist; pip then warns once
# per package. Those lines say nothing about the project, so they are dropped from the log.
PIP_NOISE = re.compile(r"^WARNING: Location 'file:[^']*' is ignored")

USAGE = __doc__ or ""


def say(message: str) -> None:
    print(f"dev.py: {message}", flush=True)


def venv_env() -> dict[str, str]:
    """The environment with .venv activated, so tools and tests find its executables."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONHOME", None)
    return env


def pyproject_hash() -> str:
    return hashlib.sha256(PYPROJECT.read_bytes()).hexdigest()


def run_pip(args: list[str]) -> int:
    """Run pip quietly, streaming what it prints except the known noise."""
    command = [str(PYTHON), "-m", "pip", *args]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=venv_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    assert process.stdout is not None
    for line in process.stdout:
        if not PIP_NOISE.match(line):
            print(line, end="", flush=True)
    return process.wait()


def ensure_environment() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may run on an older python3
        say(f"needs Python 3.11 or newer to create .venv; this is {sys.version.split()[0]}")
        sys.exit(2)
    fresh = not PYTHON.exists()
    if fresh:
        say("creating .venv")
        result = subprocess.run([sys.executable, "-m", "venv", str(VENV)], cwd=ROOT)
        if result.returncode != 0:
            say("could not create .venv")
            sys.exit(result.returncode or 1)
    wanted = pyproject_hash()
    installed = STAMP.read_text().strip() if STAMP.exists() else ""
    if not fresh and installed == wanted:
        return
    why = "new .venv" if fresh else "pyproject.toml changed" if installed else "no finished install"
    ensure_mysqlclient_headers()
    say(f"installing -e .[test] into .venv ({why}; the first install takes a few minutes)")
    started = time.monotonic()
    STAMP.unlink(missing_ok=True)
    code = run_pip(["install", "--quiet", "--disable-pip-version-check", "-e", ".[test]"])
    if code != 0:
        say(f"pip install failed (exit {code}); fix the error above and run again")
        sys.exit(code)
    STAMP.write_text(wanted + "\n")
    say(f"installed in {time.monotonic() - started:.0f} s")


def ensure_mysqlclient_headers() -> None:
    """mysqlclient (MariaDB's driver, via apache-airflow-providers-mysql) builds from source.

    Its build finds the MariaDB client library through pkg-config. When either is missing, root
    on a Debian-like machine (CI's fresh clone) installs them; anyone else is told the command.
    """
    if sys.platform == "win32" or has_mariadb_headers():
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        say("installing libmariadb-dev and pkg-config (mysqlclient builds against them)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "libmariadb-dev", "pkg-config"],
        ):
            if subprocess.run(command, env=env).returncode != 0:
                say(f"{' '.join(command)} failed")
                sys.exit(1)
        return
    say(
        "mysqlclient needs the MariaDB client headers and pkg-config to build: run\n"
        "    sudo apt-get install libmariadb-dev pkg-config    (Debian/Ubuntu)\n"
        "    brew install mariadb-connector-c pkg-config       (macOS)\n"
        "then run this command again"
    )
    sys.exit(2)


def has_mariadb_headers() -> bool:
    if not shutil.which("pkg-config"):
        return False
    found = subprocess.run(["pkg-config", "--exists", "mariadb"], capture_output=True)
    return found.returncode == 0


def step(name: str, command: list[str]) -> None:
    """Run one step in .venv; stop the whole run at its first failure."""
    say(name)
    started = time.monotonic()
    code = subprocess.run(command, cwd=ROOT, env=venv_env()).returncode
    took = time.monotonic() - started
    if code == 0:
        say(f"{name} passed in {took:.0f} s")
        return
    if name == "pytest" and code == 5:
        say("pytest collected no tests: that counts as a failure")
    else:
        say(f"{name} failed (exit {code}) after {took:.0f} s")
    sys.exit(code)


def test(pytest_args: list[str]) -> None:
    ensure_environment()
    step("ruff", [str(BIN / "ruff"), "check", "."])
    step("mypy", [str(BIN / "mypy")])
    # Warnings as errors and nitpicky: a broken link between pages, a missing anchor or a
    # literalinclude of a moved file fails the run, not a reader.
    build = ["-W", "--keep-going", "-n", "-q", "-b", "html", "docs", "docs/_build/html"]
    step("docs", [str(PYTHON), "-m", "sphinx", *build])
    step("pytest", [str(PYTHON), "-m", "pytest", *parallel(pytest_args), *pytest_args])
    say("all green")


def parallel(pytest_args: list[str]) -> list[str]:
    """One pytest-xdist worker per core, unless ARGS choose (-n, --numprocesses, -p no:xdist).
    loadfile keeps a test file, and a folder sharing a slow fixture, on one worker
    (tests/conftest.py), so that fixture is set up once."""
    chosen = ("-n", "--numprocesses", "--dist", "no:xdist")
    if any(arg.startswith(chosen) for arg in pytest_args):
        return []
    return ["-n", "auto", "--dist", "loadfile"]


def demo(args: list[str]) -> None:
    if not DEMO.exists():
        say(f"{DEMO.relative_to(ROOT)} does not exist yet: there is no demo to run")
        sys.exit(2)
    ensure_environment()
    say(f"running {DEMO.relative_to(ROOT)}")
    sys.exit(subprocess.run([str(PYTHON), str(DEMO), *args], cwd=ROOT, env=venv_env()).returncode)


def main(argv: list[str]) -> None:
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(USAGE.strip())
        sys.exit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command == "test":
        test(rest)
    elif command == "demo":
        demo(rest)
    else:
        print(f"unknown command {command!r}\n\n{USAGE.strip()}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        sys.exit(130)
