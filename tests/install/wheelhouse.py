"""Fresh environments for tests/install: a process environment without the MariaDB client
headers, and a wheelhouse that keeps each resolved environment's wheels between runs.

The package index's files come without caching headers, so pip's HTTP cache keeps none of them
and each fresh environment would download Airflow and its hundred dependencies again. A
wheelhouse folder per set of requirements is filled once by `pip download` (resolved against
the index, as a user's install is, which pins them as Airflow's constraint files pin a release)
and installed from with --no-index. dogana's own wheel is never kept: each run installs the one
it built.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

# Wheelhouses kept, the last used first (two environments per run: the newest two runs').
KEEP_WHEELHOUSES = 4
# The tools whose answers would let a build find the MariaDB client headers.
HEADER_TOOLS = ("pkg-config", "mysql_config", "mariadb_config")


def run(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run command; on failure, fail the test with the end of what it printed. Each command's
    time is printed (pytest -s shows it), as these tests' cost is CI's."""
    started = time.monotonic()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    print(f"tests/install: {time.monotonic() - started:5.1f} s  {' '.join(command)[:160]}")
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {done.returncode}:\n"
            f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}",
            pytrace=False,
        )
    return done


def pip(venv: Path) -> list[str]:
    """This process's pip, acting on venv's interpreter and site-packages."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


def clean_environment(shadow: Path, venv: Path) -> dict[str, str]:
    """This process's environment as a user's shell would have it, with venv activated.

    Nothing of the test session's Airflow, of the developer's .venv or of pkg-config's settings
    leaks in; pkg-config, mysql_config and mariadb_config are shadowed by scripts that find
    nothing, so a package that needs the MariaDB headers to build fails to install.
    """
    shadow.mkdir(parents=True, exist_ok=True)
    for tool in HEADER_TOOLS:
        script = shadow / tool
        script.write_text(
            f'#!/bin/sh\necho "{tool}: hidden by tests/install: no MariaDB headers here" >&2\n'
            "exit 1\n"
        )
        script.chmod(0o755)
    leaked = ("AIRFLOW", "DOGANA", "PKG_CONFIG", "MYSQLCLIENT", "PYTHON", "VIRTUAL_ENV")
    env = {name: value for name, value in os.environ.items() if not name.startswith(leaked)}
    own_bin = Path(sys.executable).parent
    path = [part for part in env.get("PATH", "").split(os.pathsep) if part]
    path = [part for part in path if Path(part) != own_bin]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(shadow), *path])
    env["VIRTUAL_ENV"] = str(venv)
    return env


@dataclass(frozen=True)
class Wheelhouse:
    root: Path

    @classmethod
    def default(cls) -> Wheelhouse:
        """DOGANA_WHEELHOUSE, or dogana/wheelhouse in the user's cache folder."""
        if os.environ.get("DOGANA_WHEELHOUSE"):
            return cls(Path(os.environ["DOGANA_WHEELHOUSE"]))
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(cache / "dogana" / "wheelhouse")

    def newest(self, requirement: Requirement) -> str:
        """The newest final release of requirement's project that its specifier allows."""
        listed = run([sys.executable, "-m", "pip", "index", "versions", requirement.name]).stdout
        found = re.search(r"^Available versions: (.+)$", listed, re.MULTILINE)
        assert found, listed
        versions = [_version(v.strip()) for v in found.group(1).split(",")]
        allowed = [v for v in versions if v and not v.is_prerelease and v in requirement.specifier]
        assert allowed, f"no release of {requirement} on the index: {listed}"
        return str(max(allowed))

    def prepare(
        self, requirements: list[str], env: dict[str, str], constraints: Path | None = None
    ) -> Path:
        """The folder holding every wheel requirements resolve to, downloaded when missing."""
        pins = ["--constraint", str(constraints)] if constraints else []
        folder = self.root / self._key(requirements, constraints)
        if (folder / ".complete").exists():
            os.utime(folder)
            return folder
        self._prune()
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(partial),
             *pins, *requirements],
            env=env,
        )  # fmt: skip
        for requirement in requirements:  # the wheel under test is not kept
            if Path(_path_of(requirement)).is_file():
                (partial / Path(_path_of(requirement)).name).unlink(missing_ok=True)
        (partial / ".complete").write_text("\n".join(requirements) + "\n")
        partial.rename(folder)
        return folder

    def install(self, venv: Path, folder: Path, args: list[str], env: dict[str, str]) -> None:
        """pip install from folder alone; Python compiles what is imported when it is."""
        run(
            [*pip(venv), "install", "--quiet", "--no-index", "--no-compile",
             "--find-links", str(folder), *args],
            env=env,
        )  # fmt: skip

    def _key(self, requirements: list[str], constraints: Path | None) -> str:
        """Named after what it holds. A local wheel counts by what it requires with the extras
        asked for, not by its bytes: a change to another extra keeps the wheelhouse."""
        digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
        if constraints is not None:
            digest.update(constraints.read_bytes())
        names = []
        for requirement in requirements:
            path = Path(_path_of(requirement))
            if path.is_file() and path.suffix == ".whl":
                digest.update(_requires(path, _extras_of(requirement)).encode())
            else:
                digest.update(requirement.encode())
                names.append(re.sub(r"[^A-Za-z0-9.]+", "-", requirement))
        tag = f"py{sys.version_info[0]}{sys.version_info[1]}"
        return "-".join([tag, *names, digest.hexdigest()[:12]])

    def _prune(self) -> None:
        """Keep the wheelhouses used last: about 120 MB each, one per Airflow and requirements."""
        if not self.root.is_dir():
            return
        kept = sorted(
            (folder for folder in self.root.iterdir() if folder.is_dir()),
            key=lambda folder: folder.stat().st_mtime,
            reverse=True,
        )
        for folder in kept[KEEP_WHEELHOUSES:]:
            shutil.rmtree(folder, ignore_errors=True)


def _version(text: str) -> Version | None:
    """A release's version; None for the few old ones PEP 440 cannot read (1.10.9-bin)."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _path_of(requirement: str) -> str:
    """A local path requirement without its extras: /x/y.whl[postgres] -> /x/y.whl."""
    return requirement.split("[", 1)[0]


def _extras_of(requirement: str) -> list[str]:
    """/x/y.whl[postgres,mysql] -> ["postgres", "mysql"]."""
    _, _, extras = requirement.partition("[")
    return [extra.strip() for extra in extras.rstrip("]").split(",") if extra.strip()]


def _requires(wheel: Path, extras: list[str]) -> str:
    """The wheel's requirements that an install with these extras takes, sorted."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    taken = {"Requires-Python: " + str(metadata["Requires-Python"])}
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras):
            taken.add(str(requirement))
    return "\n".join(sorted(taken))
