"""The runnable examples a reader meets first run as they are, and say what they claim."""

from __future__ import annotations

import re
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


def test_docs_show_the_thirty_seconds_example_as_it_runs() -> None:
    # The page includes the file itself, so what it shows is what runs.
    page = (ROOT / "docs" / "core.md").read_text()
    assert "```{literalinclude} ../examples/thirty_seconds.py\n:language: python\n```" in page


def test_readme_opens_with_the_install_lines_and_the_quickstart_dag() -> None:
    readme = (ROOT / "README.md").read_text()
    dag = (ROOT / "examples" / "quickstart.py").read_text()
    install, quickstart = readme.split("\n## ")[1:3]
    assert install.startswith("Install\n")
    assert 'pip install "airflow-provider-dogana[postgres]"' in install
    # Before it is published: from a clone, and from a wheel (the extra quoted from the shell).
    assert 'pip install ".[postgres]"' in install
    assert "python -m build --wheel" in install and 'pip install "${wheel}[postgres]"' in install
    assert quickstart.startswith("Quickstart\n")
    assert f"```python\n{dag}```" in quickstart


def test_readme_shows_the_quickstart_in_its_short_form_beside_it() -> None:
    readme = (ROOT / "README.md").read_text()
    short = (ROOT / "examples" / "quickstart_short.py").read_text()
    quickstart = readme.split("\n## ")[2]
    assert f"```python\n{short}```" in quickstart


def test_readme_links_lead_to_files_of_the_repository() -> None:
    # The README is the front door to docs/: a page renamed without it would be a dead link.
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert any(target.startswith("docs/") for target in targets)
    assert [target for target in targets if not (ROOT / target).exists()] == []
