"""docs/concepts.md runs as written: every ```python block executes and its asserts hold.

Each block is self-contained and runs alone in a fresh namespace, so a reader can copy any one of
them. A test is named after the heading the block sits under, so a failure names the concept whose
example rotted.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concepts.md"

_FENCE = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^#{2,3} (.+)$", re.MULTILINE)


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")


def _blocks() -> list[tuple[str, int, str]]:
    """(section slug, first line number, code) for every python block, in page order."""
    text = PAGE.read_text(encoding="utf-8")
    headings = [(m.start(), _slug(m[1])) for m in _HEADING.finditer(text)]
    found: list[tuple[str, int, str]] = []
    for match in _FENCE.finditer(text):
        section = next((slug for start, slug in reversed(headings) if start < match.start()), "top")
        line = text.count("\n", 0, match.start(1)) + 1
        found.append((section, line, match[1]))
    return found


def _ids(blocks: list[tuple[str, int, str]]) -> list[str]:
    """The section's slug, numbered when a section holds more than one block."""
    counts: dict[str, int] = {}
    for section, _, _ in blocks:
        counts[section] = counts.get(section, 0) + 1
    seen: dict[str, int] = {}
    ids = []
    for section, _, _ in blocks:
        seen[section] = seen.get(section, 0) + 1
        ids.append(section if counts[section] == 1 else f"{section}_{seen[section]}")
    return ids


BLOCKS = _blocks()


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 7, "docs/concepts.md lost its examples"


@pytest.mark.parametrize(("section", "line", "code"), BLOCKS, ids=_ids(BLOCKS))
def test_block_runs_and_its_asserts_hold(
    section: str, line: int, code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every example ends by asserting what its text claims; a block without one proves nothing.
    assert re.search(r"^assert ", code, re.MULTILINE), f"{section}: the block asserts nothing"
    # Padded so that a traceback names the line of docs/concepts.md, not of the block.
    compiled = compile("\n" * (line - 1) + code, str(PAGE), "exec")
    exec(compiled, {"__name__": f"concepts_{section}"})
    assert capsys.readouterr().out, f"{section}: the block prints nothing for a reader to see"
