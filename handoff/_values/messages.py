"""Facts the runtime reports and actions the coordinator asks for, one class per variant."""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from handoff._values.timing import HandoffTransferTiming
from handoff._values.validators import (
    check_count,
    check_exact,
    check_float,
    to_count,
    to_float,
    wrong_type,
)
from handoff._values.values import HandoffActionId, HandoffId

if TYPE_CHECKING:
    # Lets each namespace below name a variant class of the same name, defined after it.
    import handoff._values.messages

__all__ = [
    "AnyHandoffAction",
    "AnyHandoffFact",
    "HandoffAction",
    "HandoffFact",
    "IssuedHandoffAction",
]

_check_handoff_id = check_exact(HandoffId, "a HandoffId")


class HandoffFact:
    """Something that happened to a handoff, reported by the runtime to `on_fact`.

    A namespace of variants (`HandoffFact.SourceHeld(...)`, `HandoffFact.Failed(...)`, …) and
    their common base: every variant is a `HandoffFact` and has a `handoff_id`.
    """

    __slots__ = ()

    handoff_id: HandoffId

    # The variants subclass this base, so they are defined after it and attached at the end.
    if TYPE_CHECKING:
        SourceHeld: TypeAlias = "handoff._values.messages.SourceHeld"
        DestinationReserved: TypeAlias = "handoff._values.messages.DestinationReserved"
        TransferCompleted: TypeAlias = "handoff._values.messages.TransferCompleted"
        Failed: TypeAlias = "handoff._values.messages.Failed"
        TimedOut: TypeAlias = "handoff._values.messages.TimedOut"
        Canceled: TypeAlias = "handoff._values.messages.Canceled"

    def __init__(self) -> None:  # variants define their own; only the bare base lands here
        raise TypeError("HandoffFact is abstract: construct a variant such as HandoffFact.Failed")


@attrs.frozen(cache_hash=True)
class SourceHeld(HandoffFact):
    """The source finished prefill and holds the prompt's KV cache, ready to transfer."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    transfer_timing: HandoffTransferTiming = attrs.field(
        validator=check_exact(HandoffTransferTiming, "a HandoffTransferTiming")
    )


@attrs.frozen(cache_hash=True)
class DestinationReserved(HandoffFact):
    """The destination reserved room; it still lacks `transferable_prompt_tokens` tokens of KV."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    transferable_prompt_tokens: int = attrs.field(converter=to_count, validator=check_count)


# The variants that carry nothing but the id share one attrs base: attrs writes and compiles the
# methods of every decorated class anew at import, so these bare subclasses inherit them instead.
# The inherited `__eq__` compares exact classes and `__repr__` names the subclass, so each variant
# is still equal only to itself and prints as `HandoffFact.Failed(handoff_id=...)`.


@attrs.frozen(cache_hash=True)
class _IdOnlyFact(HandoffFact):
    """The base of the fact variants whose only field is the handoff id."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


class TransferCompleted(_IdOnlyFact):
    """The KV cache arrived at the destination."""

    __slots__ = ()


class Failed(_IdOnlyFact):
    """The handoff failed; what was acquired must be cleaned up."""

    __slots__ = ()


class TimedOut(_IdOnlyFact):
    """The handoff took too long; what was acquired must be cleaned up."""

    __slots__ = ()


class Canceled(_IdOnlyFact):
    """The request was canceled; what was acquired must be cleaned up."""

    __slots__ = ()


class HandoffAction:
    """Something the coordinator asks the runtime to do, answered by an outcome.

    A namespace of variants (`HandoffAction.SubmitPrefill(...)`, …) and their common base: every
    variant is a `HandoffAction` and has a `handoff_id`; only `StartTransfer` carries more.
    """

    __slots__ = ()

    handoff_id: HandoffId

    if TYPE_CHECKING:
        SubmitPrefill: TypeAlias = "handoff._values.messages.SubmitPrefill"
        ReserveDestination: TypeAlias = "handoff._values.messages.ReserveDestination"
        StartTransfer: TypeAlias = "handoff._values.messages.StartTransfer"
        ActivateDestination: TypeAlias = "handoff._values.messages.ActivateDestination"
        ReleaseSource: TypeAlias = "handoff._values.messages.ReleaseSource"
        CancelSource: TypeAlias = "handoff._values.messages.CancelSource"
        CancelDestination: TypeAlias = "handoff._values.messages.CancelDestination"
        Complete: TypeAlias = "handoff._values.messages.Complete"

    def __init__(self) -> None:  # variants define their own; only the bare base lands here
        raise TypeError(
            "HandoffAction is abstract: construct a variant such as HandoffAction.Complete"
        )


# Actions are built on every coordinator step, so each field has exactly one cheap check.


@attrs.frozen(cache_hash=True)
class _IdOnlyAction(HandoffAction):
    """The base of the action variants whose only field is the handoff id (see `_IdOnlyFact`)."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


class SubmitPrefill(_IdOnlyAction):
    """Run prefill on the source; acknowledged SUBMITTED."""

    __slots__ = ()


class ReserveDestination(_IdOnlyAction):
    """Ask the destination to take ownership of the request; acknowledged ACCEPTED."""

    __slots__ = ()


@attrs.frozen(cache_hash=True)
class StartTransfer(HandoffAction):
    """Move the KV cache, modelled to take `delay_ms` milliseconds; acknowledged SCHEDULED."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    delay_ms: float = attrs.field(converter=to_float, validator=check_float)


class ActivateDestination(_IdOnlyAction):
    """Let the destination start decoding from the transferred KV; acknowledged APPLIED."""

    __slots__ = ()


class ReleaseSource(_IdOnlyAction):
    """Free the source's copy of the KV cache; acknowledged APPLIED or NOOP."""

    __slots__ = ()


class CancelSource(_IdOnlyAction):
    """Undo the source's part during cleanup; acknowledged APPLIED or NOOP, and must not fail."""

    __slots__ = ()


class CancelDestination(_IdOnlyAction):
    """Undo the destination's part during cleanup; acknowledged APPLIED or NOOP, must not fail."""

    __slots__ = ()


class Complete(_IdOnlyAction):
    """The handoff is over: the runtime forgets it and stops delivering its facts.

    Nothing is acknowledged for it. A late `Failed`, `TimedOut` or `Canceled` given to a
    coordinator that completed with SUCCESS would reopen cleanup and cancel a decoding request
    (docs/integrating.md, "What the runtime guarantees").
    """

    __slots__ = ()


AnyHandoffFact: TypeAlias = (
    SourceHeld | DestinationReserved | TransferCompleted | Failed | TimedOut | Canceled
)
"""Any one fact variant, for annotations under which a `match` over the variants is exhaustive."""

AnyHandoffAction: TypeAlias = (
    SubmitPrefill
    | ReserveDestination
    | StartTransfer
    | ActivateDestination
    | ReleaseSource
    | CancelSource
    | CancelDestination
    | Complete
)
"""Any one action variant, for annotations under which a `match` on the variants is exhaustive."""


def _attach(namespace: type, variants: object) -> None:
    # The public spelling is `Namespace.Variant`; naming the class so makes its repr and pickling
    # agree with it. The order of the union is the Rust enum's, which the wire codecs keep.
    for variant in typing.get_args(variants):
        variant.__qualname__ = f"{namespace.__name__}.{variant.__name__}"
        setattr(namespace, variant.__name__, variant)


_attach(HandoffFact, AnyHandoffFact)
_attach(HandoffAction, AnyHandoffAction)


_ACTION_VARIANTS = frozenset(typing.get_args(AnyHandoffAction))


def _check_action(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) not in _ACTION_VARIANTS:
        raise wrong_type(attribute.name, "a HandoffAction variant", value)


@attrs.frozen(cache_hash=True)
class IssuedHandoffAction:
    """An action together with the id its outcome must be reported under.

    Coordinator calls return lists of these. Perform `action` (a `match` over it is exhaustive:
    `action` is typed `AnyHandoffAction`), then report
    `coordinator.on_action_outcome(action_id=issued.id, outcome=…)`.
    """

    id: HandoffActionId = attrs.field(validator=check_exact(HandoffActionId, "a HandoffActionId"))
    action: AnyHandoffAction = attrs.field(validator=_check_action)
