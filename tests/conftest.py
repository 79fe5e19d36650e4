"""Test-wide settings: Hypothesis runs derandomized under CI so a red build is reproducible;
under `--dist loadgroup` a test module stays on one worker unless its tests say otherwise."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=150, stateful_step_count=40, deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group each test by its module, as `--dist loadfile` would, so a module's fixtures are
    built once; a test that names its own `xdist_group` (a mutant's, whose review its tests
    share) is placed by that instead, so one heavy module can spread over the workers."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
