"""`releasing` renamed `handing_back`, two ways: outside its group, as a first attempt writes
it, and inside it, as docs/writing-a-chart.md teaches.

`SourceFirstChart` keeps `releasing` in the group `both_engaged`, whose rule cancels both
owners on a failed action or a terminal fact.  `HandingBackOutside` declares the new state in
the chart's body, so it takes no rule from the group; `HandingBack` redeclares the group with
the new state in place of the old, so it does.
"""

from __future__ import annotations

from statemachine import State

from handoff import SourceFirstChart

S = SourceFirstChart


class HandingBackOutside(SourceFirstChart):
    """Names `handing_back` in every rule that named `releasing`, declared outside the group."""

    handing_back = State("handing back")
    destination_activated = S.activating.to(handing_back, on="release_source")
    source_released = (
        handing_back.to(S.succeeded)
        | S.cancelling_both.to(S.cancelling_destination)
        | S.cancelling_source.to(S.canceled)
    )


class HandingBack(SourceFirstChart):
    """The same rename, with `handing_back` inside `both_engaged` where `releasing` was."""

    class both_engaged(State.Compound, name="both engaged"):
        destination_reserving = State("destination reserving", initial=True)
        destination_accepted = State("destination accepted")
        transfer_starting = State("transfer starting")
        transferring = State("transferring")
        activating = State("activating")
        handing_back = State("handing back")

    destination_activated = S.activating.to(both_engaged.handing_back, on="release_source")
    source_released = (
        both_engaged.handing_back.to(S.succeeded)
        | S.cancelling_both.to(S.cancelling_destination)
        | S.cancelling_source.to(S.canceled)
    )
