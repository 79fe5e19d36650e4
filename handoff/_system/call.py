"""A call to the coordinator: the one shape every driver, trace and review shares.

A `Call` is `start()`, `on_fact(fact)` or `on_action_outcome(action_id, outcome)`, as a value:
it can be sent to any coordinator, described in words, and encoded in a trace (see
`handoff._runs.trace`).  Drivers build calls with `Call.start()`, `Call.of_fact(...)` and
`Call.of_outcome(...)`.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any, Protocol

import attrs

from handoff._chart.vocabulary import ChartEvent
from handoff._coordinator.binding import FACT_EVENTS
from handoff._values.messages import HandoffFact, IssuedHandoffAction
from handoff._values.values import (
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
)

__all__ = ["HANDOFF_ID", "TERMINAL_FACTS", "Call", "CallKind", "Coordinator"]

HANDOFF_ID = HandoffId(uuid.UUID(int=1))
"""The handoff the demo, the diagrams and the review drive: easy to read in any output."""

TERMINAL_FACTS: tuple[type[HandoffFact], ...] = tuple(
    fact for fact, event in FACT_EVENTS.items() if event is ChartEvent.TERMINATED
)
"""The facts that end a handoff early (and reopen the cleanup of a successful one): those
making the chart's `TERMINATED`, in `FACTS`' order (`Failed`, `TimedOut`, `Canceled`)."""


class Coordinator(Protocol):
    """What a call needs of a coordinator: the real one, or a test's stand-in."""

    @property
    def is_complete(self) -> bool: ...

    @property
    def completion(self) -> HandoffCompletion | None: ...

    def start(self) -> list[IssuedHandoffAction]: ...

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]: ...

    def on_action_outcome(
        self, action_id: HandoffActionId, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]: ...


class CallKind(enum.Enum):
    """Which coordinator method a call invokes; the value is the trace's spelling."""

    START = "start"
    FACT = "fact"
    OUTCOME = "outcome"

    __hash__ = object.__hash__  # a singleton: identity is cheaper than Enum's hash of its name


def _check_arguments(call: Call, attribute: attrs.Attribute[Any], value: object) -> None:
    # A call carries exactly the arguments its method takes, so `send` never guesses.
    given = (call.fact is not None, call.action_id is not None, value is not None)
    wanted, problem = _ARGUMENTS[call.kind._value_]  # a str hashes in C, an Enum member does not
    if given != wanted:
        raise ValueError(problem)


_ARGUMENTS = {
    "start": ((False, False, False), "a start call takes no arguments"),
    "fact": ((True, False, False), "a fact call takes a fact and nothing else"),
    "outcome": (
        (False, True, True),
        "an outcome call takes an action id and an outcome, and nothing else",
    ),
}


@attrs.frozen(cache_hash=True)
class Call:
    """One call to a coordinator.

    `label` and `usable` are what a driver knows about the call, not part of it: they do not
    take part in equality, and a trace does not keep them.  Without a label, the words are
    derived from the call.
    """

    kind: CallKind
    fact: HandoffFact | None = None
    action_id: HandoffActionId | None = None
    outcome: HandoffActionOutcome | None = attrs.field(default=None, validator=_check_arguments)
    _label: str = attrs.field(default="", eq=False, kw_only=True)
    """Words for the call, e.g. `on_fact(SourceHeld(valid timing))`; derived when empty."""
    usable: bool = attrs.field(default=True, eq=False, kw_only=True)
    """Whether a cooperating runtime would make this call with this payload."""

    @classmethod
    def start(cls) -> Call:
        """`start()`."""
        return _START

    @classmethod
    def of_fact(cls, fact: HandoffFact, label: str = "", *, usable: bool = True) -> Call:
        """`on_fact(fact)`."""
        return cls(CallKind.FACT, fact, label=label, usable=usable)

    @classmethod
    def of_outcome(cls, action_id: HandoffActionId, outcome: HandoffActionOutcome) -> Call:
        """`on_action_outcome(action_id, outcome)`."""
        return cls(CallKind.OUTCOME, None, action_id, outcome)

    @property
    def terminal(self) -> bool:
        """A terminal fact (`TERMINAL_FACTS`) a cooperating runtime would report."""
        return self.usable and isinstance(self.fact, TERMINAL_FACTS)

    def send(self, coordinator: Coordinator) -> list[IssuedHandoffAction]:
        """Make the call; returns what the coordinator issued (or raises what it raised)."""
        if self.fact is not None:
            return coordinator.on_fact(self.fact)
        if self.outcome is not None:
            assert self.action_id is not None
            return coordinator.on_action_outcome(self.action_id, self.outcome)
        return coordinator.start()

    @property
    def label(self) -> str:
        """The call in words (see `describe`)."""
        return self.describe()

    def describe(self) -> str:
        """The call in words: `start()`, `on_fact(Canceled)`, `on_action_outcome(3, Applied)`."""
        if self._label:
            return self._label
        if self.fact is not None:
            return f"on_fact({_fact_words(self.fact)})"
        if self.outcome is not None:
            return f"on_action_outcome({self.action_id}, {self.outcome})"
        return "start()"

    def __str__(self) -> str:
        return self.describe()


def _fact_words(fact: HandoffFact) -> str:
    name = type(fact).__name__
    if isinstance(fact, HandoffFact.DestinationReserved):
        return f"{name}({fact.transferable_prompt_tokens})"
    return name


_START = Call(CallKind.START)
