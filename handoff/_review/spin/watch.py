"""The environment's watch in Promela: what it has seen of a run, and what the contract says next.

Written from contract §4 and the words of the review's properties, as a second opinion on the
review's `Watch` rather than a transcription of it; but the contract's ordering rules (which
fact needs which acknowledgement first, what an acknowledgement establishes, the order in
which `advance` makes the forward actions due) are read off the tables the review's judge
reads (`handoff._review.watch`: `FACTS`, `ACK_SIGNS`, `advance_rules`), so the two judges
cannot disagree on them, nor on which facts are ordered, terminal or news.  The watch reads
only the call the environment made, the actions it received and whether the call was
refused: never the coordinator's variables.  A call the SPEC takes updates it; a call the SPEC
drops or refuses leaves it as it was.  For a chart that follows the SPEC the watch variables
are functions of the coordinator's configuration but for two flags that, after a CANCELED
completion, still remember whether `Submitted` or `Scheduled` came before the failure (the
coordinator has cleared its journal by then): the watch adds 2 states to SourceFirst's 85 and
3 to DestinationFirst's 103.

`spec_answer` says how the SPEC answers a call (taken, dropped, or refused with which
refusal), `spec_take` and `spec_receive` follow the SPEC through a taken call and each
action received, `advance_due` and `cleanup_due` name the actions due in that call.  Their
fixed text is in the model's `.pml` sections (`handoff._review.spin.text`).
"""

from __future__ import annotations

from handoff._review.environment import environment
from handoff._review.payload import timing_refusal, transfer_delay, usable_delay
from handoff._review.spin.text import filled, fixed
from handoff._review.spin.vocabulary import action_name, payloads, refusal_name
from handoff._review.watch import (
    ACK_SIGNS,
    FACT_LIFECYCLE,
    FACTS,
    Ordered,
    Seen,
    Unordered,
    advance_rules,
    head,
)
from handoff._values.messages import HandoffFact
from handoff._values.values import HandoffOrder

__all__ = ["seen_name", "watch"]


def watch(order: HandoffOrder, fallback_transfer_delay_ms: float) -> str:
    """The watch's variables and the SPEC's rules over them, for a chart of `order`."""
    return "\n\n".join(
        [
            _variables(order),
            _payload_answers(fallback_transfer_delay_ms),
            filled("answer", ordered=_ordered()),
            filled("take", facts=_taken(), acknowledged=_acknowledged()),
            _advance(order),
            fixed("cleanup"),
        ]
    )


def seen_name(seen: Seen) -> str:
    """The Promela flags of `seen`: one `seen_<sign>` bit per sign, joined by `&&`."""
    return " && ".join(f"seen_{sign.name.lower()}" for sign in Seen if sign.name and sign in seen)


def _variables(order: HandoffOrder) -> str:
    first, second, ready = head(order)
    return filled(
        "watch_variables",
        first=action_name(first),
        second=action_name(second),
        ready=seen_name(ready),
    )


def _payload_answers(fallback: float) -> str:
    """Contract §3 on each timing class and each (timing, tokens) pair the environment offers."""
    found = payloads(environment(), fallback)
    timings = []
    for number, timing in enumerate(found.timings, start=1):
        refusal = timing_refusal(timing)
        if refusal is not None:
            timings.append(f"(t == {number} -> R_{refusal.name} : \\")
    unusable = [
        f"(t == {t} && n == {n})"
        for t, timing in enumerate(found.timings, start=1)
        for n, tokens in enumerate(found.tokens, start=1)
        if timing_refusal(timing) is None
        and not usable_delay(transfer_delay(timing, tokens, fallback))
    ]
    return filled(
        "payload_answers",
        timings=timings,
        closing=")" * len(timings),
        unusable=" || ".join(unusable) or "false",
    )


def _ordered() -> list[str]:
    """Contract §4 on a fact in active mode (`FACTS`): an ordered one dropped once established,
    refused before the acknowledgement it needs; news dropped (a terminal fact is taken)."""
    lines = []
    for fact, rule in FACTS.items():
        fact_is = f"c_fact == F_{fact.__name__}"
        if rule is Unordered.NEWS:
            lines.append(f":: {fact_is} -> ans = ANS_DROP")
        if not isinstance(rule, Ordered):
            continue
        established = seen_name(rule.establishes)
        lines += [
            f":: {fact_is} && {established} -> ans = ANS_DROP",
            f":: {fact_is} && !{established} && !{seen_name(rule.needs)} ->",
            f"     refuse({refusal_name(rule.refusal)})",
        ]
    return lines


_KEPT = {
    HandoffFact.SourceHeld: "spec_timing = c_timing",
    HandoffFact.DestinationReserved: "spec_tokens = c_tokens",
}
"""The payload the watch keeps from an ordered fact it takes, as `take` keeps it."""


def _taken() -> list[str]:
    """What taking each fact but a terminal one (`c_terminal`) establishes (`FACTS`): an
    ordered one its payload, its sign and its lifecycle event; news nothing."""
    lines = []
    for fact, rule in FACTS.items():
        taken = f":: c_kind == K_FACT && c_fact == F_{fact.__name__} ->"
        if rule is Unordered.NEWS:
            lines.append(f"{taken} skip")
        if not isinstance(rule, Ordered):
            continue
        event = FACT_LIFECYCLE.get(fact)
        record = [] if event is None else [f"spec_record(L_{event.value})"]
        done = [*([_KEPT[fact]] if fact in _KEPT else []), f"{seen_name(rule.establishes)} = 1"]
        done += record
        if len(done) == 1:
            lines.append(f"{taken} {done[0]}")
        else:
            lines += [taken, f"     {'; '.join(done)}"]
    return lines


def _acknowledged() -> list[str]:
    """What a fitting acknowledgement of action A establishes (`ACK_SIGNS`)."""
    lines = []
    for action, (sign, event) in ACK_SIGNS.items():
        taken = f":: c_out != O_Failed && A == {action_name(action)} ->"
        if event is None:
            lines.append(f"{taken} {seen_name(sign)} = 1")
        else:
            lines += [taken, f"     {seen_name(sign)} = 1; spec_record(L_{event.value})"]
    return lines


def _advance(order: HandoffOrder) -> str:
    """Contract §4 `advance` (`advance_rules`), naming the head of `order` as the watch's
    macros do (FIRST, SECOND, READY)."""
    first, second, ready = head(order)
    macros = {first: "FIRST", second: "SECOND"}
    rules = []
    for signs, action in advance_rules(order):
        holds = "READY" if signs == ready and action is second else seen_name(signs)
        due = macros.get(action, action_name(action))
        rules.append(
            f"if :: due0 == 0 && {holds} && !EVER({due}) -> due0 = {due} :: else -> skip fi;"
        )
    return filled("advance", order=order.value, rules=rules)
