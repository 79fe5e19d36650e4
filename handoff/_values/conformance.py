"""The normalized summary of one end-to-end handoff, checked against the reference fixture."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from handoff._public import exported
from handoff._values.errors import ConformanceError
from handoff._values.lifecycle import NormalizedHandoffEvent, expected_normalized_handoff
from handoff._values.validators import check_count, check_instance, to_count, wrong_type
from handoff._values.values import EngineType, HandoffOrder

__all__ = ["NormalizedHandoffConformance", "NormalizedStoredTiming"]


def _to_lifecycle(value: Sequence[NormalizedHandoffEvent]) -> tuple[NormalizedHandoffEvent, ...]:
    # Strings are sequences too, but never a lifecycle: leave them for the validator to refuse.
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return tuple(value)
    return value


def _check_lifecycle(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, tuple):
        raise wrong_type(attribute.name, "a sequence of NormalizedHandoffEvent", value)
    for position, event in enumerate(value):
        if not isinstance(event, NormalizedHandoffEvent):
            raise wrong_type(f"{attribute.name}[{position}]", "a NormalizedHandoffEvent", event)


_check_flag = check_instance(bool, "a bool")


@attrs.frozen
class NormalizedStoredTiming:
    """How many KV blocks the destination stored before, at and after its activation.

    `NormalizedStoredTiming(before_activation=0, on_activation=3)`; counts default to 0 and
    are checked by `NormalizedHandoffConformance.validate()` (contract §6).
    """

    before_activation: int = attrs.field(default=0, converter=to_count, validator=check_count)
    on_activation: int = attrs.field(default=0, converter=to_count, validator=check_count)
    repeated_activation_hashes_after_activation: int = attrs.field(
        default=0, converter=to_count, validator=check_count
    )


def _names(events: Sequence[NormalizedHandoffEvent]) -> str:
    return "[" + ", ".join(event.value for event in events) + "]"


@attrs.frozen
class NormalizedHandoffConformance:
    """What one end-to-end handoff run observed, reduced to what the fixture pins down.

    `lifecycle` may be given as any sequence of events; it is stored as a tuple.
    """

    engine_type: EngineType = attrs.field(validator=check_instance(EngineType, "an EngineType"))
    order: HandoffOrder = attrs.field(validator=check_instance(HandoffOrder, "a HandoffOrder"))
    lifecycle: tuple[NormalizedHandoffEvent, ...] = attrs.field(
        converter=_to_lifecycle, validator=_check_lifecycle
    )
    source_output_tokens: int = attrs.field(converter=to_count, validator=check_count)
    destination_output_tokens: int = attrs.field(converter=to_count, validator=check_count)
    completed_requests: int = attrs.field(converter=to_count, validator=check_count)
    destination_stored: NormalizedStoredTiming = attrs.field(
        validator=check_instance(NormalizedStoredTiming, "a NormalizedStoredTiming")
    )
    source_drained: bool = attrs.field(validator=_check_flag)
    destination_drained: bool = attrs.field(validator=_check_flag)
    driver_drained: bool = attrs.field(validator=_check_flag)

    def validate(self) -> None:
        """Raise `ConformanceError` (a `HandoffError`) for the first check the run fails.

        The checks run in this order: order, lifecycle, output/completion counts, destination KV
        visibility, drain.
        """
        self._check_order()
        self._check_lifecycle()
        self._check_counts()
        self._check_kv_visibility()
        self._check_drained()

    def _check_order(self) -> None:
        expected = HandoffOrder.for_engine(self.engine_type)
        if self.order is not expected:
            raise ConformanceError(
                f"normalized handoff order mismatch: expected {expected.name} for "
                f"{self.engine_type.value}, got {self.order.name}"
            )

    def _check_lifecycle(self) -> None:
        expected = expected_normalized_handoff(self.order)
        if self.lifecycle != expected:
            raise ConformanceError(
                f"normalized handoff lifecycle mismatch: expected {_names(expected)} for "
                f"{self.order.name}, got {_names(self.lifecycle)}"
            )

    def _check_counts(self) -> None:
        counts = (self.source_output_tokens, self.destination_output_tokens)
        if counts != (1, 2) or self.completed_requests != 1:
            raise ConformanceError(
                "normalized handoff output/completion counts do not match the fixture: "
                "expected source_output_tokens=1, destination_output_tokens=2, "
                f"completed_requests=1, got source_output_tokens={self.source_output_tokens}, "
                f"destination_output_tokens={self.destination_output_tokens}, "
                f"completed_requests={self.completed_requests}"
            )

    def _check_kv_visibility(self) -> None:
        stored = self.destination_stored
        if (
            stored.before_activation != 0
            or stored.on_activation == 0
            or stored.repeated_activation_hashes_after_activation != 0
        ):
            raise ConformanceError(
                "normalized handoff destination KV visibility is invalid: expected "
                "before_activation=0, on_activation>0, "
                "repeated_activation_hashes_after_activation=0, got "
                f"before_activation={stored.before_activation}, "
                f"on_activation={stored.on_activation}, "
                "repeated_activation_hashes_after_activation="
                f"{stored.repeated_activation_hashes_after_activation}"
            )

    def _check_drained(self) -> None:
        flags = {
            "source_drained": self.source_drained,
            "destination_drained": self.destination_drained,
            "driver_drained": self.driver_drained,
        }
        if not all(flags.values()):
            undrained = ", ".join(name for name, drained in flags.items() if not drained)
            raise ConformanceError(
                "normalized handoff did not drain: expected source, destination and driver "
                f"drained, got not drained: {undrained}"
            )


# Exported from `handoff`, which loads this module on first use: reprs and pickles name the package.
exported(NormalizedStoredTiming, NormalizedHandoffConformance)
