"""Checked by `mypy --strict` (tests/test_typing.py): every union and enum matched exhaustively,
every wire read typed as what it reads, with no cast and no ignore anywhere in this file."""

from __future__ import annotations

from typing import assert_never

from handoff import (
    AnyHandoffAction,
    AnyHandoffFact,
    EngineType,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
    NormalizedHandoffEvent,
    OutcomeKind,
    SourceFirstChart,
    wire,
)


def act(issued: IssuedHandoffAction) -> str:
    match issued.action:
        case HandoffAction.SubmitPrefill(handoff_id=handoff_id):
            return f"prefill {handoff_id}"
        case HandoffAction.ReserveDestination():
            return "reserve"
        case HandoffAction.StartTransfer(delay_ms=delay_ms):
            return f"transfer in {delay_ms:.3f} ms"
        case HandoffAction.ActivateDestination():
            return "activate"
        case HandoffAction.ReleaseSource():
            return "release"
        case HandoffAction.CancelSource():
            return "cancel source"
        case HandoffAction.CancelDestination():
            return "cancel destination"
        case HandoffAction.Complete():
            return "forget"
        case _:
            assert_never(issued.action)


def action_name(action: AnyHandoffAction) -> str:
    match action:
        case (
            HandoffAction.SubmitPrefill()
            | HandoffAction.ReserveDestination()
            | HandoffAction.StartTransfer()
            | HandoffAction.ActivateDestination()
            | HandoffAction.ReleaseSource()
            | HandoffAction.CancelSource()
            | HandoffAction.CancelDestination()
            | HandoffAction.Complete()
        ):
            return type(action).__name__
        case _:
            assert_never(action)


def describe(fact: AnyHandoffFact) -> str:
    match fact:
        case HandoffFact.SourceHeld(transfer_timing=timing):
            return f"held {timing.full_prompt_tokens} tokens"
        case HandoffFact.DestinationReserved(transferable_prompt_tokens=tokens):
            return f"reserved, {tokens} missing"
        case HandoffFact.TransferCompleted():
            return "transferred"
        case HandoffFact.Failed() | HandoffFact.TimedOut() | HandoffFact.Canceled():
            return "ended"
        case _:
            assert_never(fact)


def read_fact(text: str) -> str:
    return describe(wire.loads(text, AnyHandoffFact))


def read_family(text: str) -> str:
    return describe(wire.loads(text, HandoffFact)) + action_name(wire.loads(text, HandoffAction))


def read_variant(text: str) -> HandoffId:
    canceled: HandoffFact.Canceled = wire.loads(text, HandoffFact.Canceled)
    return canceled.handoff_id


def read_log(text: str) -> list[str]:
    return [act(issued) for issued in wire.loads(text, list[IssuedHandoffAction])]


def restore(text: str) -> list[IssuedHandoffAction]:
    coordinator: HandoffCoordinatorCore = wire.loads(text, HandoffCoordinatorCore)
    return coordinator.start()


def reason(outcome: HandoffActionOutcome) -> str:
    failed = HandoffActionOutcome.failed(reason="no room")
    text: str = failed.reason
    match outcome.kind:
        case OutcomeKind.FAILED:
            return text + outcome.reason
        case (
            OutcomeKind.SUBMITTED
            | OutcomeKind.ACCEPTED
            | OutcomeKind.SCHEDULED
            | OutcomeKind.APPLIED
            | OutcomeKind.NOOP
        ):
            return str(outcome)
        case _:
            assert_never(outcome.kind)


def enums(
    order: HandoffOrder,
    engine: EngineType,
    mode: KvTransferTimingMode,
    completion: HandoffCompletion,
    event: NormalizedHandoffEvent,
) -> int:
    total = 0
    match order:
        case HandoffOrder.SOURCE_FIRST | HandoffOrder.DESTINATION_FIRST:
            total += 1
        case _:
            assert_never(order)
    match engine:
        case EngineType.VLLM | EngineType.SGLANG | EngineType.TRTLLM:
            total += 1
        case _:
            assert_never(engine)
    match mode:
        case KvTransferTimingMode.FULL_PROMPT | KvTransferTimingMode.DESTINATION_MISSING:
            total += 1
        case _:
            assert_never(mode)
    match completion:
        case HandoffCompletion.SUCCESS | HandoffCompletion.CANCELED:
            total += 1
        case _:
            assert_never(completion)
    match event:
        case (
            NormalizedHandoffEvent.SOURCE_HELD
            | NormalizedHandoffEvent.DESTINATION_ACCEPTED
            | NormalizedHandoffEvent.DESTINATION_RESERVED
            | NormalizedHandoffEvent.DESTINATION_ACTIVATED
            | NormalizedHandoffEvent.SOURCE_RELEASED
            | NormalizedHandoffEvent.COMPLETED
        ):
            total += 1
        case _:
            assert_never(event)
    return total


def construct() -> list[HandoffCoordinatorCore]:
    hid = HandoffId.new()
    timing = HandoffTransferTiming(
        mode=KvTransferTimingMode.FULL_PROMPT,
        full_prompt_tokens=10,
        kv_bytes_per_token=1024,
        bandwidth_gb_s=1.5,
    )
    assert timing.delay_ms(10) is not None
    return [
        HandoffCoordinatorCore(handoff_id=hid, order=HandoffOrder.SOURCE_FIRST),
        HandoffCoordinatorCore(handoff_id=hid, chart=SourceFirstChart),
        HandoffCoordinatorCore.new(hid, HandoffOrder.DESTINATION_FIRST),
    ]
