"""Implementations of the conformance protocol that are wrong on purpose, for `handoff conform`.

Each is the reference driver (`handoff.conform_driver.Driver`) with one answer changed, run as
a script: `python tests/drivers/NAME.py`.  `wrong_*` answer one call differently from the chart;
`broken_*` break the protocol itself.  `test_conform.py` says what the check must find in each.
"""
