"""The session's DAGs folder, which every dag.test() parses whole: a module finds there nothing
the modules before it wrote (tests/conftest.py removes what a module adds once it is done)."""

from __future__ import annotations

import os
from pathlib import Path


def test_a_module_finds_no_dag_file_the_modules_before_it_wrote() -> None:
    folder = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == []
