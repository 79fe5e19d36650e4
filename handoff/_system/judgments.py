"""What a step of the system breaks, in words, the same for every scheduler: the review judges
its moves with these, the simulation what it samples.

Each judgment is a pure function of what the runtime saw of one handoff and of its workers'
slots, and answers None where the property holds: W1 at a completion with nothing of the
handoff in flight (`at_completion`), W2 when a worker takes a slot after the coordinator was
told it was freed or is told so while one is held, W3 when a worker performs work that was not
issued (`performed`), W6 when a worker holds two slots for one request, W8 and W9 when the
source performs a transfer into a slot that is not its request's (`transferred`), W10 when a
destination acknowledges an activation it does not serve, or stops serving a request whose
slot it still holds (`serving`).
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
    "serving",
    "told_while_held",
    "transferred",
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


def transferred(
    message: Message, held: int, holder: int | None, *, told_apart: bool
) -> Iterator[tuple[Key, str]]:
    """W9, and W8, when the source performs the `StartTransfer` that `message` carries: the
    KV goes into the slot the request's reservation took.  `told_apart`, which slot is whose
    is modelled, and `holder` is the request holding that slot (None: it is free); else it is
    the request's while the destination holds a slot for it (`held`), and free after (no
    other request ever takes it)."""
    own = 0 if message.handoff is None else message.handoff
    its_own = holder == own if told_apart else held > 0
    if its_own:
        return
    whose = "the request's" if message.handoff is None else f"h{own + 1}'s"
    where = "a free slot: the destination holds no slot for it any more"
    if told_apart and holder is not None:
        where = f"the slot h{holder + 1} holds"
        yield (
            Key.SLOT_OWNED_ONCE,
            f"{message.describe()} wrote {whose} KV into the destination slot h{holder + 1} "
            "holds: one slot, two requests",
        )
    yield (
        Key.KV_INTO_OWN_SLOT,
        f"the source performed {message.describe()}: {whose} KV went into {where}",
    )


def serving(
    message: Message, acknowledged: bool, before: bool, after: bool, held: int
) -> str | None:
    """W10 for a destination that took the action `message` carries: `acknowledged`, it
    acknowledged an `ActivateDestination` as applied; `before` and `after`, whether it served
    the request before and after; `held`, the slots it holds for it afterwards."""
    if acknowledged and not after:
        return (
            f"the destination acknowledged {message.describe()} as applied and is not serving "
            "the request"
        )
    if before and not after and held:
        return (
            f"the destination stopped serving the request at {message.describe()} while it "
            "still holds its slot"
        )
    return None
