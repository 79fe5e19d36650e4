"""Identifiers, enums and outcomes: the small values every fact, action and call carries."""

from __future__ import annotations

import enum
import re
import uuid
from typing import Any, ClassVar

import attrs

from handoff._values.validators import (
    check_count,
    check_instance,
    require_instance,
    to_count,
    to_text,
    to_uuid,
    wrong_type,
    wrong_value,
)

__all__ = [
    "ONE_OF_EACH_OUTCOME",
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
    """The handoff enums' base: a member reprs as it is spelled, `HandoffOrder.SOURCE_FIRST`,
    and its `str()` is its wire value, `SourceFirst`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return str(self._value_)

    def __format__(self, spec: str) -> str:
        return format(str(self._value_), spec)

    # A member is its own singleton: hashing it by identity is right, and far cheaper than
    # `Enum`'s hash of its name (a review hashes millions of configurations).
    __hash__ = object.__hash__


@attrs.frozen(order=True, cache_hash=True)
class HandoffId:
    """Names one handoff; every fact and action carries the id of the handoff it belongs to.

    Build one with `HandoffId.new()`, `HandoffId(uuid=some_uuid)` or `HandoffId.parse(text)`.
    A `uuid.UUID` subclass is stored as the plain `uuid.UUID` of its value. `str()` and
    `format()` give the lowercase hyphenated UUID, as the wire writes it.
    """

    uuid: uuid.UUID = attrs.field(
        converter=to_uuid, validator=check_instance(uuid.UUID, "a uuid.UUID")
    )

    @classmethod
    def new(cls) -> HandoffId:
        """A fresh random (version 4) id, for a new handoff: `HandoffId.new()`."""
        return cls(uuid.uuid4())

    @classmethod
    def parse(cls, text: str) -> HandoffId:
        """The id written as `text`, a hyphenated UUID (`"00000000-0000-0000-0000-000000000001"`).

        Raises `ValueError` for anything else (braces, URNs and unhyphenated forms included), and
        `TypeError` when `text` is not a `str`.
        """
        if not isinstance(text, str):
            raise wrong_type("text", "a str", text)
        plain = str.__str__(text)
        if _UUID_TEXT.fullmatch(plain) is None:
            raise wrong_value(
                "text", "a hyphenated UUID like 0123abcd-0123-0123-0123-0123456789ab", text
            )
        return cls(uuid.UUID(plain))

    def __str__(self) -> str:
        return str(self.uuid)

    def __format__(self, spec: str) -> str:
        return format(str(self.uuid), spec)

    def __repr__(self) -> str:
        return f"HandoffId(UUID('{self.uuid}'))"


_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


class EngineType(HandoffEnum):
    """The serving engine a handoff runs on; it decides the `HandoffOrder`.

    `HandoffOrder.for_engine(engine=EngineType.SGLANG)` is `DESTINATION_FIRST`; vLLM and
    TRT-LLM are `SOURCE_FIRST`. `str()` is the wire value (`"sglang"`).
    """

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


class HandoffOrder(HandoffEnum):
    """Which side is committed first: the prefill source or the decode destination.

    Give it to the coordinator,
    `HandoffCoordinatorCore(handoff_id=…, order=HandoffOrder.SOURCE_FIRST)`; each order has a
    shipped chart (`SourceFirstChart`, `DestinationFirstChart`). `str()` is the wire value
    (`"SourceFirst"`); contract §1 says which backend uses which.
    """

    SOURCE_FIRST = "SourceFirst"
    DESTINATION_FIRST = "DestinationFirst"

    @classmethod
    def for_engine(cls, engine: EngineType) -> HandoffOrder:
        """The order `engine` uses: SGLang reserves the destination first, the others do not.

        `HandoffOrder.for_engine(engine=EngineType.VLLM) is HandoffOrder.SOURCE_FIRST`; anything
        but an `EngineType` is a `TypeError`.
        """
        require_instance("engine", engine, EngineType, "an EngineType")
        return _ORDER_FOR_ENGINE[engine]


_ORDER_FOR_ENGINE = {
    EngineType.VLLM: HandoffOrder.SOURCE_FIRST,
    EngineType.SGLANG: HandoffOrder.DESTINATION_FIRST,
    EngineType.TRTLLM: HandoffOrder.SOURCE_FIRST,
}


class KvTransferTimingMode(HandoffEnum):
    """Which token count the modelled transfer delay is based on.

    `FULL_PROMPT` models moving the whole prompt's KV; `DESTINATION_MISSING` only the tokens the
    destination still lacks (`DestinationReserved.transferable_prompt_tokens`); contract §3.
    """

    FULL_PROMPT = "full_prompt"
    DESTINATION_MISSING = "destination_missing"


class HandoffCompletion(HandoffEnum):
    """How a completed handoff ended.

    `SUCCESS`: the destination holds the request and the source was released. `CANCELED`:
    cleanup freed every owner. A coordinator's `completion` is the latest one; a reopened
    cleanup turns a SUCCESS into CANCELED (contract §4, "Completing").
    """

    SUCCESS = "Success"
    CANCELED = "Canceled"


class OutcomeKind(HandoffEnum):
    """The kinds of acknowledgement the runtime can give for an issued action.

    Which kinds fit which action is contract §4, `on_action_outcome`; outcomes are built from
    the `HandoffActionOutcome` constants, or `HandoffActionOutcome.failed(reason=…)`.
    """

    SUBMITTED = "Submitted"
    ACCEPTED = "Accepted"
    SCHEDULED = "Scheduled"
    APPLIED = "Applied"
    NOOP = "Noop"
    FAILED = "Failed"


@attrs.frozen(order=True, cache_hash=True)
class HandoffActionId:
    """Names one issued action; a coordinator numbers actions 0, 1, 2, … and never reuses one.

    `HandoffActionId(value=3)`; an `int` subclass is stored as the plain `int`. `str()` and
    `format()` format the number (`f"{action_id:>4}"`).
    """

    value: int = attrs.field(converter=to_count, validator=check_count)

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return f"HandoffActionId({self.value})"


def _to_reason(value: str | None) -> str:
    # An outcome that is not a failure may leave its reason out (None): it is then "".
    return "" if value is None else to_text(value)


def _check_reason(
    instance: HandoffActionOutcome, attribute: attrs.Attribute[Any], value: object
) -> None:
    if instance.kind is OutcomeKind.FAILED:
        if not isinstance(value, str):
            raise wrong_type(attribute.name, "a str for a FAILED outcome", value)
    elif value != "":
        expected = f"empty (or None) for an outcome of kind {instance.kind.name}"
        if isinstance(value, str):
            raise wrong_value(attribute.name, expected, value)
        raise wrong_type(attribute.name, expected, value)


@attrs.frozen(cache_hash=True)
class HandoffActionOutcome:
    """The runtime's acknowledgement of one issued action; equal when kind and reason are equal.

    Use the constants (`HandoffActionOutcome.APPLIED`, …) or
    `HandoffActionOutcome.failed(reason="no room")`. `reason` is always a `str`: the failure's
    reason for a FAILED outcome (a `str` subclass is stored as the plain `str`), `""` for
    every other kind. `str()` is the outcome as the wire spells it (`Applied`,
    `Failed("no room")`).
    """

    SUBMITTED: ClassVar[HandoffActionOutcome]
    ACCEPTED: ClassVar[HandoffActionOutcome]
    SCHEDULED: ClassVar[HandoffActionOutcome]
    APPLIED: ClassVar[HandoffActionOutcome]
    NOOP: ClassVar[HandoffActionOutcome]

    kind: OutcomeKind = attrs.field(validator=check_instance(OutcomeKind, "an OutcomeKind"))
    reason: str = attrs.field(default="", converter=_to_reason, validator=_check_reason)

    @classmethod
    def failed(cls, reason: str) -> HandoffActionOutcome:
        """The action could not be performed, for the human-readable `reason` (a `str`)."""
        require_instance("reason", reason, str, "a str for a FAILED outcome")
        return cls(OutcomeKind.FAILED, reason)

    @property
    def is_failed(self) -> bool:
        """Whether this outcome reports a failure."""
        return self.kind is OutcomeKind.FAILED

    def __str__(self) -> str:
        if self.kind is not OutcomeKind.FAILED:
            return str(self.kind)
        import json  # only a failure's reason needs it; `import handoff` stays lighter without

        return f"{self.kind.value}({json.dumps(self.reason, ensure_ascii=False)})"

    def __repr__(self) -> str:
        if self.kind is not OutcomeKind.FAILED:
            return f"HandoffActionOutcome.{self.kind.name}"
        return f"HandoffActionOutcome.failed({self.reason!r})"


HandoffActionOutcome.SUBMITTED = HandoffActionOutcome(OutcomeKind.SUBMITTED)
HandoffActionOutcome.ACCEPTED = HandoffActionOutcome(OutcomeKind.ACCEPTED)
HandoffActionOutcome.SCHEDULED = HandoffActionOutcome(OutcomeKind.SCHEDULED)
HandoffActionOutcome.APPLIED = HandoffActionOutcome(OutcomeKind.APPLIED)
HandoffActionOutcome.NOOP = HandoffActionOutcome(OutcomeKind.NOOP)


ONE_OF_EACH_OUTCOME = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
    HandoffActionOutcome.NOOP,
    HandoffActionOutcome.failed("x"),
)
"""An outcome of every kind, in the order the tools try them (a failure's reason is no matter)."""
