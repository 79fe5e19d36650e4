"""The chart: how a handoff chart is written, checked when defined, derived and named."""
