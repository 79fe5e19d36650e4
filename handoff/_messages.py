"""Facts the runtime reports and actions the coordinator asks for, one class per variant."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import attrs

from handoff._timing import HandoffTransferTiming
from handoff._values import (
    HandoffActionId,
    HandoffId,
    check_count,
    check_float,
    check_instance,
    to_float,
)

__all__ = ["HandoffAction", "HandoffFact", "IssuedHandoffAction"]

_check_handoff_id = check_instance(HandoffId, "a HandoffId")


class HandoffFact:
    """Something that happened to a handoff, reported by the runtime to `on_fact`.

    A namespace of variants (`HandoffFact.SourceHeld(...)`, `HandoffFact.Failed(...)`, …) and
    their common base: every variant is a `HandoffFact` and has a `handoff_id`.
    """

    __slots__ = ()

    handoff_id: HandoffId

    # The variants are defined below, once this base exists, and attached to it there.
    if TYPE_CHECKING:
        SourceHeld: TypeAlias = "_SourceHeld"
        DestinationReserved: TypeAlias = "_DestinationReserved"
        TransferCompleted: TypeAlias = "_TransferCompleted"
        Failed: TypeAlias = "_Failed"
        TimedOut: TypeAlias = "_TimedOut"
        Canceled: TypeAlias = "_Canceled"

    def __init__(self) -> None:  # variants define their own; only the bare base lands here
        raise TypeError("HandoffFact is abstract: construct a variant such as HandoffFact.Failed")


@attrs.frozen
class _SourceHeld(HandoffFact):
    """The source finished prefill and holds the prompt's KV cache, ready to transfer."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    transfer_timing: HandoffTransferTiming = attrs.field(
        validator=check_instance(HandoffTransferTiming, "a HandoffTransferTiming")
    )


@attrs.frozen
class _DestinationReserved(HandoffFact):
    """The destination reserved room; it still lacks `transferable_prompt_tokens` tokens of KV."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    transferable_prompt_tokens: int = attrs.field(validator=check_count)


@attrs.frozen
class _TransferCompleted(HandoffFact):
    """The KV cache arrived at the destination."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _Failed(HandoffFact):
    """The handoff failed; what was acquired must be cleaned up."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _TimedOut(HandoffFact):
    """The handoff took too long; what was acquired must be cleaned up."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _Canceled(HandoffFact):
    """The request was canceled; what was acquired must be cleaned up."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


class HandoffAction:
    """Something the coordinator asks the runtime to do, answered by an outcome.

    A namespace of variants (`HandoffAction.SubmitPrefill(...)`, …) and their common base: every
    variant is a `HandoffAction` and has a `handoff_id`; only `StartTransfer` carries more.
    """

    __slots__ = ()

    handoff_id: HandoffId

    if TYPE_CHECKING:
        SubmitPrefill: TypeAlias = "_SubmitPrefill"
        ReserveDestination: TypeAlias = "_ReserveDestination"
        StartTransfer: TypeAlias = "_StartTransfer"
        ActivateDestination: TypeAlias = "_ActivateDestination"
        ReleaseSource: TypeAlias = "_ReleaseSource"
        CancelSource: TypeAlias = "_CancelSource"
        CancelDestination: TypeAlias = "_CancelDestination"
        Complete: TypeAlias = "_Complete"

    def __init__(self) -> None:  # variants define their own; only the bare base lands here
        raise TypeError(
            "HandoffAction is abstract: construct a variant such as HandoffAction.Complete"
        )


# Actions are built on every coordinator step, so each field has exactly one cheap check.


@attrs.frozen
class _SubmitPrefill(HandoffAction):
    """Run prefill on the source; acknowledged SUBMITTED."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _ReserveDestination(HandoffAction):
    """Ask the destination to take ownership of the request; acknowledged ACCEPTED."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _StartTransfer(HandoffAction):
    """Move the KV cache, modelled to take `delay_ms` milliseconds; acknowledged SCHEDULED."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)
    delay_ms: float = attrs.field(converter=to_float, validator=check_float)


@attrs.frozen
class _ActivateDestination(HandoffAction):
    """Let the destination start decoding from the transferred KV; acknowledged APPLIED."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _ReleaseSource(HandoffAction):
    """Free the source's copy of the KV cache; acknowledged APPLIED or NOOP."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _CancelSource(HandoffAction):
    """Undo the source's part during cleanup; acknowledged APPLIED or NOOP, and must not fail."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _CancelDestination(HandoffAction):
    """Undo the destination's part during cleanup; acknowledged APPLIED or NOOP, must not fail."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


@attrs.frozen
class _Complete(HandoffAction):
    """The handoff is over; the runtime may forget it."""

    handoff_id: HandoffId = attrs.field(validator=_check_handoff_id)


def _attach(namespace: type, variant: type, name: str) -> None:
    # The public spelling is `Namespace.Variant`; naming the class so makes reprs and pickling
    # agree with it.
    variant.__qualname__ = f"{namespace.__name__}.{name}"
    variant.__name__ = name
    setattr(namespace, name, variant)


for _name, _variant in [
    ("SourceHeld", _SourceHeld),
    ("DestinationReserved", _DestinationReserved),
    ("TransferCompleted", _TransferCompleted),
    ("Failed", _Failed),
    ("TimedOut", _TimedOut),
    ("Canceled", _Canceled),
]:
    _attach(HandoffFact, _variant, _name)

for _name, _variant in [
    ("SubmitPrefill", _SubmitPrefill),
    ("ReserveDestination", _ReserveDestination),
    ("StartTransfer", _StartTransfer),
    ("ActivateDestination", _ActivateDestination),
    ("ReleaseSource", _ReleaseSource),
    ("CancelSource", _CancelSource),
    ("CancelDestination", _CancelDestination),
    ("Complete", _Complete),
]:
    _attach(HandoffAction, _variant, _name)

del _name, _variant


@attrs.frozen
class IssuedHandoffAction:
    """An action together with the id its outcome must be reported under."""

    id: HandoffActionId = attrs.field(
        validator=check_instance(HandoffActionId, "a HandoffActionId")
    )
    action: HandoffAction = attrs.field(validator=check_instance(HandoffAction, "a HandoffAction"))
