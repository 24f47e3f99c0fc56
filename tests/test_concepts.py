"""docs/concepts.md runs as written: every ```python block executes and its asserts hold.

Each block is self-contained and runs alone in a fresh namespace, so a reader can copy any one of
them. A test is named after the heading the block sits under, so a failure names the concept whose
example rotted.
"""

from __future__ import annotations

import re
import traceback
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


# The behaviours issue 4 asks the page to cover, each a section with its own example.
BEHAVIOURS = (
    "a_nightly_full_dump",
    "the_last_30_days_every_night",
    "rows_changed_since_yesterday",
    "a_soft_deleting_source",
    "when_it_may_not_declare_tombstones",
    "an_outbox_or_change_table_with_commit_ordered_positions",
    "an_auto_increment_id_is_not_a_commit_ordered_position",
    "an_append_only_event_log",
    "tables_read_together_for_exact_as_of",
    "sources_that_must_be_activated",
    "what_dogana_cannot_see",
)


def test_every_behaviour_has_a_section_and_every_fence_is_run() -> None:
    text = PAGE.read_text(encoding="utf-8")
    headings = {_slug(m[1]) for m in _HEADING.finditer(text)}
    assert set(BEHAVIOURS) <= headings, sorted(set(BEHAVIOURS) - headings)
    with_examples = {section for section, _, _ in BLOCKS}
    assert set(BEHAVIOURS) - {"what_dogana_cannot_see"} <= with_examples
    # A fence this file does not parse would be a block nobody runs.
    assert text.count("```python\n") == len(BLOCKS)


@pytest.mark.parametrize(("section", "line", "code"), BLOCKS, ids=_ids(BLOCKS))
def test_block_runs_and_its_asserts_hold(
    section: str, line: int, code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every example ends by asserting what its text claims; a block without one proves nothing.
    assert re.search(r"^assert ", code, re.MULTILINE), f"{section}: the block asserts nothing"
    # Padded so that a traceback names the line of docs/concepts.md, not of the block.
    compiled = compile("\n" * (line - 1) + code, str(PAGE), "exec")
    failure = None
    try:
        exec(compiled, {"__name__": f"concepts_{section}"})
    except Exception as exc:
        # Name the page's line, not the whole page pytest would print as the module's source.
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(PAGE)]
        where = f"docs/concepts.md:{frames[-1].lineno}: {frames[-1].line}" if frames else ""
        failure = f"{section}: {where}\n{type(exc).__name__}: {exc}"
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    assert capsys.readouterr().out, f"{section}: the block prints nothing for a reader to see"
