"""Fixture charts, in one place: written with the public API only, as a user writes them.

`natural`: charts SPEC-equal to the shipped ones, or one rule away, written the way a
statechart author would; `broken` and `discipline`: the mutant suite, one broken rule each,
derived from the shipped charts as plain subclasses; `families`: charts that differ from the
reference yet can be argued safe, and one that leaks; `checked_drops`: charts that drop a
repeat yet check it, refused when defined.
"""
