"""The release under test: its sdist and wheel, built as a release is, and what it declares."""

from __future__ import annotations

import sys
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from wheelhouse import run

ROOT = Path(__file__).resolve().parents[2]
# The providers of the database extras and the drivers they bring: none may come without one.
EXTRA_ONLY = {
    "apache-airflow-providers-postgres",
    "apache-airflow-providers-mysql",
    "psycopg2",
    "psycopg2-binary",
    "mysqlclient",
}


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path

    @classmethod
    def build(cls, out: Path) -> Dist:
        """python -m build: the sdist, then the wheel from the sdist."""
        run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=ROOT)
        [wheel] = out.glob("*.whl")
        [sdist] = out.glob("*.tar.gz")
        return cls(wheel, sdist)

    @property
    def stem(self) -> str:
        """name-version, as the wheel's .dist-info folder is named."""
        return "-".join(self.wheel.name.split("-")[:2])

    def metadata(self) -> Message:
        with zipfile.ZipFile(self.wheel) as wheel:
            text = wheel.read(f"{self.stem}.dist-info/METADATA").decode("utf-8")
        return Parser().parsestr(text)


def declared_airflow() -> Requirement:
    """The apache-airflow requirement of pyproject.toml, e.g. apache-airflow>=3.1,<4."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        dependencies = tomllib.load(file)["project"]["dependencies"]
    [airflow] = [r for r in map(Requirement, dependencies) if r.name == "apache-airflow"]
    return airflow
