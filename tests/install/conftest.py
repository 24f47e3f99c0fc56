"""The sdist and the wheel, built once per session for every test here (release.py)."""

from __future__ import annotations

import pytest
from release import Dist


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return Dist.build(tmp_path_factory.mktemp("dist"))
