"""Implementations of the conformance protocol, most wrong on purpose, for `handoff conform`.

Most are the reference driver (`handoff.conform_driver.Driver`) with one answer changed, run as
a script: `python tests/drivers/NAME.py`.  `wrong_*` answer one call differently from the chart;
`defect_*` each play a defect an upstream coordinator once had; `broken` breaks the protocol
itself and `unruly` outlasts the limits the check puts on an implementation; `version_one`,
`no_lifecycle` and `open_count` speak the protocol rightly in ways the check must accept.
`test_conform.py` says what the check must find in each.
"""
