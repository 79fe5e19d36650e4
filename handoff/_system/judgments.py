"""What a step of the system breaks, in words, the same for every scheduler: the review judges
its moves with these, the simulation what it samples.

Each judgment is a pure function of what the runtime saw of one handoff and of its workers'
slots, and answers None where the property holds: W1 at a completion with nothing of the
handoff in flight (`at_completion`), W2 when a worker takes a slot after the coordinator was
told it was freed or is told so while one is held, W3 when a worker performs work that was not
issued (`performed`), W6 when a worker holds two slots for one request.
"""

from __future__ import annotations

from collections.abc import Iterator

from handoff._system.properties import Key
from handoff._system.workers import Message, Role, role_of
from handoff._values.values import HandoffCompletion

__all__ = [
    "after_abandoned",
    "at_completion",
    "held_after_freed",
    "performed",
    "told_while_held",
    "two_slots",
]


def at_completion(
    source: int,
    destination: int,
    completion: HandoffCompletion | None,
    destination_restarted: bool,
    whose: str = "the handoff",
) -> str | None:
    """W1 for a complete handoff with nothing of its own in flight, whose request the source
    and the destination hold `source` and `destination` slots for: which holds one it must not.

    After SUCCESS exactly the destination holds one (decode owns it); a destination that
    restarted since lost the request it was decoding, which no chart can prevent."""
    holders = [role for role, slots in zip(Role, (source, destination), strict=True) if slots]
    if completion is HandoffCompletion.CANCELED and holders:
        who = " and the ".join(role.value for role in holders)
        return (
            f"{whose} completed CANCELED and, with nothing of it in flight, the {who} holds a "
            "KV slot for it"
        )
    if completion is HandoffCompletion.SUCCESS and holders != [Role.DESTINATION]:
        if Role.SOURCE in holders:
            return f"{whose} completed SUCCESS and the source still holds a KV slot for it"
        if not destination_restarted:
            return f"{whose} completed SUCCESS and the destination holds no KV slot for it"
    return None


def after_abandoned(source: int, destination: int, whose: str = "the handoff") -> str | None:
    """W1 for a handoff whose session ended outside the chart, once its cleanup is done and
    nothing of it is in flight: no worker may hold a slot for it (`source`, `destination`)."""
    holders = [role for role, slots in zip(Role, (source, destination), strict=True) if slots]
    if not holders:
        return None
    who = " and the ".join(role.value for role in holders)
    return (
        f"{whose}'s session ended outside the chart and, with nothing of it in flight, the "
        f"{who} holds a KV slot for it"
    )


def performed(issued: int, done: int, message: Message) -> Iterator[tuple[Key, str]]:
    """W3 when a worker performs the action `message` carries, given the ids issued and
    already performed (bit n: action n)."""
    bit = 1 << message.action_id
    if not issued & bit:
        yield (
            Key.ONLY_ISSUED_WORK,
            f"the {message.role.value} performed {message.describe()}, never issued",
        )
    elif done & bit and not message.copy:
        # A copy is the network's doing, not the coordinator's: W3 judges what was issued.
        yield (
            Key.ONLY_ISSUED_WORK,
            f"the {message.role.value} performed {message.describe()} a second time",
        )
    elif role_of(message.action) is not message.role:
        yield Key.ONLY_ISSUED_WORK, f"{message.describe()} went to the {message.role.value}"


def held_after_freed(role: Role, message: Message, abandoned: bool = False) -> str:
    """W2: the worker of `role` took a slot for `message` after its freeing was told (to the
    coordinator, or, `abandoned`, to the runtime's own cleanup after its session ended)."""
    told = "told its slot was freed"
    if abandoned:
        told = f"{told}, or the runtime's own cleanup freed it after the session ended"
    return (
        f"the {role.value} took a KV slot for {message.describe()} after the coordinator was {told}"
    )


def told_while_held(message: Message) -> str:
    """W2: the coordinator is told by `message` that a slot its worker holds was freed."""
    return (
        f"the coordinator was told the {message.role.value}'s slot was freed "
        f"({message.describe()}) while the {message.role.value} holds it"
    )


def two_slots(role: Role, message: Message, slots: int) -> str:
    """W6: the worker of `role` holds `slots` (more than one) for one request."""
    return f"the {role.value} holds {slots} KV slots for one request after {message.describe()}"
