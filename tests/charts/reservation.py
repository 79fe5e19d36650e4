"""A chart that asks the destination for a second slot for the same request.

`ReservesTwice` reserves the destination again once the first reservation is accepted
("reserve again to be sure"), then goes on as the shipped chart does.  Every worker contract
shipped takes each reservation it is sent (one more slot each), and even a `tombstone` worker
remembers no reason to refuse the second one: the request is held, not canceled.  So the
destination holds two slots for one request, which W6 (no worker holds two slots for one
request) forbids, whatever else the review says of the chart.
"""

from __future__ import annotations

from handoff import SourceFirstChart

S = SourceFirstChart

# fmt: off


class ReservesTwice(SourceFirstChart):
    """Once the destination accepts the reservation, reserve it once more."""

    ownership_accepted = S.destination_reserving.to(
        S.destination_accepted, on="reserve_destination"
    )
