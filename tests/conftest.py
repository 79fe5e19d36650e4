"""Test-wide settings: Hypothesis runs derandomized under CI so a red build is reproducible.

Both profiles spend the same budget: CI's examples are the same on every run, so a bigger
budget would buy the same examples again each time, while a developer's random ones explore
further from run to run.  A slow property test asks for a smaller budget under CI
(`support.slow_property`) rather than being left out.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from support import HYPOTHESIS_PROFILE

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
