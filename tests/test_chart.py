"""The charts themselves: their shape, and the checks that refuse a malformed chart."""

from __future__ import annotations

import types
from collections.abc import Callable

import pytest
from statemachine import Event, State
from statemachine.exceptions import InvalidDefinition
from support import DF, SF, SUCCESS_PATH

from handoff import HandoffOrder
from handoff._chart.base import HandoffChart, refused
from handoff._chart.shipped import CHARTS, DestinationFirstChart, SourceFirstChart
from handoff._chart.vocabulary import ChartEvent, Effect, EventKind, Refusal
from handoff._compile.table import compile_chart, compiled

CLEANUP = ("cancelling_source", "cancelling_destination", "cancelling_both", "canceled")
Link = Callable[[State, State], object]
TAIL = ("transfer_starting", "transferring", "activating", "releasing", "succeeded", *CLEANUP)


def test_each_order_has_its_chart() -> None:
    assert CHARTS[SF] is SourceFirstChart
    assert CHARTS[DF] is DestinationFirstChart


@pytest.mark.parametrize("order", [SF, DF])
def test_the_states_are_the_success_path_then_cleanup(order: HandoffOrder) -> None:
    assert compiled(order).states == (*SUCCESS_PATH[order], *CLEANUP)


def test_the_heads_swap_and_the_tails_are_identical() -> None:
    source_first, destination_first = compiled(SF), compiled(DF)
    assert source_first.states[1:5] == destination_first.states[3:5] + destination_first.states[1:3]
    for state in TAIL:
        for event in ChartEvent:
            a = source_first.step(source_first.index(state), event)
            b = destination_first.step(destination_first.index(state), event)
            assert (source_first.states[a.target], a.refusal, a.ignored, a.checks, a.effects) == (
                destination_first.states[b.target],
                b.refusal,
                b.ignored,
                b.checks,
                b.effects,
            ), (state, event)


@pytest.mark.parametrize("order", [SF, DF])
def test_every_pair_is_handled_at_most_once_and_defaults_are_not_built(order: HandoffOrder) -> None:
    # Defining a chart builds only the transitions it wrote; the table fills in the defaults.
    chart = CHARTS[order]
    for state in chart.states:
        events = [event.id for transition in state.transitions for event in transition.events]
        assert len(events) == len(set(events)), state.id
    idle = next(state for state in chart.states if state.initial)
    assert "unknown_action" not in {e.id for t in idle.transitions for e in t.events}
    table = compiled(order)
    assert table.step(0, ChartEvent.UNKNOWN_ACTION).refusal is Refusal.UNKNOWN_ACTION


@pytest.mark.parametrize("order", [SF, DF])
def test_complete_states_drop_everything_but_a_reopening_fact(order: HandoffOrder) -> None:
    table = compiled(order)
    assert {table.states[state] for state in table.complete} == {"succeeded", "canceled"}
    for state in table.complete:
        for event in ChartEvent:
            step = table.step(state, event)
            reopens = table.states[state] == "succeeded" and event is ChartEvent.TERMINATED
            assert step.ignored is not reopens, (table.states[state], event)


@pytest.mark.parametrize("order", [SF, DF])
def test_journal_errors_are_refused_while_live(order: HandoffOrder) -> None:
    table = compiled(order)
    for state in range(len(table.states)):
        for event in ChartEvent:
            if event.kind is EventKind.JOURNAL_ERROR and state not in table.complete:
                assert table.step(state, event).refusal is not None


@pytest.mark.parametrize("order", [SF, DF])
def test_cleanup_cancels_exactly_the_owners_engaged(order: HandoffOrder) -> None:
    table = compiled(order)
    path = SUCCESS_PATH[order]
    for position, state in enumerate(path[:-1]):
        step = table.step(table.index(state), ChartEvent.TERMINATED)
        engaged = path[1 : position + 1]
        expected = [Effect.CANCEL_SOURCE] * ("prefill_submitting" in engaged) + [
            Effect.CANCEL_DESTINATION
        ] * ("destination_reserving" in engaged)
        if not expected:
            expected = [Effect.COMPLETE_CANCELED]
        assert list(step.effects) == expected, state


def _two_states(
    *, order: HandoffOrder | None = SF, initial: bool = True, exit: str | None = None, **links: Link
) -> type[HandoffChart]:
    """Define a chart of `idle` and `done` (entering done completes with success), with a
    transition a link: `links[name](idle, done)` is what the class body binds to `name`."""

    def body(namespace: dict[str, object]) -> None:
        if order is not None:
            namespace["order"] = order
        idle = namespace["idle"] = State(initial=initial)
        done = namespace["done"] = State(enter="complete_success", exit=exit)
        for name, link in links.items():
            namespace[name] = link(idle, done)

    return types.new_class("Small", (HandoffChart,), {}, body)


def _to(idle: State, done: State) -> object:
    return idle.to(done)


@pytest.mark.parametrize(
    ("refusal", "define"),
    [
        ("'teleport' is not a handoff chart event", lambda: _two_states(teleport=_to)),
        (
            r"'launch_missiles' .* is not a handoff chart word",
            lambda: _two_states(start=lambda idle, done: idle.to(done, on="launch_missiles")),
        ),
        # callbacks the table would not read
        (
            "'done' has exit or invoke callbacks",
            lambda: _two_states(exit="release_source", start=_to),
        ),
        (
            r"\['release_source'\] on transition start",
            lambda: _two_states(start=lambda idle, done: idle.to(done, after="release_source")),
        ),
        (
            "state 'idle' handles 'start' twice",
            lambda: _two_states(
                start=lambda idle, done: idle.to(done) | refused(Refusal.UNKNOWN_ACTION, idle)
            ),
        ),
        ("must declare its `order`", lambda: _two_states(order=None, start=_to)),
        (
            "exactly one initial state, this one has none",
            lambda: _two_states(initial=False, start=_to),
        ),
        # The compiled table never reads guards: accepting one would make it disagree with the
        # interpreted chart, which would honour it.
        *(
            (
                r"cond/unless \['transfer_timing_is_valid'\]",
                lambda guard=guard: _two_states(
                    start=lambda idle, done: idle.to(done, **{guard: "transfer_timing_is_valid"})
                ),
            )
            for guard in ("cond", "unless")
        ),
        (
            "'start' is a python-statemachine Event; write",
            lambda: _two_states(start=lambda idle, done: Event(idle.to(done))),
        ),
    ],
)
def test_a_malformed_chart_is_refused_at_definition(
    refusal: str, define: Callable[[], object]
) -> None:
    with pytest.raises(InvalidDefinition, match=refusal):
        define()


def test_a_small_chart_gets_the_defaults_of_its_event_kinds() -> None:
    tiny = _two_states(start=lambda idle, done: idle.to(done, on="submit_prefill"))
    table = compile_chart(tiny)
    idle, done = table.index("idle"), table.index("done")
    assert table.step(idle, ChartEvent.START).effects == (
        Effect.SUBMIT_PREFILL,
        Effect.COMPLETE_SUCCESS,
    )
    assert table.step(idle, ChartEvent.SOURCE_HELD).ignored
    ack = table.step(idle, ChartEvent.PREFILL_SUBMITTED)
    assert (ack.target, ack.ignored, ack.effects, ack.refusal) == (idle, False, (), None)
    assert table.step(idle, ChartEvent.UNKNOWN_ACTION).refusal is Refusal.UNKNOWN_ACTION
    assert table.step(done, ChartEvent.UNKNOWN_ACTION).ignored
    assert table.step(done, ChartEvent.PREFILL_SUBMITTED).ignored
    assert table.step(idle, ChartEvent.DUPLICATE_OUTCOME).ignored


@pytest.mark.parametrize("order", [SF, DF])
def test_every_step_has_one_kind(order: HandoffOrder) -> None:
    table = compiled(order)
    kinds = {step.kind for step in table.steps()}
    assert kinds == {"refused", "ignored", "moves", "stays"}
    start = table.step(0, ChartEvent.START)
    assert start.kind == "moves"
    assert table.step(0, ChartEvent.SOURCE_HELD).kind == "refused"
    assert table.step(0, ChartEvent.DUPLICATE_OUTCOME).kind == "ignored"
    assert table.step(0, ChartEvent.PREFILL_SUBMITTED).kind == "stays"


def test_a_final_state_that_a_rule_leaves_is_refused_saying_what_to_write() -> None:
    with pytest.raises(InvalidDefinition) as refused_at:

        class Reopening(SourceFirstChart):
            succeeded = State("succeeded", final=True, enter="complete_success")

    assert str(refused_at.value) == (
        "Reopening: 'succeeded' is final=True, yet rule 'terminated' leaves it for "
        "'cancelling_destination': a final state takes no event; drop final=True (entering "
        "'succeeded' completes the handoff anyway, and a complete state drops every event it "
        "has no rule for), or drop that rule"
    )


def test_a_final_state_that_does_not_complete_is_refused() -> None:
    with pytest.raises(InvalidDefinition, match=r"'cancelling_both' is final=True but does not"):

        class Stuck(SourceFirstChart):
            cancelling_both = State("cancelling both", final=True)


@pytest.mark.parametrize(
    "callback",
    ["on_enter_canceled", "on_start", "before_start", "after_transition", "on_exit_state",
     "prepare_event", "cancel_source"],
)  # fmt: skip
def test_python_statemachine_callbacks_are_refused_at_definition(callback: str) -> None:
    # The compiled table never runs them; python-statemachine would, when interpreting.
    with pytest.raises(InvalidDefinition, match=f"'{callback}' is a python-statemachine callback"):
        types.new_class(
            "Noisy", (SourceFirstChart,), {}, lambda body: body.update({callback: print})
        )


def test_class_listeners_are_refused_at_definition() -> None:
    with pytest.raises(InvalidDefinition, match="'listeners' is a python-statemachine callback"):

        class Listening(SourceFirstChart):
            listeners = (object,)


def test_a_state_nothing_enters_is_accepted_for_the_review_to_name() -> None:
    # python-statemachine would refuse it ("unreachable states"); the review's Coverage names it.
    from handoff._review.explore import review_chart

    class Lonely(HandoffChart):
        order = SF
        idle = State(initial=True)
        done = State(enter="complete_success")
        lost = State()
        start = idle.to(done, on="submit_prefill")
        terminated = lost.to(done)

    coverage = review_chart(Lonely).verdict("Coverage")
    assert not coverage.holds
    assert coverage.notes[0].startswith("dead: state lost, lost --terminated--> done")
