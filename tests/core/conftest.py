"""The hypothesis profile of a mutation run (docs/mutation.md), chosen only by HYPOTHESIS_PROFILE.

Without HYPOTHESIS_PROFILE=mutation nothing here changes a test: hypothesis keeps its own default
profile (and its "ci" profile when it detects CI), and every @settings count stays as written.

A mutation run asks the core tests one question thousands of times, once per mutant: does any
test fail? The profile makes each property a short, repeatable probe: few examples, the same ones
every run (derandomized, no example database), no deadline (the machine is shared) and no
shrinking (a failure is all a mutant needs, not its smallest example). A test whose @settings asks
for more examples is capped at the profile's count, since an explicit count outranks a profile.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

MUTATION = "mutation"
MUTATION_EXAMPLES = 10

settings.register_profile(
    MUTATION,
    max_examples=MUTATION_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow],
)

if os.environ.get("HYPOTHESIS_PROFILE") == MUTATION:
    settings.load_profile(MUTATION)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("HYPOTHESIS_PROFILE") != MUTATION:
        return
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        # hypothesis reads a test's settings from this attribute when the test runs; its own
        # pytest plugin sets it the same way for parametrized tests.
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None and own.max_examples > MUTATION_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=MUTATION_EXAMPLES)
