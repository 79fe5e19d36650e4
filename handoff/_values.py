"""Identifiers, enums and outcomes: the small values every fact, action and call carries."""

from __future__ import annotations

import enum
import uuid
from typing import Any, ClassVar

import attrs

from handoff._validators import (
    check_count,
    check_instance,
    require_instance,
    wrong_type,
    wrong_value,
)

__all__ = [
    "EngineType",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "HandoffEnum",
    "HandoffId",
    "HandoffOrder",
    "KvTransferTimingMode",
    "OutcomeKind",
]


class HandoffEnum(enum.Enum):
    """The handoff enums' base: a member reprs as it is spelled, `HandoffOrder.SOURCE_FIRST`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


@attrs.frozen(order=True)
class HandoffId:
    """Names one handoff; every fact and action carries the id of the handoff it belongs to."""

    uuid: uuid.UUID = attrs.field(validator=check_instance(uuid.UUID, "a uuid.UUID"))

    @classmethod
    def new(cls) -> HandoffId:
        """A fresh random (version 4) id."""
        return cls(uuid.uuid4())

    def __str__(self) -> str:
        return str(self.uuid)

    def __repr__(self) -> str:
        return f"HandoffId(UUID('{self.uuid}'))"


class EngineType(HandoffEnum):
    """The serving engine a handoff runs on; it decides the `HandoffOrder`."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


class HandoffOrder(HandoffEnum):
    """Which side is committed first: the prefill source or the decode destination."""

    SOURCE_FIRST = "SourceFirst"
    DESTINATION_FIRST = "DestinationFirst"

    @classmethod
    def for_engine(cls, engine: EngineType) -> HandoffOrder:
        """The order `engine` uses: SGLang reserves the destination first, the others do not."""
        require_instance("engine", engine, EngineType, "an EngineType")
        return _ORDER_FOR_ENGINE[engine]


_ORDER_FOR_ENGINE = {
    EngineType.VLLM: HandoffOrder.SOURCE_FIRST,
    EngineType.SGLANG: HandoffOrder.DESTINATION_FIRST,
    EngineType.TRTLLM: HandoffOrder.SOURCE_FIRST,
}


class KvTransferTimingMode(HandoffEnum):
    """Which token count the modelled transfer delay is based on."""

    FULL_PROMPT = "full_prompt"
    DESTINATION_MISSING = "destination_missing"


class HandoffCompletion(HandoffEnum):
    """How a completed handoff ended."""

    SUCCESS = "Success"
    CANCELED = "Canceled"


class OutcomeKind(HandoffEnum):
    """The kinds of acknowledgement the runtime can give for an issued action."""

    SUBMITTED = "Submitted"
    ACCEPTED = "Accepted"
    SCHEDULED = "Scheduled"
    APPLIED = "Applied"
    NOOP = "Noop"
    FAILED = "Failed"


@attrs.frozen(order=True)
class HandoffActionId:
    """Names one issued action; a coordinator numbers actions 0, 1, 2, … and never reuses one."""

    value: int = attrs.field(validator=check_count)

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"HandoffActionId({self.value})"


def _check_reason(
    instance: HandoffActionOutcome, attribute: attrs.Attribute[Any], value: object
) -> None:
    if instance.kind is OutcomeKind.FAILED:
        if not isinstance(value, str):
            raise wrong_type(attribute.name, "a str for a FAILED outcome", value)
    elif value is not None:
        expected = f"None for an outcome of kind {instance.kind.name}"
        if isinstance(value, str):
            raise wrong_value(attribute.name, expected, value)
        raise wrong_type(attribute.name, expected, value)


@attrs.frozen
class HandoffActionOutcome:
    """The runtime's acknowledgement of one issued action; equal when kind and reason are equal.

    Use the constants (`HandoffActionOutcome.APPLIED`, …) or `HandoffActionOutcome.failed(reason)`.
    """

    SUBMITTED: ClassVar[HandoffActionOutcome]
    ACCEPTED: ClassVar[HandoffActionOutcome]
    SCHEDULED: ClassVar[HandoffActionOutcome]
    APPLIED: ClassVar[HandoffActionOutcome]
    NOOP: ClassVar[HandoffActionOutcome]

    kind: OutcomeKind = attrs.field(validator=check_instance(OutcomeKind, "an OutcomeKind"))
    reason: str | None = attrs.field(default=None, validator=_check_reason)

    @classmethod
    def failed(cls, reason: str) -> HandoffActionOutcome:
        """The action could not be performed, for the human-readable `reason`."""
        return cls(OutcomeKind.FAILED, reason)

    @property
    def is_failed(self) -> bool:
        """Whether this outcome reports a failure."""
        return self.kind is OutcomeKind.FAILED

    def __str__(self) -> str:
        if self.reason is None:
            return self.kind.value
        import json  # only a failure's reason needs it; `import handoff` stays lighter without

        return f"{self.kind.value}({json.dumps(self.reason, ensure_ascii=False)})"

    def __repr__(self) -> str:
        if self.reason is None:
            return f"HandoffActionOutcome.{self.kind.name}"
        return f"HandoffActionOutcome.failed({self.reason!r})"


HandoffActionOutcome.SUBMITTED = HandoffActionOutcome(OutcomeKind.SUBMITTED)
HandoffActionOutcome.ACCEPTED = HandoffActionOutcome(OutcomeKind.ACCEPTED)
HandoffActionOutcome.SCHEDULED = HandoffActionOutcome(OutcomeKind.SCHEDULED)
HandoffActionOutcome.APPLIED = HandoffActionOutcome(OutcomeKind.APPLIED)
HandoffActionOutcome.NOOP = HandoffActionOutcome(OutcomeKind.NOOP)
