"""Conformance: the chart generates the calls, an implementation answers, every answer is judged.

`protocol` is the JSON Lines both sides speak (docs/conformance.md), which the public reference
driver, `handoff.conform_driver`, answers with the library's own coordinator; `suite` turns the
review's exploration into calls with the chart's answers (every reachable configuration, every
call from it) and random walks; `vectors` writes the suite as test vectors and reads them back;
`child` runs the implementation in a process group of its own; `check` sends the calls and
finds the shortest divergence; `cli` is `handoff conform`.  Imports run protocol ← suite ←
check ← cli, with vectors and child beside them.
"""
