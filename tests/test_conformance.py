"""Normalized conformance summaries: expected lifecycles, field checks, and `validate()` order."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from support import BAD_COUNTS

import handoff
from handoff import (
    ConformanceError,
    EngineType,
    HandoffError,
    HandoffOrder,
    NormalizedHandoffConformance,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    expected_normalized_handoff,
)

E = NormalizedHandoffEvent

SOURCE_FIRST_LIFECYCLE = (
    E.SOURCE_HELD,
    E.DESTINATION_ACCEPTED,
    E.DESTINATION_RESERVED,
    E.DESTINATION_ACTIVATED,
    E.SOURCE_RELEASED,
    E.COMPLETED,
)
DESTINATION_FIRST_LIFECYCLE = (
    E.DESTINATION_ACCEPTED,
    E.DESTINATION_RESERVED,
    E.SOURCE_HELD,
    E.DESTINATION_ACTIVATED,
    E.SOURCE_RELEASED,
    E.COMPLETED,
)


def conforming(
    engine: EngineType = EngineType.VLLM, /, **changes: Any
) -> NormalizedHandoffConformance:
    """A summary that passes every check, with `changes` applied on top."""
    order = HandoffOrder.for_engine(engine)
    fields: dict[str, Any] = {
        "engine_type": engine,
        "order": order,
        "lifecycle": list(expected_normalized_handoff(order)),
        "source_output_tokens": 1,
        "destination_output_tokens": 2,
        "completed_requests": 1,
        "destination_stored": NormalizedStoredTiming(on_activation=4),
        "source_drained": True,
        "destination_drained": True,
        "driver_drained": True,
    }
    return NormalizedHandoffConformance(**(fields | changes))


def test_event_values() -> None:
    assert [event.value for event in NormalizedHandoffEvent] == [
        "SourceHeld",
        "DestinationAccepted",
        "DestinationReserved",
        "DestinationActivated",
        "SourceReleased",
        "Completed",
    ]


def _imports(module: str) -> set[str]:
    parts = module.removeprefix("handoff.").split(".")
    path = Path(handoff.__file__).parent.joinpath(*parts).with_suffix(".py")
    tree = ast.parse(path.read_text())
    found = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return {name for name in found if name and name.startswith("handoff.")}


def test_the_coordinator_records_events_without_the_fixture_check() -> None:
    # The milestones belong to the runtime; the conformance summary only to fixture runs.
    seen: set[str] = set()
    todo = ["handoff._coordinator.core"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(_imports(module))
    assert "handoff._values.lifecycle" in seen
    assert "handoff._values.conformance" not in seen


def test_a_summary_reads_well() -> None:
    made = conforming(EngineType.SGLANG, destination_stored=NormalizedStoredTiming(1, 2, 3))
    text = repr(made)
    assert text.startswith(
        "NormalizedHandoffConformance(engine_type=EngineType.SGLANG, "
        "order=HandoffOrder.DESTINATION_FIRST, "
        "lifecycle=(NormalizedHandoffEvent.DESTINATION_ACCEPTED, "
    )
    assert (
        "destination_stored=NormalizedStoredTiming(before_activation=1, on_activation=2, " in text
    )
    assert text.endswith("driver_drained=True)")


def test_a_huge_count_is_refused_by_size() -> None:
    with pytest.raises(
        ValueError, match=r"^completed_requests must be .*, got an int of 16610 bits$"
    ):
        conforming(completed_requests=10**5000)


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [("source_drained", 1, "1 (int)"), ("driver_drained", None, "None (NoneType)")],
)
def test_a_flag_must_be_a_bool(field: str, value: object, shown: str) -> None:
    with pytest.raises(TypeError, match=rf"^{field} must be a bool, got {re.escape(shown)}$"):
        conforming(**{field: value})


class TestExpectedLifecycle:
    def test_source_first(self) -> None:
        assert expected_normalized_handoff(HandoffOrder.SOURCE_FIRST) == SOURCE_FIRST_LIFECYCLE

    def test_destination_first(self) -> None:
        assert (
            expected_normalized_handoff(HandoffOrder.DESTINATION_FIRST)
            == DESTINATION_FIRST_LIFECYCLE
        )

    @pytest.mark.parametrize("order", ["SourceFirst", EngineType.VLLM, None])
    def test_refuses_non_order(self, order: object) -> None:
        with pytest.raises(TypeError, match=r"^order must be a HandoffOrder"):
            expected_normalized_handoff(order)  # type: ignore[arg-type]


class TestStoredTiming:
    def test_counts_default_to_zero(self) -> None:
        assert attrs.astuple(NormalizedStoredTiming()) == (0, 0, 0)

    @pytest.mark.parametrize(
        "field",
        ["before_activation", "on_activation", "repeated_activation_hashes_after_activation"],
    )
    @pytest.mark.parametrize(
        ("value", "error"), [(True, TypeError), (1.0, TypeError), (-1, ValueError)]
    )
    def test_counts_checked(self, field: str, value: object, error: type[Exception]) -> None:
        with pytest.raises(error, match=f"^{field} must be an int"):
            NormalizedStoredTiming(**{field: value})  # type: ignore[arg-type]

    def test_frozen(self) -> None:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            NormalizedStoredTiming().on_activation = 1  # type: ignore[misc]


class TestConstruction:
    def test_field_order(self) -> None:
        assert [field.name for field in attrs.fields(NormalizedHandoffConformance)] == [
            "engine_type",
            "order",
            "lifecycle",
            "source_output_tokens",
            "destination_output_tokens",
            "completed_requests",
            "destination_stored",
            "source_drained",
            "destination_drained",
            "driver_drained",
        ]

    def test_lifecycle_list_stored_as_tuple(self) -> None:
        made = conforming(lifecycle=list(SOURCE_FIRST_LIFECYCLE))
        assert made.lifecycle == SOURCE_FIRST_LIFECYCLE
        assert made == conforming(lifecycle=SOURCE_FIRST_LIFECYCLE)
        assert hash(made) == hash(conforming(lifecycle=SOURCE_FIRST_LIFECYCLE))

    @pytest.mark.parametrize("lifecycle", [None, "SourceHeld", E.SOURCE_HELD, 3])
    def test_lifecycle_must_be_a_sequence(self, lifecycle: object) -> None:
        with pytest.raises(TypeError, match=r"^lifecycle must be a sequence of"):
            conforming(lifecycle=lifecycle)

    def test_lifecycle_members_must_be_events(self) -> None:
        with pytest.raises(TypeError, match=r"^lifecycle\[1\] must be a NormalizedHandoffEvent"):
            conforming(lifecycle=[E.SOURCE_HELD, "DestinationAccepted"])

    @pytest.mark.parametrize(
        ("field", "value"),
        [("engine_type", "vllm"), ("order", "SourceFirst"), ("destination_stored", None)],
    )
    def test_typed_fields_checked(self, field: str, value: object) -> None:
        with pytest.raises(TypeError, match=f"^{field} must be"):
            conforming(**{field: value})

    @pytest.mark.parametrize(
        "field", ["source_output_tokens", "destination_output_tokens", "completed_requests"]
    )
    @pytest.mark.parametrize(
        ("value", "error"),
        BAD_COUNTS,
    )
    def test_counts_checked(self, field: str, value: object, error: type[Exception]) -> None:
        with pytest.raises(error, match=f"^{field} must be an int"):
            conforming(**{field: value})

    @pytest.mark.parametrize("field", ["source_drained", "destination_drained", "driver_drained"])
    @pytest.mark.parametrize("value", [1, 0, None, "yes"])
    def test_drained_flags_must_be_bools(self, field: str, value: object) -> None:
        with pytest.raises(TypeError, match=f"^{field} must be a bool"):
            conforming(**{field: value})

    def test_frozen(self) -> None:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            conforming().source_drained = False  # type: ignore[misc]


@pytest.mark.parametrize("engine", list(EngineType))
def test_conforming_summary_validates(engine: EngineType) -> None:
    conforming(engine).validate()


ORDER = "normalized handoff order mismatch"
LIFECYCLE = "normalized handoff lifecycle mismatch"
COUNTS = "normalized handoff output/completion counts do not match the fixture"
VISIBILITY = "normalized handoff destination KV visibility is invalid"
DRAIN = "normalized handoff did not drain"


def failure(made: NormalizedHandoffConformance) -> str:
    with pytest.raises(ConformanceError) as caught:
        made.validate()
    assert isinstance(caught.value, HandoffError)
    return str(caught.value)


class TestEachCheck:
    def test_order_mismatch(self) -> None:
        # The lifecycle fits the wrong order, so only the order check can object.
        made = conforming(
            order=HandoffOrder.DESTINATION_FIRST, lifecycle=DESTINATION_FIRST_LIFECYCLE
        )
        assert failure(made) == f"{ORDER}: expected SOURCE_FIRST for vllm, got DESTINATION_FIRST"

    def test_order_mismatch_for_sglang(self) -> None:
        made = conforming(
            EngineType.SGLANG, order=HandoffOrder.SOURCE_FIRST, lifecycle=SOURCE_FIRST_LIFECYCLE
        )
        assert failure(made) == f"{ORDER}: expected DESTINATION_FIRST for sglang, got SOURCE_FIRST"

    @pytest.mark.parametrize(
        "lifecycle",
        [
            [],
            list(SOURCE_FIRST_LIFECYCLE[:-1]),
            [*SOURCE_FIRST_LIFECYCLE, E.COMPLETED],
            list(DESTINATION_FIRST_LIFECYCLE),
            list(reversed(SOURCE_FIRST_LIFECYCLE)),
        ],
        ids=["empty", "short", "long", "other-order", "reversed"],
    )
    def test_lifecycle_mismatch(self, lifecycle: list[NormalizedHandoffEvent]) -> None:
        message = failure(conforming(lifecycle=lifecycle))
        assert message.startswith(f"{LIFECYCLE}: expected [SourceHeld, DestinationAccepted, ")
        assert message.endswith(f"got [{', '.join(event.value for event in lifecycle)}]")

    def test_lifecycle_compared_element_by_element(self) -> None:
        lifecycle = list(SOURCE_FIRST_LIFECYCLE)
        lifecycle[2], lifecycle[3] = lifecycle[3], lifecycle[2]
        assert failure(conforming(lifecycle=lifecycle)).startswith(LIFECYCLE)

    @pytest.mark.parametrize(
        "changes",
        [
            {"source_output_tokens": 0},
            {"source_output_tokens": 2},
            {"destination_output_tokens": 1},
            {"destination_output_tokens": 3},
            {"completed_requests": 0},
            {"completed_requests": 2},
        ],
    )
    def test_counts_mismatch(self, changes: dict[str, int]) -> None:
        message = failure(conforming(**changes))
        assert message.startswith(
            f"{COUNTS}: expected source_output_tokens=1, destination_output_tokens=2, "
            "completed_requests=1, got "
        )
        [(field, value)] = changes.items()
        assert f"{field}={value}" in message.split(", got ")[1]

    @pytest.mark.parametrize(
        "stored",
        [
            NormalizedStoredTiming(before_activation=1, on_activation=4),
            NormalizedStoredTiming(on_activation=0),
            NormalizedStoredTiming(on_activation=4, repeated_activation_hashes_after_activation=1),
        ],
        ids=["stored-before", "nothing-on-activation", "repeated-after"],
    )
    def test_visibility_invalid(self, stored: NormalizedStoredTiming) -> None:
        message = failure(conforming(destination_stored=stored))
        assert message.startswith(f"{VISIBILITY}: expected before_activation=0, on_activation>0")
        got = message.split(", got ")[1]
        assert f"before_activation={stored.before_activation}" in got
        assert f"on_activation={stored.on_activation}" in got

    @pytest.mark.parametrize("field", ["source_drained", "destination_drained", "driver_drained"])
    def test_not_drained(self, field: str) -> None:
        message = failure(conforming(**{field: False}))
        assert message.startswith(DRAIN)
        assert message.endswith(f"not drained: {field}")


# One way to break each check, in the order `validate()` runs them.
BREAKERS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    (ORDER, lambda fields: fields.update(order=HandoffOrder.DESTINATION_FIRST)),
    (LIFECYCLE, lambda fields: fields.update(lifecycle=fields["lifecycle"][:-1])),
    (COUNTS, lambda fields: fields.update(completed_requests=0)),
    (VISIBILITY, lambda fields: fields.update(destination_stored=NormalizedStoredTiming())),
    (DRAIN, lambda fields: fields.update(driver_drained=False)),
]


def broken(*indices: int) -> NormalizedHandoffConformance:
    fields = attrs.asdict(conforming(), recurse=False)
    for index in indices:
        BREAKERS[index][1](fields)
    return NormalizedHandoffConformance(**fields)


@pytest.mark.parametrize("index", range(len(BREAKERS)), ids=[phrase for phrase, _ in BREAKERS])
def test_each_breaker_alone_trips_its_own_check(index: int) -> None:
    assert failure(broken(index)).startswith(BREAKERS[index][0])


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(range(len(BREAKERS)), 2)))
def test_earlier_check_wins(first: int, second: int) -> None:
    assert failure(broken(first, second)).startswith(BREAKERS[first][0])


def test_everything_broken_reports_the_order() -> None:
    assert failure(broken(*range(len(BREAKERS)))).startswith(ORDER)
