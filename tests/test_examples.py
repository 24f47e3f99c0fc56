"""The runnable examples a reader meets first run as they are, and say what they claim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_thirty_seconds_example_shows_a_full_then_changes_as_patched() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "thirty_seconds.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert "state unknown" in lines[1]
    assert "state complete" in lines[3] and "exact as of 2026-11-22 02:00:00+00:00" in lines[3]
    assert "state patched, complete as of 2026-11-23 02:00:00+00:00" in lines[5]
    assert "deletions as of 2026-11-22 02:00:00+00:00" in lines[5]
    assert "rejected: receiver_time" in lines[6]
    assert lines[8] == lines[5]


def test_readme_shows_the_thirty_seconds_example_as_it_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "examples" / "thirty_seconds.py").read_text()
    assert f"```python\n{example}```" in readme


def test_readme_opens_with_the_install_line_and_the_quickstart_dag() -> None:
    readme = (ROOT / "README.md").read_text()
    dag = (ROOT / "examples" / "quickstart.py").read_text()
    opening = readme.split("\n## ", 2)[1]
    assert opening.startswith("Install\n")
    assert 'pip install "airflow-provider-dogana[postgres]"' in opening
    assert f"```python\n{dag}```" in opening


def test_readme_shows_the_quickstart_in_its_short_form_beside_it() -> None:
    readme = (ROOT / "README.md").read_text()
    short = (ROOT / "examples" / "quickstart_short.py").read_text()
    opening = readme.split("\n## ", 2)[1]
    assert f"```python\n{short}```" in opening
