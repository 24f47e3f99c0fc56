"""A module's old import path keeps working after the module moved to its room, with a warning.

DAG files written against an earlier layout (``from dogana_provider.expectations import
Expectations``) must keep importing: each old name is an alias of the module at its new home.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from dogana_provider import MOVED


@pytest.mark.parametrize(("old", "home"), sorted(MOVED.items()))
def test_an_old_module_path_is_the_module_at_its_home_with_a_deprecation_warning(
    old: str, home: str
) -> None:
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(home)
    assert any(
        issubclass(w.category, DeprecationWarning) and home in str(w.message) for w in caught
    ), [str(w.message) for w in caught]


def test_every_alias_points_at_a_module_that_exists() -> None:
    for home in MOVED.values():
        importlib.import_module(home)


def test_a_dag_importing_expectations_by_its_old_path_still_parses() -> None:
    """In a fresh interpreter, as a DAG processor imports a DAG file: nothing imported before."""
    code = (
        "from dogana_provider.expectations import Expectations\n"
        "from dogana_provider.checks.expectations import Expectations as Home\n"
        "assert Expectations is Home\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_the_receivers_snapshot_is_table_read_by_its_old_name_with_a_deprecation_warning() -> None:
    from dogana_provider import receiver

    with pytest.warns(DeprecationWarning, match="TableRead"):
        old = receiver.Snapshot
    assert old is receiver.TableRead
