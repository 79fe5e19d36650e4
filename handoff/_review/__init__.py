"""The model review: exhaustive exploration of a coordinator, monitors, properties, report.

`conform/` turns the same exploration into calls for an implementation in another process and
judges its answers against the chart's (`handoff conform`).
"""
