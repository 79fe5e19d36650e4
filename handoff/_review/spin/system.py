"""The system world in Promela: the coordinators, two workers and the messages between them.

The coordinator part is the one `handoff export promela` writes (`handoff._review.spin.model`),
read off the compiled chart, its variables declared once per handoff (`System.concurrency`)
and named after the handoff being called.  Around it: the two workers' memories of each
request (a request is a handoff) and the contract as tables
(`handoff._system.workers.ContractTable`), a bounded memory's idle requests in order (the longest
idle forgotten first, as `handoff._system.worker_state` has it), the messages in flight and the
faults, as the explorer has them (`handoff._review.system`).  A message is one number (its
handoff, its action id and what it carries); in flight, they are one sorted multiset, any of
them deliverable next, or with `fifo` four channels (to each worker, from each), each
delivering its first.  Each handoff starts, and is told a terminal fact, as a move of its
own.  W1 to W3 and W6 are assertions, judged per handoff; W4, W5 and W7 LTL formulas over
a calm mode the model may switch into at any time, after which no fault happens (starts and
deliveries only).  A fact the coordinator would refuse as early
is not delivered until it would be taken: the Python model's self-loop.  The injected faults
(`--faults`) are moves of their own, each within its budget: a delivery leaving a copy behind
(a worker remembers which work it did while it remembers the request, and ignores the copy),
a loss reported as `TimedOut`, a worker's restart.  Acknowledged on send, the runtime puts the
fitting outcome in flight beside the work, and the worker answers with the work's fact or
`Failed`.  What Spin cannot judge, `unmirrored` says in one line.

The fixed text of each section is a `.pml` file shipped with the package
(`handoff._review.spin.text`); the functions here fill in what varies with the system.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Hashable

from handoff._chart.vocabulary import ChartEvent
from handoff._compile.table import CompiledChart, StepKind
from handoff._review.spin import model as promela
from handoff._review.spin.coordinator import chart_cells, chart_step, coordinator, journal_rules
from handoff._review.spin.properties import not_mirrored
from handoff._review.spin.text import filled, fixed
from handoff._review.spin.vocabulary import event_name
from handoff._system.call import TERMINAL_FACTS
from handoff._system.config import Resend, Restart, System
from handoff._system.faults import NETWORK, Fault
from handoff._system.properties import WorldKind
from handoff._system.workers import (
    ContractTable,
    RequestMemory,
    Role,
    Slots,
    WorkerReply,
    WorkerTask,
)
from handoff._values.errors import OutOfOrderFactError

__all__ = [
    "G_ACT",
    "G_FACT",
    "G_FAILED",
    "G_OUT",
    "HANDOFF_CODE",
    "MIRRORED_FAULTS",
    "ModelMove",
    "system_model",
    "unmirrored",
]

_FACTS = (
    ("A_SubmitPrefill", "F_SourceHeld", ChartEvent.SOURCE_HELD, "c_timing = 1"),
    (
        "A_ReserveDestination",
        "F_DestinationReserved",
        ChartEvent.DESTINATION_RESERVED,
        "c_tokens = 1",
    ),
    ("A_StartTransfer", "F_TransferCompleted", ChartEvent.TRANSFER_COMPLETED, "skip"),
)
_TERMINAL = tuple(f"F_{fact.__name__}" for fact in TERMINAL_FACTS)
_CANCELED_IF_TERMINATED = "(!term[{h}] || (COMPLETE({h}) && co[{h}].h_completion == C_CANCELED))"
"""W5 for handoff h: no terminal fact reported for it, or it is complete CANCELED."""


def system_model(chart: CompiledChart, options: System) -> str:
    """The Promela model of `chart`'s coordinator in its system, with `options`' contract.

    The chart and the contract are data at its end (CELL, STATE, REACT and ROLE lines), so
    that systems differing only in them share one compiled verifier."""
    table = ContractTable(options.contract)
    sections = [
        _header(chart, options),
        promela._names(),
        _coordinators(chart, options),
        promela._payload_rules(chart, 0.0),
        journal_rules(),
        chart_step(),
        coordinator(),
        _contract(table),
        _runtime(chart, options),
        _moves(options),
        _process(options),
        fixed("system_liveness"),
        chart_cells(chart, _flags(chart)),
        filled("reactions", reactions=_reactions(table)),
    ]
    return "\n\n".join(sections) + "\n"


def _coordinators(chart: CompiledChart, options: System) -> str:
    """Each handoff's coordinator variables (those `handoff._review.spin.model` declares for
    one), and the names the coordinator part uses for them: those of handoff `hc`, the one
    being called."""
    fields = re.findall(r"^byte (\w+)(\[\w+\])?", promela.configuration(), re.MULTILINE)
    return filled(
        "coordinators",
        sizes=promela._sizes(chart),
        handoffs=options.concurrency,
        declared=" ".join(f"byte h_{name}{size};" for name, size in fields),
        names=[f"#define {name} co[hc].h_{name}" for name, _ in fields],
        scratch=fixed("scratch"),
    )


def _header(chart: CompiledChart, options: System) -> str:
    return filled(
        "system_header",
        how_many=_how_many(options),
        name=chart.name,
        order=chart.order.value,
        contract=repr(options.contract.name),
        faults=options.faults,
        system=options.describe(),
        unchecked=_unchecked(),
    )


def _unchecked() -> str:
    """The one line saying which of the system's properties this model does not check."""
    keys = ", ".join(key.value for key in not_mirrored(WorldKind.SYSTEM))
    return f"Not checked by this model: {keys} (the review judges them; Spin never does)."


def _how_many(options: System) -> str:
    count = options.concurrency
    return "one coordinator" if count == 1 else f"{count} coordinators, sharing the workers,"


_MEMORIES = list(RequestMemory)
_REPLIES = list(WorkerReply)
_SLOTS = list(Slots)


def _unmirrored_runtime(system: System) -> tuple[tuple[bool, str], ...]:
    """The runtime's settings the model does not write, each with its words.  Acknowledgement
    per kind is written (`ON_SEND_KIND`), and so is holding early facts back: the model never
    delivers a fact its coordinator would refuse as early."""
    return (
        (system.one_at_a_time, "one action at a time per worker"),
        (system.answers_again > 0, "answers from the destination's cache"),
        (system.expires, "expiring tombstones"),
        (system.abandons, "cleanup outside the chart"),
    )


MIRRORED_FAULTS = frozenset({Fault.DUPLICATION, Fault.LOSS, Fault.RESTART})
"""The injected faults the model writes (`_moves`); any other is refused, never ignored."""


def unmirrored(system: System) -> str | None:
    """Why Spin cannot judge `system` yet, in words naming the option to drop (None: it can):
    the one place that says so, for `handoff review --engine spin` and `run_spin` alike."""
    if system.properties:
        return "the shipped properties only: drop --property"
    unmirrored_settings = [words for on, words in _unmirrored_runtime(system) if on]
    if unmirrored_settings:
        return (
            f"a runtime without {', '.join(unmirrored_settings)}: review "
            f"--runtime {system.runtime} with the explorer, or give a runtime without them"
        )
    unmodelled = [fault.value for fault in NETWORK if fault in system.injected - MIRRORED_FAULTS]
    if unmodelled:
        return f"the faults it models only: drop {', '.join(unmodelled)} from --faults"
    table = ContractTable(system.contract)
    cells = (
        table.reactions(task, memory, role)
        for role in Role
        for task in WorkerTask
        for memory in table.memories(role)
    )
    if any(len(reactions) > 1 for reactions in cells):
        return "a contract answering one way only: give a deterministic contract"
    if system.resend is not Resend.NONE:
        return "a runtime that re-sends nothing: drop --resend"
    if system.drains_transfers:
        return "a runtime sending both cancels at once: drop --drain-transfers"
    if system.restart != Restart():
        return "the default restart only: drop --restart"
    if system.deadline is not None:
        return "terminal facts counted by --failures only: drop --deadline"
    if system.retry and _cancel_fails(table):
        return "a runtime that gives up on a failed cancel: give --no-retry"
    if not all(
        isinstance(memory, RequestMemory) for role in Role for memory in table.memories(role)
    ):
        return "a contract remembering RequestMemory values only"
    return None


def _cancel_fails(table: ContractTable) -> bool:
    """Whether a worker may answer a cancel `FAILED`: the model drops the refused outcome, as
    a runtime that does not retry does, so it mirrors a retrying one only where none fails."""
    return any(
        reaction.reply is WorkerReply.FAILED
        for role in Role
        for memory in table.memories(role)
        for reaction in table.reactions(WorkerTask.CANCEL, memory, role)
    )


def _reactions(table: ContractTable) -> list[str]:
    """The contract as data, to end the model with: one `REACT` line per role, task and memory
    it reaches (then the memory, reply and slots it leads to), one `ROLE` line per role (its
    initial memory, whether its memory is bounded, the bound)."""
    lines = []
    for role_number, role in enumerate(Role):
        reached = table.memories(role)
        for task_number, task in enumerate(WorkerTask, start=1):
            for memory_number, memory in enumerate(RequestMemory):
                if memory not in reached:
                    continue
                reaction = table.react(task, memory, role)
                change = reaction.change(memory)
                numbers = (
                    f"{_number(reaction.memory)} {_REPLIES.index(reaction.reply) + 1} "
                    f"{_SLOTS.index(change) + 1}"
                )
                lines.append(
                    f"REACT {role_number} {task_number} {memory_number} {numbers}   "
                    f"{role.name.lower()}, {task.name} with {memory.name}: "
                    f"{reaction.reply.name}, to {_MEMORIES[_number(reaction.memory)].name}, "
                    f"slots {change.name}"
                )
    for role_number, role in enumerate(Role):
        bound = table.remembers(role)
        lines.append(
            f"ROLE {role_number} {_number(table.initial(role))} {int(bound is not None)} "
            f"{bound or 0}   {role.name.lower()}"
        )
    return lines


def _number(memory: Hashable) -> int:
    assert isinstance(memory, RequestMemory)  # `unmirrored` says so
    return _MEMORIES.index(memory)


def _contract(table: ContractTable) -> str:
    return filled(
        "contract",
        name=repr(table.name),
        tasks=[f"#define T_{task.name} {n}" for n, task in enumerate(WorkerTask, start=1)],
        memories=[f"#define M_{memory.name} {n}" for n, memory in enumerate(RequestMemory)],
        replies=[f"#define Y_{reply.name} {n}" for n, reply in enumerate(WorkerReply, start=1)],
        ntasks=len(WorkerTask) + 1,
        nmemories=len(RequestMemory),
        slots=[f"#define SL_{change.name} {n}" for n, change in enumerate(Slots, start=1)],
    )


_COMPLETE_FLAG = 1
_EARLY_FLAGS = {
    event: 2 << number
    for number, event in enumerate((*(event for _, _, event, _ in _FACTS), ChartEvent.TERMINATED))
}
"""A state's flags (its `STATE` line, copied into `state_flags` when the system starts): it is
complete, and which facts come too early in it (one flag per fact event)."""


def _flags(chart: CompiledChart) -> list[tuple[int, str]]:
    """Each state's flags, and their words."""
    found = []
    for state in range(len(chart.states)):
        number, words = 0, []
        if state in chart.complete:
            number, words = _COMPLETE_FLAG, ["complete"]
        for event, flag in _EARLY_FLAGS.items():
            step = chart.step(state, event)
            if (
                step.kind is StepKind.REFUSED
                and step.refusal is not None
                and issubclass(step.refusal.error, OutOfOrderFactError)
            ):
                number |= flag
                words.append(f"{event.value} too early")
        found.append((number, ", ".join(words)))
    return found


def _early(event: ChartEvent) -> str:
    """Whether `event`'s fact comes too early for handoff H, in its chart state."""
    return f"(state_flags[co[H].h_state] & {_EARLY_FLAGS[event]})"


def _each(options: System, term: str, join: str) -> str:
    """`term` for every handoff ({h} its number), joined by `join`."""
    return f" {join} ".join(term.format(h=h) for h in range(options.concurrency))


def _runtime(chart: CompiledChart, options: System) -> str:
    channels = _CHANNELS if options.fifo else 1
    early = [f"#define EARLY_{action[2:]}(H) {_early(event)}" for action, _, event, _ in _FACTS]
    return filled(
        "runtime",
        max_faults=options.faults,
        budget=options.budget,
        channels=channels,
        delivery=_DELIVERY[options.fifo],
        qmax=_qmax(options),
        on_send=int(bool(options.acknowledge.kinds)),
        on_send_kinds=" || ".join(f"A == A_{kind}" for kind in options.acknowledge.kinds) or "0",
        copies=int(Fault.DUPLICATION in options.injected),
        g_act=G_ACT,
        g_fact=G_FACT,
        g_failed=G_FAILED,
        g_out=G_OUT,
        handoff_code=HANDOFF_CODE,
        code="short" if options.concurrency > 1 else "byte",
        slot_bound=options.slots or 0,
        remembers_any=_each(options, "REMEMBERS(W, {h})", "||"),
        held_all=_each(options, "HELD(W, {h})", "+"),
        states=len(chart.states),
        complete_flag=_COMPLETE_FLAG,
        quiet=" && ".join(f"q[{c}].n == 0" for c in range(channels)),
        all_complete=_each(options, "COMPLETE({h})", "&&"),
        all_success=_each(options, "co[{h}].h_completion == C_SUCCESS", "&&"),
        terminated=_each(options, "term[{h}]", "||"),
        none_struck=_each(options, "duplicated[{h}] == 0 && lost[{h}] == 0", "&&"),
        terminated_canceled=_each(options, _CANCELED_IF_TERMINATED, "&&"),
        early=[*early, f"#define EARLY_terminated(H) {_early(ChartEvent.TERMINATED)}"],
    )


G_ACT, G_FACT, G_FAILED = 1, 2, 3
"""What a message carries (its code is its handoff times 256 plus its action id times 16 plus
this): the action, the work's fact, a `Failed` fact."""
G_OUT = 3
"""An outcome of kind n (numbered from 1, `OUTCOME_KINDS`) is G_OUT + n."""
HANDOFF_CODE = 256
"""A message's code is its handoff's number times this, plus the rest."""


class ModelMove(enum.IntEnum):
    """The moves of the system model, as it numbers them and prints them (`MOVE mv what id`,
    `what` the message moved or the terminal fact, `id` the action id, the worker restarting,
    or the handoff started or told a terminal fact): the review's `MoveKind`s, a delivery
    either way one number, and `CALM`, the model's own step into its liveness check."""

    START = 0
    DELIVER = 1
    FAIL = 2
    TERMINAL = 3
    CALM = 4
    DUPLICATE = 5
    LOSE = 6
    RESTART = 7


_CHANNELS = 4
"""With FIFO delivery: actions to the source, to the destination, replies from each."""
_DELIVERY = {False: "any order: one multiset", True: "FIFO per worker and direction"}
_QMAX = 8
"""Messages one channel holds for each handoff (one more per duplicate its budget allows); a
run that would overflow it breaks Bound, so a model too small shows as a disagreement, never a
pass."""


def _qmax(options: System) -> int:
    copies = options.budget * (Fault.DUPLICATION in options.injected)
    return (_QMAX + copies) * options.concurrency


def _moves(options: System) -> str:
    return filled(
        "moves",
        move_names=[f"#define MV_{move.name} {move.value}" for move in ModelMove],
        fact_early=" || ".join(
            f"(KIND_OF(M) == {action} && EARLY_{action[2:]}(HANDOFF_OF(M)))"
            for action, _, _, _ in _FACTS
        ),
        channel="(IS_ACT(M) -> 0 : 2) + ROLE(KIND_OF(M))" if options.fifo else "0",
        sorted=int(not options.fifo),
        facts=[
            f":: KIND(hc, k) == {action} -> c_fact = {fact}; c_event = {event_name(event)}; "
            f"{payload}"
            for action, fact, event, payload in _FACTS
        ],
        remember=_REMEMBER if Fault.DUPLICATION in options.injected else [],
        memory=fixed("memory"),
    )


_REMEMBER = [
    "if :: REMEMBERS(w, hc) -> DONE(w, hc) = DONE(w, hc) | (1 << k)",
    ":: else -> DONE(w, hc) = 0 fi;",
]
"""With duplicates, a worker remembers which work it did (while it remembers the request),
so that it ignores a copy."""


def _process(options: System) -> str:
    """The system's one process: every move enabled, one chosen, made in one step."""
    handoffs = range(options.concurrency)
    faulty = "!stopped && !calm"
    choices = [f":: !stopped && !started[{h}] -> mv = MV_START; hc = {h}" for h in handoffs]
    for c in range(_CHANNELS if options.fifo else 1):
        for p in range(_qmax(options) if not options.fifo else 1):
            choices += _message_moves(options, c, p)
    if Fault.RESTART in options.injected:
        choices += [
            f":: {faulty} && restarts < BUDGET && REMEMBERS_ANY({role}) -> "
            f"mv = MV_RESTART; k = {role}"
            for role in (0, 1)
        ]
    choices += [
        f":: {faulty} && faults < MAX_FAULTS && started[{h}] -> mv = MV_TERMINAL; "
        f"c_fact = {fact}; hc = {h}"
        for h in handoffs
        for fact in _TERMINAL
    ]
    return filled("process", choices=choices)


def _message_moves(options: System, c: int, p: int) -> list[str]:
    """The moves of the message in place `p` of channel `c`, if there is one."""
    here, m, at = f"q[{c}].n > {p}", f"q[{c}].m[{p}]", f"qc = {c}; qp = {p}"
    faulty = "!stopped && !calm"
    moves = [f":: !stopped && {here} && DELIVERABLE({m}) -> mv = MV_DELIVER; {at}"]
    if options.worker_failures:
        moves.append(
            f":: {faulty} && faults < MAX_FAULTS && {here} && IS_ACT({m}) && "
            f"FAILABLE(KIND_OF({m})) -> mv = MV_FAIL; {at}"
        )
    if Fault.DUPLICATION in options.injected:
        moves.append(
            f":: {faulty} && duplicated[HANDOFF_OF({m})] < BUDGET && {here} && DELIVERABLE({m}) -> "
            f"mv = MV_DUPLICATE; {at}"
        )
    if Fault.LOSS in options.injected:
        moves.append(
            f":: {faulty} && lost[HANDOFF_OF({m})] < BUDGET && {here} -> mv = MV_LOSE; {at}"
        )
    return moves
