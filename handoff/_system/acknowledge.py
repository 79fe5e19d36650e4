"""When a runtime acknowledges work: for every kind of action alike (`Acknowledge`, the
`--acknowledge on-send|on-reply` policies) or per kind (`PerAction`, `on-send:KIND,…`)."""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from handoff._values.messages import HandoffAction

__all__ = ["Acknowledge", "AnyAcknowledge", "PerAction", "acknowledge_of"]


_ON_SEND_KINDS = (
    HandoffAction.SubmitPrefill,
    HandoffAction.ReserveDestination,
    HandoffAction.StartTransfer,
)
"""The kinds of action whose acknowledgement a runtime may report as it sends them."""


class Acknowledge(enum.Enum):
    """When the runtime acknowledges work that takes or moves KV; the value is its option."""

    ON_REPLY = "on-reply"
    """The worker's reply carries the acknowledgement: it has the work when it is reported."""
    ON_SEND = "on-send"
    """The runtime reports `Submitted`, `Accepted` or `Scheduled` as it sends the work, before
    the worker has it (as docs/integrating.md's asyncio runtime does for `Submitted` and
    `Scheduled`); the worker then only
    reports the work's fact, or `Failed` when it did not do it."""

    @property
    def words(self) -> str:
        """The policy in a report's words: `work acknowledged on send`."""
        when = "on send" if self is Acknowledge.ON_SEND else "on the worker's reply"
        return f"work acknowledged {when}"

    def sends(self, action: HandoffAction) -> bool:
        """Whether the runtime reports `action` acknowledged as it sends it."""
        return self is Acknowledge.ON_SEND and type(action) in _ON_SEND_KINDS

    @property
    def kinds(self) -> tuple[str, ...]:
        """The names of the kinds of action acknowledged on send."""
        return tuple(_ACKNOWLEDGED_ON_SEND) if self is Acknowledge.ON_SEND else ()


_ACKNOWLEDGED_ON_SEND = {kind.__name__: kind for kind in _ON_SEND_KINDS}


def _names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@attrs.frozen
class PerAction:
    """Acknowledgement per kind of action: the kinds in `on_send` are reported acknowledged as
    the runtime sends them, every other on the worker's reply (as the serving simulator's
    offline replay does: `StartTransfer` is `Scheduled` at once, the rest once the worker's
    command completed).  Its value is its option, `on-send:StartTransfer`."""

    on_send: frozenset[str] = attrs.field(converter=_names)
    """The names of the kinds acknowledged on send (of those a worker does work for)."""

    @on_send.validator
    def _known(self, attribute: attrs.Attribute[frozenset[str]], names: frozenset[str]) -> None:
        unknown = sorted(names - _ACKNOWLEDGED_ON_SEND.keys())
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)} cannot be acknowledged on send: expected any of "
                f"{', '.join(_ACKNOWLEDGED_ON_SEND)}"
            )

    @property
    def kinds(self) -> tuple[str, ...]:
        """The names of the kinds of action acknowledged on send, in issue order."""
        return tuple(name for name in _ACKNOWLEDGED_ON_SEND if name in self.on_send)

    @property
    def value(self) -> str:
        """`on-send:StartTransfer`: the spelling `acknowledge_of` reads back."""
        return f"{Acknowledge.ON_SEND.value}:{','.join(self.kinds)}"

    @property
    def words(self) -> str:
        """`StartTransfer acknowledged on send, other work on the worker's reply`."""
        kinds = self.kinds
        if not kinds:
            return Acknowledge.ON_REPLY.words
        return f"{' and '.join(kinds)} acknowledged on send, other work on the worker's reply"

    def sends(self, action: HandoffAction) -> bool:
        """Whether the runtime reports `action` acknowledged as it sends it."""
        return type(action).__name__ in self.on_send


AnyAcknowledge = Acknowledge | PerAction
"""When the runtime acknowledges work: for every kind alike, or per kind of action."""


def acknowledge_of(text: str) -> AnyAcknowledge:
    """The policy `text` spells: `on-send`, `on-reply`, or `on-send:KIND,…` (those kinds on
    send, the rest on reply).  Raises ValueError saying what would be right."""
    policy, colon, kinds = (part.strip() for part in text.partition(":"))
    if not colon:
        for member in Acknowledge:
            if member.value == policy:
                return member
    elif policy == Acknowledge.ON_SEND.value:
        return PerAction(frozenset(filter(None, (kind.strip() for kind in kinds.split(",")))))
    raise ValueError(
        f"unknown acknowledgement policy {text!r}: expected on-send, on-reply or "
        f"on-send:KIND,… (any of {', '.join(_ACKNOWLEDGED_ON_SEND)})"
    )


# A runtime profile of one's own names these: the names say `handoff`.
for _exported in (Acknowledge, PerAction):
    _exported.__module__ = "handoff"
