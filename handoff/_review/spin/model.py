"""The chart alone in Promela: the review's coordinator under the review's environment.

The coordinator part is the journal's rules (`handoff._coordinator.binding`) and one step
that reads the chart's cells, which end the model as data read off a compiled chart
(`handoff._compile.table`): every line before them is the same for charts of one order (and
most actions per step), so one compiled verifier serves them all.  The environment part is the
review's own (`handoff._review.environment`): every call it may make, numbered, with its
payload classified by running the adapter's payload checks.  The property part is the mirror
of the review's properties in `handoff._review.spin.properties`.  Nothing in the model is
written per chart, so any chart, mutants included, exports its own.  The fixed text of each
section is a `.pml` file shipped with the package (`handoff._review.spin.text`); the functions
here fill in what varies.
"""

from __future__ import annotations

from handoff._chart.vocabulary import ChartEvent
from handoff._compile.table import CompiledChart
from handoff._coordinator.binding import FACT_EVENTS
from handoff._review.environment import MAX_ACTIONS, Call, CallKind, environment
from handoff._review.spin import properties as mirror
from handoff._review.spin.coordinator import (
    chart_cells,
    chart_step,
    coordinator,
    journal_rules,
    most_per_call,
)
from handoff._review.spin.effects import effects, effects_variables
from handoff._review.spin.text import filled, fixed
from handoff._review.spin.vocabulary import (
    ACTIONS,
    COMPLETIONS,
    FACTS,
    LIFECYCLE_EVENTS,
    OUTCOME_KINDS,
    calls,
    event_name,
    fact_kind,
    numbered,
    payloads,
)

__all__ = ["model"]

LIFECYCLE_SIZE = 12
"""Lifecycle slots; a run recording more is cut off like one issuing too many actions."""


def model(chart: CompiledChart, *, fallback_transfer_delay_ms: float = 0.0) -> str:
    """The Promela model of a coordinator driven by `chart` under the review's environment."""
    sections = [
        _header(chart),
        _names(),
        _payload_rules(chart, fallback_transfer_delay_ms),
        _variables(chart),
        journal_rules(),
        chart_step(),
        coordinator(),
        mirror.monitors(chart.order, fallback_transfer_delay_ms),
        effects_variables(),
        effects(),
        _calls(),
        mirror.liveness_declarations(),
        mirror.make_call(),
        _environment(),
        mirror.liveness(),
        chart_cells(chart),  # last: the lines above are the same for every chart
    ]
    return "\n\n".join(sections) + "\n"


def _header(chart: CompiledChart) -> str:
    return filled("model_header", order=chart.order.value, states=len(chart.states))


def _names() -> str:
    """The model's names (not the chart's states: the cells name them, so that every other
    line is the same for every chart)."""
    names = [f"#define {event_name(event)} {event.index}" for event in ChartEvent]
    names += numbered([action.__name__ for action in ACTIONS], "A_")
    names += numbered([kind.value for kind in OUTCOME_KINDS], "O_")
    names += numbered([fact.__name__ for fact in FACTS], "F_")
    names += numbered([event.value for event in LIFECYCLE_EVENTS], "L_")
    names += numbered([completion.name for completion in COMPLETIONS], "C_")
    return filled("names", names=names)


def _payload_rules(chart: CompiledChart, fallback: float) -> str:
    found = payloads(environment(), fallback)
    timings = " || ".join(
        f"t == {number}" for number, valid in enumerate(found.timing_valid, 1) if valid
    )
    pairs = " || ".join(f"(t == {t} && n == {n})" for t, n in sorted(found.delay))
    return filled(
        "payload_rules",
        timing_notes=[f"timing {n}: {timing}" for n, timing in enumerate(found.timings, 1)],
        token_notes=[f"tokens {n}: {count}" for n, count in enumerate(found.tokens, 1)],
        fallback=repr(fallback),
        timings=timings or "false",
        pairs=pairs or "false",
        delays=[
            f":: D_T == {t} && D_N == {n} -> delay = {d}   /* {found.delays[d - 1]!r} ms */"
            for (t, n), d in sorted(found.delay.items())
        ],
    )


def _variables(chart: CompiledChart) -> str:
    call = "byte c = 0;                  /* the call being made (always 0 between calls) */"
    return f"{_sizes(chart)}\n\n{configuration()}\n{call}\n\n{fixed('scratch')}"


def _sizes(chart: CompiledChart) -> str:
    """The bounds of one coordinator's journal and lifecycle, and of one call."""
    most = max(len(step.effects) for step in chart.steps())
    return filled(
        "sizes",
        max_actions=MAX_ACTIONS,
        max_id=MAX_ACTIONS,
        log_size=MAX_ACTIONS + 1 + most,
        lifecycle_size=LIFECYCLE_SIZE,
        most_per_call=most_per_call(chart),
    )


def configuration() -> str:
    """One coordinator's variables, as the coordinator part (`handoff._review.spin.coordinator`)
    names them: the system model declares one set per handoff and names these after the handoff
    being called (`handoff._review.spin.system`)."""
    return fixed("configuration")


def _calls() -> str:
    env = environment()
    numbering = calls(env)
    found = payloads(env, 0.0)
    facts = []
    for number, call in enumerate(numbering.all[1 : numbering.first_outcome], start=1):
        assert call.fact is not None
        fields = ["c_kind = K_FACT", f"c_fact = {fact_kind(call)}"]
        fields.append(f"c_event = {event_name(_fact_event(call))}")
        timing = getattr(call.fact, "transfer_timing", None)
        if timing is not None:
            fields.append(f"c_timing = {found.timings.index(timing) + 1}")
        count = getattr(call.fact, "transferable_prompt_tokens", None)
        if count is not None:
            fields.append(f"c_tokens = {found.tokens.index(count) + 1}")
        fields += [f"c_usable = {int(call.usable)}", f"c_terminal = {int(call.terminal)}"]
        fields.append(f"c_foreign = {int(call.fact.handoff_id != env.handoff_id)}")
        facts.append(f":: c == {number} -> {'; '.join(fields)}   /* {call} */")
    return filled(
        "calls",
        ncalls=len(numbering.all),
        first_outcome=numbering.first_outcome,
        outcomes_per_id=len(numbering.outcomes),
        facts=facts,
        kinds=[
            f":: (c - FIRST_OUTCOME) % OUTCOMES_PER_ID == {k} -> c_out = O_{o.kind.value}"
            for k, o in enumerate(numbering.outcomes)
        ],
    )


def _fact_event(call: Call) -> ChartEvent:
    return FACT_EVENTS[type(call.fact)]


def _environment() -> str:
    """Any call from any configuration; in a liveness mode (`mirror.liveness_declarations`),
    the calls that mode makes."""
    numbering = calls(environment())
    options = []
    for number, call in enumerate(numbering.all):
        guard = ""
        if call.kind is CallKind.OUTCOME:
            assert call.action_id is not None
            guard = f"nlog >= {call.action_id.value} -> "
        options.append(f":: {guard}c = {number}   /* {call} */")
    terminal = [
        f":: c = {number}   /* {call} */"
        for number, call in enumerate(numbering.all)
        if call.terminal
    ]
    return filled("environment", calls=options, terminal=terminal)
