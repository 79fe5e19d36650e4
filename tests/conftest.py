"""Test-wide settings: Hypothesis runs derandomized under CI so a red build is reproducible.

Both profiles spend the same budget: CI's examples are the same on every run, so a bigger
budget would buy the same examples again each time, while a developer's random ones explore
further from run to run.  A slow property test asks for a smaller budget under CI
(`support.slow_property`) rather than being left out.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from support import HYPOTHESIS_PROFILE, SessionCache

settings.register_profile("dev", max_examples=150, stateful_step_count=40, deadline=None)
settings.register_profile(
    "ci",
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(HYPOTHESIS_PROFILE)


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> SessionCache:
    """What the workers of this session make once and share (see `support.SessionCache`)."""
    root = tmp_path_factory.getbasetemp()
    return SessionCache((root if worker_id == "master" else root.parent) / "shared")


_SPREAD = "tests/test_review_mutants.py"
"""The module whose tests spread over the workers by parameter (one mutant each): its reviews
are most of the suite's in-process work, and each is made once, by the worker that runs that
mutant's tests."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, except that `_SPREAD`'s tests go by parameter, not by file.

    What `--dist loadgroup` and the module's `xdist_group` marks are for, which pytest-xdist
    3.8 no longer honours with pytest 9 (it renames a test's id where pytest no longer reads
    it); the scheduler sees test ids only, so the parameter is read from the id.
    """
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class Spread(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path, _, name = nodeid.partition("::")
            if path.endswith(_SPREAD) and name.endswith("]"):
                return f"{path}[{name[name.index('[') + 1 :]}"
            return path

    return Spread(config, log)
