"""docs/operators.md stays true: every parameter it lists and every keyword its snippets pass
exists on the class it documents; so does every keyword of docs/expectations.md's snippets."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.airflow  # importing the operators imports Airflow


def classes() -> dict[str, type]:
    from dogana_provider.operators.activate import ActivateSourceOperator
    from dogana_provider.operators.deliver import DeliverOperator
    from dogana_provider.operators.extract import ExtractOperator
    from dogana_provider.operators.freshness import FreshnessOperator
    from dogana_provider.operators.gate import GateOperator
    from dogana_provider.operators.plan import PlanDeliveryOperator
    from dogana_provider.operators.publish import PublishOperator
    from dogana_provider.sensors.claims import ClaimsSensor

    found = (
        PlanDeliveryOperator,
        ExtractOperator,
        GateOperator,
        PublishOperator,
        DeliverOperator,
        ClaimsSensor,
        FreshnessOperator,
        ActivateSourceOperator,
    )
    return {cls.__name__: cls for cls in found}


OPERATORS = ROOT / "docs" / "operators.md"
EXPECTATIONS = ROOT / "docs" / "expectations.md"


def sections() -> dict[str, str]:
    """## headings of the Operators page (one per class) -> their text."""
    text = OPERATORS.read_text(encoding="utf-8")
    assert text.startswith("# Operators\n")
    parts = re.split(r"^## (\w+)\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def accepted(cls: type) -> set[str]:
    """Keyword arguments the class accepts: its own and those of every base's __init__."""
    names: set[str] = set()
    for base in cls.__mro__:
        init = base.__dict__.get("__init__")
        if init is not None:
            names |= set(inspect.signature(init).parameters)
    return names - {"self", "args", "kwargs"}


def own(cls: type) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}


def test_every_operator_has_a_section() -> None:
    assert list(sections()) == list(classes())


@pytest.mark.parametrize("name", list(classes()))
def test_listed_parameters_are_the_classs(name: str) -> None:
    cls, text = classes()[name], sections()[name]
    listed = set()
    for line in text.splitlines():
        if line.startswith("- `"):
            head = line[2:].split(":", 1)[0]
            listed |= set(re.findall(r"`(\w+)`", head))
    assert listed, f"{name}: no parameters listed"
    assert listed <= own(cls), f"{name}: not parameters of the class: {listed - own(cls)}"


def built(text: str) -> int:
    """How many operators the page's python snippets build; fails on a keyword a class lacks."""
    known = classes()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    called = 0
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                cls = known.get(node.func.id)
                if cls is None:
                    continue
                called += 1
                passed = {keyword.arg for keyword in node.keywords if keyword.arg}
                assert passed <= accepted(cls), f"{cls.__name__}: {passed - accepted(cls)}"
    return called


@pytest.mark.parametrize("name", list(classes()))
def test_snippet_keywords_exist(name: str) -> None:
    text = sections()[name]
    assert "```python\n" in text, f"{name}: no snippet"
    assert built(text), f"{name}: the snippet never builds one"


def test_expectations_page_snippet_keywords_exist() -> None:
    # The gate's expectations moved from the GateOperator section to a page of their own.
    assert built(EXPECTATIONS.read_text(encoding="utf-8")), "the page never builds a gate"
