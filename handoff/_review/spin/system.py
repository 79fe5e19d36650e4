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
"""

from __future__ import annotations

import enum
import re
from collections.abc import Hashable

from handoff._chart.vocabulary import ChartEvent
from handoff._compile.table import CompiledChart, StepKind
from handoff._review.spin import model as promela
from handoff._review.spin.coordinator import chart_cells, chart_step, coordinator, journal_rules
from handoff._review.spin.vocabulary import event_name
from handoff._system.config import System
from handoff._system.faults import Fault
from handoff._system.workers import (
    Acknowledge,
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
    "Move",
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
_TERMINAL = ("F_Failed", "F_TimedOut", "F_Canceled")
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
        _liveness(),
        chart_cells(chart, _flags(chart)),
        "\n".join(_reactions(table)),
    ]
    return "\n\n".join(sections) + "\n"


def _coordinators(chart: CompiledChart, options: System) -> str:
    """Each handoff's coordinator variables (those `handoff._review.spin.model` declares for
    one), and the names the coordinator part uses for them: those of handoff `hc`, the one
    being called."""
    fields = re.findall(r"^byte (\w+)(\[\w+\])?", promela.CONFIGURATION, re.MULTILINE)
    declared = " ".join(f"byte h_{name}{size};" for name, size in fields)
    names = [f"#define {name} co[hc].h_{name}" for name, _ in fields]
    return "\n".join(
        [
            promela._sizes(chart),
            "",
            f"#define HANDOFFS {options.concurrency}      /* live at once, sharing the workers */",
            "/* -- each handoff's coordinator: chart state, journal, payloads, lifecycle -- */",
            f"typedef Coordinator {{ {declared} }};",
            "Coordinator co[HANDOFFS];",
            "byte hc = 0;                 /* the handoff called or moved (0 between moves) */",
            *names,
            "bit stopped = 0;             /* a crash or a cut-off run: the system stops */",
            "",
            promela.SCRATCH,
        ]
    )


def _header(chart: CompiledChart, options: System) -> str:
    return f"""\
/* AUTOGENERATED by the review (handoff._review.spin.system): do not edit.

   What this models: {_how_many(options)} of the {chart.name} chart ({chart.order.value})
   with a source and a destination worker, which follow
   the {options.contract.name!r} contract, and a runtime
   carrying each action to its worker and each outcome and fact back; at most
   {options.faults} faults a run (a terminal fact, or a worker failing work).
   The system: {options.describe()}.

   How to run it (exhaustive):
     build:     spin -o2 -a model.pml && gcc -DNOFAIR -o pan pan.c
     safety:    ./pan -c0 -E          (W1-W3 and Errors are assertions)
     liveness:  ./pan -a -N W4        (and -N W5, -N W7)
   The chart and the contract are the CELL, STATE, REACT and ROLE lines at the end of this
   file, which `pan` reads from it; Spin's own simulator runs no C code, so use `pan`.
*/"""


def _how_many(options: System) -> str:
    count = options.concurrency
    return "one coordinator" if count == 1 else f"{count} coordinators, sharing the workers,"


_MEMORIES = list(RequestMemory)
_REPLIES = list(WorkerReply)
_SLOTS = list(Slots)


def unmirrored(system: System) -> str | None:
    """Why Spin cannot judge `system` yet, in words naming the option to drop (None: it can):
    the one place that says so, for `handoff review --engine spin` and `run_spin` alike."""
    if system.properties:
        return "the shipped properties only: drop --property"
    table = ContractTable(system.contract)
    cells = (
        table.reactions(task, memory, role)
        for role in Role
        for task in WorkerTask
        for memory in table.memories(role)
    )
    if any(len(reactions) > 1 for reactions in cells):
        return "a contract answering one way only: give a deterministic contract"
    if not all(
        isinstance(memory, RequestMemory) for role in Role for memory in table.memories(role)
    ):
        return "a contract remembering the four RequestMemory values only"
    return None


def _reactions(table: ContractTable) -> list[str]:
    """The contract as data, to end the model with: one `REACT` line per role, task and memory
    it reaches (then the memory, reply and slots it leads to), one `ROLE` line per role (its
    initial memory, whether its memory is bounded, the bound)."""
    lines = [
        "/* -- the workers' contract as data: what the system copies into react_cells and",
        "      role_cells when it starts (it parses this comment's lines).",
        "   REACT <role> <task> <memory> <memory after> <reply> <slots>; numbered as the",
        "   #defines above (T_, M_, Y_, SL_); ROLE <role> <initial memory> <bounded> <bound>",
    ]
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
    return [*lines, "*/"]


def _number(memory: Hashable) -> int:
    assert isinstance(memory, RequestMemory)  # `unmirrored` says so
    return _MEMORIES.index(memory)


def _contract(table: ContractTable) -> str:
    tasks = [f"#define T_{task.name} {n}" for n, task in enumerate(WorkerTask, start=1)]
    memories = [f"#define M_{memory.name} {n}" for n, memory in enumerate(RequestMemory)]
    replies = [f"#define Y_{reply.name} {n}" for n, reply in enumerate(WorkerReply, start=1)]
    return "\n".join(
        [
            f"/* -- the workers' contract, {table.name!r}, tabulated: r, t, m -- */",
            *tasks,
            *memories,
            *replies,
            f"#define CONTRACT_TASKS {len(WorkerTask) + 1}",
            f"#define CONTRACT_MEMORIES {len(RequestMemory)}",
            "/* the contract's cells (its REACT lines, at the end of this file) and each role's",
            "   initial memory, whether it is bounded, and the bound (its ROLE lines) */",
            "hidden byte react_cells[3 * 2 * CONTRACT_TASKS * CONTRACT_MEMORIES];",
            "hidden byte role_cells[6];",
            "#define CONTRACT_AT(x, r, t, m) "
            "((((x) * 2 + (r)) * CONTRACT_TASKS + (t)) * CONTRACT_MEMORIES + (m))",
            "#define REACT_MEMORY(r, t, m) react_cells[CONTRACT_AT(0, r, t, m)]",
            "#define REACT_REPLY(r, t, m) react_cells[CONTRACT_AT(1, r, t, m)]",
            *(f"#define SL_{change.name} {n}" for n, change in enumerate(Slots, start=1)),
            "#define REACT_SLOTS(r, t, m) react_cells[CONTRACT_AT(2, r, t, m)]",
            "#define M_INITIAL_0 role_cells[0]",
            "#define M_INITIAL_1 role_cells[3]",
            "#define M_INITIAL(W) role_cells[(W) * 3]",
            "/* a memory bounded to K idle requests (tombstone:K): BOUNDED, and K */",
            "#define BOUNDED(W) role_cells[(W) * 3 + 1]",
            "#define BOUND(W) role_cells[(W) * 3 + 2]",
            "#define DESTINATION_WORK(A) (A == A_ReserveDestination || "
            "A == A_ActivateDestination || A == A_CancelDestination)",
            "#define ROLE(A) (DESTINATION_WORK(A) -> 1 : 0)",
            "#define TASK(A) ((A == A_SubmitPrefill || A == A_ReserveDestination) -> T_TAKE : "
            "(A == A_StartTransfer -> T_TRANSFER : (A == A_ActivateDestination -> T_ACTIVATE : "
            "(A == A_ReleaseSource -> T_RELEASE : T_CANCEL))))",
            "#define FITTING(A) (A == A_SubmitPrefill -> O_Submitted : "
            "(A == A_ReserveDestination -> O_Accepted : "
            "(A == A_StartTransfer -> O_Scheduled : O_Applied)))",
            "#define OUTCOME(A, Y) (Y == Y_DONE -> FITTING(A) : "
            "(Y == Y_NOOP -> O_Noop : (Y == Y_FAILED -> O_Failed : 0)))",
            "#define HAS_FACT(A) (A == A_SubmitPrefill || A == A_ReserveDestination || "
            "A == A_StartTransfer)",
            "#define FAILABLE(A) (TASK(A) == T_TAKE || TASK(A) == T_TRANSFER || "
            "TASK(A) == T_ACTIVATE)",
            "#define CLEANUP(A) (A == A_ReleaseSource || A == A_CancelSource || "
            "A == A_CancelDestination)",
        ]
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
    early = [f"#define EARLY_{action[2:]}(H) {_early(event)}" for action, _, event, _ in _FACTS]
    channels = _CHANNELS if options.fifo else 1
    quiet = " && ".join(f"q[{c}].n == 0" for c in range(channels))
    injected = options.injected
    several = options.concurrency > 1
    return "\n".join(
        [
            "/* -- the runtime: what it issued, what is in flight, what it was told -- */",
            f"#define MAX_FAULTS {options.faults}",
            f"#define BUDGET {options.budget}            /* of each fault --faults injects */",
            f"#define CHANNELS {channels}          /* {_DELIVERY[options.fifo]} */",
            f"#define QMAX {_qmax(options)}",
            f"#define ON_SEND {int(options.acknowledge is Acknowledge.ON_SEND)}",
            f"#define COPIES {int(Fault.DUPLICATION in injected)}",
            "/* A message: its handoff times 256, plus its action id times 16, plus what it",
            "   carries: the action itself, the work's fact, a Failed fact (the worker's word for",
            "   work acknowledged on send that it did not do), or an outcome kind. */",
            f"#define G_ACT {G_ACT}",
            f"#define G_FACT {G_FACT}",
            f"#define G_FAILED {G_FAILED}",
            f"#define G_OUT {G_OUT}              /* G_OUT + O_<kind>: an outcome */",
            f"#define MSG(H, K, G) ((H) * {HANDOFF_CODE} + (K) * 16 + (G))",
            f"#define HANDOFF_OF(M) ((M) / {HANDOFF_CODE})",
            "#define ID(M) (((M) / 16) % 16)",
            "#define WHAT(M) ((M) % 16)",
            "#define IS_ACT(M) (WHAT(M) == G_ACT)",
            "#define IS_FACT(M) (WHAT(M) == G_FACT || WHAT(M) == G_FAILED)",
            f"typedef Queue {{ {'short' if several else 'byte'} m[QMAX]; byte n }};",
            "Queue q[CHANNELS];       /* in flight: one sorted multiset, or each worker's four "
            "channels in order */",
            "byte inflight[HANDOFFS]; /* how many of each handoff's messages are in flight */",
            "/* Each worker's memory of each request (a request is a handoff: worker w's of",
            "   request r is at w * HANDOFFS + r): what it remembers, the KV slots it holds, and",
            "   (bit k) that it did (or failed) action k, as long as it remembers the request. */",
            "byte mem[2 * HANDOFFS];",
            "byte held[2 * HANDOFFS];",
            "short done[2 * HANDOFFS];",
            "#define MEM(W, R) mem[(W) * HANDOFFS + (R)]",
            "#define HELD(W, R) held[(W) * HANDOFFS + (R)]",
            "#define DONE(W, R) done[(W) * HANDOFFS + (R)]",
            f"#define SLOT_BOUND {options.slots or 0}      /* --slots; 0: unbounded */",
            "#define REMEMBERS(W, R) (MEM(W, R) != M_INITIAL(W) || HELD(W, R) > 0)",
            f"#define REMEMBERS_ANY(W) ({_each(options, 'REMEMBERS(W, {h})', '||')})",
            f"#define HELD_ALL(W) ({_each(options, 'HELD(W, {h})', '+')})",
            "/* The requests each worker remembers idle (holding no slot for them), the longest",
            "   idle first: kept only by a worker whose memory is bounded (BOUNDED). */",
            "byte idle[2 * HANDOFFS];",
            "byte nidle[2];",
            "#define IDLE(W, P) idle[(W) * HANDOFFS + (P)]",
            "byte kind_of[HANDOFFS * LOG_SIZE];  /* each handoff's action issued with each id; "
            "never cleared */",
            "bit performed[HANDOFFS * LOG_SIZE];",
            "#define KIND(H, K) kind_of[(H) * LOG_SIZE + (K)]",
            "#define KIND_OF(M) KIND(HANDOFF_OF(M), ID(M))",
            "#define PERFORMED(H, K) performed[(H) * LOG_SIZE + (K)]",
            "bit told[2 * HANDOFFS];  /* the coordinator of request r was told worker w freed "
            "its slot */",
            "#define TOLD(W, R) told[(W) * HANDOFFS + (R)]",
            "bit restarted[2];        /* this worker restarted (--faults crash) */",
            "bit started[HANDOFFS];",
            "bit term[HANDOFFS];      /* a terminal fact was reported for the handoff (W5) */",
            "byte faults = 0;",
            "byte duplicated = 0, lost = 0, restarts = 0;",
            "bit calm = 0;                /* no more faults: deliveries only (W4, W5, W7) */",
            "bit W1_broken, W2_broken, W3_broken, W6_broken, Bound_broken, Errors_broken;",
            "byte k, w, qc, qp, x, y, freeing, remembered, holding;",
            f"{'short' if several else 'byte'} qm, nm;",
            f"#define STATES {len(chart.states)}",
            "hidden byte state_flags[STATES];   /* each chart state's, from its STATE line */",
            f"#define COMPLETE(H) (state_flags[co[H].h_state] & {_COMPLETE_FLAG})",
            f"#define QUIET ({quiet})",
            "/* handoff H complete, with nothing of it in flight (W1) */",
            "#define ENDED(H) (started[H] && COMPLETE(H) && inflight[H] == 0)",
            f"#define ALL_COMPLETE ({_each(options, 'COMPLETE({h})', '&&')})",
            f"#define ALL_SUCCESS ({_each(options, 'co[{h}].h_completion == C_SUCCESS', '&&')})",
            f"#define TERMINATED ({_each(options, 'term[{h}]', '||')})",
            "/* every handoff a terminal fact was reported for is complete CANCELED (W5) */",
            f"#define TERMINATED_CANCELED ({_each(options, _CANCELED_IF_TERMINATED, '&&')})",
            "/* no fault so far: no terminal fact, no failed work, nothing injected (W7) */",
            "#define FAULT_FREE (faults == 0 && duplicated == 0 && lost == 0 && restarts == 0 "
            "&& !TERMINATED)",
            *early,
            f"#define EARLY_terminated(H) {_early(ChartEvent.TERMINATED)}",
        ]
    )


G_ACT, G_FACT, G_FAILED = 1, 2, 3
"""What a message carries (its code is its handoff times 256 plus its action id times 16 plus
this): the action, the work's fact, a `Failed` fact."""
G_OUT = 3
"""An outcome of kind n (numbered from 1, `OUTCOME_KINDS`) is G_OUT + n."""
HANDOFF_CODE = 256
"""A message's code is its handoff's number times this, plus the rest."""


class Move(enum.IntEnum):
    """The moves of the system model, as it numbers them (and prints them: `MOVE mv what id`,
    `what` the message moved or the terminal fact, `id` the action id, the worker restarting,
    or the handoff started or told a terminal fact)."""

    START = 0
    DELIVER = 1
    FAIL = 2
    TERMINAL = 3
    CALM = 4
    DUPLICATE = 5
    LOSE = 6
    RESTART = 7


def _move_names() -> str:
    return "\n".join(f"#define MV_{move.name} {move.value}" for move in Move)


_CHANNELS = 4
"""With FIFO delivery: actions to the source, to the destination, replies from each."""
_DELIVERY = {False: "any order: one multiset", True: "FIFO per worker and direction"}
_QMAX = 8
"""Messages one channel holds for each handoff (one more per duplicate the budget allows); a
run that would overflow it breaks Bound, so a model too small shows as a disagreement, never a
pass."""


def _qmax(options: System) -> int:
    return _QMAX * options.concurrency + options.budget * (Fault.DUPLICATION in options.injected)


def _moves(options: System) -> str:
    facts = "\n".join(
        f"     :: KIND(hc, k) == {action} -> c_fact = {fact}; c_event = {event_name(event)}; "
        f"{payload}"
        for action, fact, event, payload in _FACTS
    )
    early = " || ".join(
        f"(KIND_OF(M) == {action} && EARLY_{action[2:]}(HANDOFF_OF(M)))"
        for action, _, _, _ in _FACTS
    )
    channel = "(IS_ACT(M) -> 0 : 2) + ROLE(KIND_OF(M))" if options.fifo else "0"
    remember = (
        "  if :: REMEMBERS(w, hc) -> DONE(w, hc) = DONE(w, hc) | (1 << k)\n"
        "  :: else -> DONE(w, hc) = 0 fi;\n"
        if Fault.DUPLICATION in options.injected
        else ""
    )
    return f"""\
/* -- the moves: a call to the coordinator, a worker's reaction -- */
{_move_names()}
byte mv = 0;
#define FACT_EARLY(M) ({early})
#define EARLY(M) ((WHAT(M) == G_FACT && FACT_EARLY(M)) || \\
                  (WHAT(M) == G_FAILED && EARLY_terminated(HANDOFF_OF(M))))
#define DELIVERABLE(M) (!EARLY(M))
#define CHANNEL(M) ({channel})
#define SORTED {int(not options.fifo)}
#define ACK_ON_SEND(A) (ON_SEND && HAS_FACT(A))
#define DONE_BEFORE(W, K) (COPIES && ((DONE(W, hc) >> (K)) & 1))

/* Put message nm in flight: behind its channel's last (FIFO), or in its sorted place. */
inline enqueue() {{
  x = CHANNEL(nm);
  if
  :: q[x].n >= QMAX -> Bound_broken = 1; stopped = 1
  :: else ->
       y = q[x].n;
       if
       :: SORTED ->
            do
            :: y > 0 && q[x].m[y - 1] > nm -> q[x].m[y] = q[x].m[y - 1]; y--
            :: else -> break
            od
       :: else -> skip
       fi;
       q[x].m[y] = nm; q[x].n++; inflight[HANDOFF_OF(nm)]++
  fi;
  nm = 0; x = 0; y = 0
}}

/* Take the chosen message (channel qc, place qp) out of flight, into qm; k: its id, hc: its
   handoff. */
inline dequeue() {{
  qm = q[qc].m[qp];
  y = qp;
  do
  :: y + 1 < q[qc].n -> q[qc].m[y] = q[qc].m[y + 1]; y++
  :: else -> break
  od;
  q[qc].n--; q[qc].m[q[qc].n] = 0; y = 0;
  k = ID(qm); hc = HANDOFF_OF(qm); inflight[hc]--
}}

/* The call c_* to handoff hc's coordinator; what it issued goes in flight. */
inline call_coordinator() {{
  result = TAKEN; delay = 0; nout = 0;
  coordinator_step();
  if
  :: result == CRASHED -> Errors_broken = 1; stopped = 1
  :: else -> skip
  fi;
  if
  :: freeing != 0 && result != CRASHED && result != REFUSED ->
       w = freeing - 1;
       if :: HELD(w, hc) > 0 -> W2_broken = 1 :: else -> skip fi;
       TOLD(w, hc) = 1; w = 0
  :: else -> skip
  fi;
  freeing = 0;
  for (j : 0 .. MOST_PER_CALL - 1) {{
    if
    :: j < nout && result != CRASHED && result != REFUSED ->
         KIND(hc, out_id[j]) = out[j];
         if
         :: out[j] != A_Complete ->
              nm = MSG(hc, out_id[j], G_ACT); enqueue();
              if
              :: ACK_ON_SEND(out[j]) ->
                   nm = MSG(hc, out_id[j], G_OUT + FITTING(out[j])); enqueue()
              :: else -> skip
              fi
         :: else -> skip
         fi
    :: else -> skip
    fi
  }};
  c_kind = 0; c_fact = 0; c_event = 0; c_timing = 0; c_tokens = 0; c_id = 0; c_out = 0;
  c_foreign = 0; result = 0; refusal = 0; delay = 0; nout = 0; i = 0; j = 0;
  for (j : 0 .. MOST_PER_CALL - 1) {{ out[j] = 0; out_id[j] = 0 }};
  j = 0
}}

inline take_fact() {{
  c_kind = K_FACT;
  if
  :: WHAT(qm) == G_FAILED -> c_fact = F_Failed; c_event = E_terminated
  :: else ->
     if
{facts}
     fi
  fi
}}

/* An outcome for the coordinator; one that says a worker freed its slot is told, once the
   coordinator takes it (call_coordinator). */
inline take_outcome() {{
  c_kind = K_OUTCOME; c_id = k; c_out = WHAT(qm) - G_OUT;
  if
  :: CLEANUP(KIND(hc, k)) && c_out != O_Failed -> freeing = ROLE(KIND(hc, k)) + 1
  :: else -> skip
  fi
}}

{_memory()}

/* Worker w gets action k of request hc: does what its contract says (MV_FAIL: fails it, a
   fault), or, when it remembers having done it, stays silent; then replies. */
inline perform() {{
  w = ROLE(KIND(hc, k));
  /* A second delivery of an action is the network's copy: W3 judges what was issued. */
  if :: PERFORMED(hc, k) && !COPIES -> W3_broken = 1 :: else -> skip fi;
  PERFORMED(hc, k) = 1;
  remembered = REMEMBERS(w, hc); holding = (HELD(w, hc) > 0);
  if
  :: mv == MV_FAIL -> c_out = Y_FAILED; faults++
  :: mv != MV_FAIL && DONE_BEFORE(w, k) -> c_out = Y_SILENT
  :: else ->
       x = REACT_SLOTS(w, TASK(KIND(hc, k)), MEM(w, hc));
       if
       :: x == SL_TAKE && SLOT_BOUND > 0 && HELD_ALL(w) >= SLOT_BOUND ->
            c_out = Y_FAILED  /* full */
       :: else ->
            c_out = REACT_REPLY(w, TASK(KIND(hc, k)), MEM(w, hc));
            MEM(w, hc) = REACT_MEMORY(w, TASK(KIND(hc, k)), MEM(w, hc));
            if
            :: x == SL_TAKE -> HELD(w, hc)++
            :: x == SL_FREE -> HELD(w, hc) = 0
            :: else -> skip
            fi
       fi;
       x = 0
  fi;
{remember}  place();
  remembered = 0; holding = 0;
  if :: HELD(w, hc) > 0 && TOLD(w, hc) -> W2_broken = 1 :: else -> skip fi;
  if :: HELD(w, hc) > 1 -> W6_broken = 1 :: else -> skip fi;
  if
  :: ACK_ON_SEND(KIND(hc, k)) ->
       /* acknowledged as sent: the work's fact says it was done, Failed that it was not */
       if
       :: c_out == Y_FAILED -> nm = MSG(hc, k, G_FAILED); enqueue()
       :: c_out == Y_DONE -> nm = MSG(hc, k, G_FACT); enqueue()
       :: else -> skip
       fi
  :: else ->
       if
       :: OUTCOME(KIND(hc, k), c_out) != 0 ->
            nm = MSG(hc, k, G_OUT + OUTCOME(KIND(hc, k), c_out)); enqueue()
       :: else -> skip
       fi;
       if
       :: c_out == Y_DONE && HAS_FACT(KIND(hc, k)) -> nm = MSG(hc, k, G_FACT); enqueue()
       :: else -> skip
       fi
  fi;
  c_out = 0; w = 0
}}

inline deliver() {{
  if
  :: IS_ACT(qm) -> perform()
  :: IS_FACT(qm) -> take_fact()
  :: else -> take_outcome()
  fi
}}

/* W1 for each handoff complete with nothing of it in flight; Bound; every assertion. */
inline judge() {{
  for (hc : 0 .. HANDOFFS - 1) {{
    if
    :: ENDED(hc) && completion == C_CANCELED && (HELD(0, hc) > 0 || HELD(1, hc) > 0) ->
         W1_broken = 1
    :: ENDED(hc) && completion == C_SUCCESS &&
       (HELD(0, hc) > 0 || (HELD(1, hc) == 0 && !restarted[1])) -> W1_broken = 1
    :: else -> skip
    fi;
    if :: next_id > MAX_ID -> Bound_broken = 1; stopped = 1 :: else -> skip fi
  }};
  hc = 0;
  assert(!W1_broken);
  assert(!W2_broken);
  assert(!W3_broken);
  assert(!W6_broken);
  assert(!Bound_broken);
  assert(!Errors_broken)
}}"""


def _memory() -> str:
    """Where a worker keeps what it now remembers of request hc (`handoff._system.worker_state`:
    `Worker.place`), and a restart."""
    return """\
/* Take request hc out of worker w's idle requests (if there). */
inline unidle() {
  y = 0;
  do
  :: y < nidle[w] && IDLE(w, y) != hc -> y++
  :: else -> break
  od;
  if
  :: y < nidle[w] ->
       do
       :: y + 1 < nidle[w] -> IDLE(w, y) = IDLE(w, y + 1); y++
       :: else -> break
       od;
       nidle[w]--; IDLE(w, nidle[w]) = 0
  :: else -> skip
  fi;
  y = 0
}

/* A bounded memory keeps its idle requests in order: held or forgotten, hc is not among
   them; idle before, it stays in its place; newly idle, it is the most recent, and the
   longest idle is forgotten when the worker would remember one idle request too many.
   (remembered, holding: what the worker had of hc before.) */
inline place() {
  if
  :: !BOUNDED(w) -> skip
  :: HELD(w, hc) > 0 || !REMEMBERS(w, hc) -> unidle()
  :: else ->
       if
       :: remembered && !holding -> skip
       :: else ->
            IDLE(w, nidle[w]) = hc; nidle[w]++;
            if
            :: nidle[w] > BOUND(w) ->
                 x = IDLE(w, 0); MEM(w, x) = M_INITIAL(w); DONE(w, x) = 0;
                 for (y : 1 .. nidle[w] - 1) { IDLE(w, y - 1) = IDLE(w, y) };
                 nidle[w]--; IDLE(w, nidle[w]) = 0; x = 0; y = 0
            :: else -> skip
            fi
       fi
  fi
}

/* Worker k restarts: it forgets every request and frees every slot. */
inline restart() {
  for (y : 0 .. HANDOFFS - 1) {
    MEM(k, y) = M_INITIAL(k); HELD(k, y) = 0; DONE(k, y) = 0; IDLE(k, y) = 0
  };
  nidle[k] = 0; y = 0;
  restarted[k] = 1; restarts++
}"""


def _process(options: System) -> str:
    choices = []
    places = range(_qmax(options) if not options.fifo else 1)
    channels = range(_CHANNELS if options.fifo else 1)
    handoffs = range(options.concurrency)
    injected = options.injected
    faulty = "!stopped && !calm"
    choices += [f"       :: !stopped && !started[{h}] -> mv = MV_START; hc = {h}" for h in handoffs]
    for c in channels:
        for p in places:
            here = f"q[{c}].n > {p}"
            m = f"q[{c}].m[{p}]"
            at = f"qc = {c}; qp = {p}"
            choices.append(
                f"       :: !stopped && {here} && DELIVERABLE({m}) -> mv = MV_DELIVER; {at}"
            )
            if options.worker_failures:
                choices.append(
                    f"       :: {faulty} && faults < MAX_FAULTS && {here} && IS_ACT({m}) && "
                    f"FAILABLE(KIND_OF({m})) -> mv = MV_FAIL; {at}"
                )
            if Fault.DUPLICATION in injected:
                choices.append(
                    f"       :: {faulty} && duplicated < BUDGET && {here} && DELIVERABLE({m}) -> "
                    f"mv = MV_DUPLICATE; {at}"
                )
            if Fault.LOSS in injected:
                choices.append(
                    f"       :: {faulty} && lost < BUDGET && {here} -> mv = MV_LOSE; {at}"
                )
    if Fault.RESTART in injected:
        choices += [
            f"       :: {faulty} && restarts < BUDGET && REMEMBERS_ANY({role}) -> "
            f"mv = MV_RESTART; k = {role}"
            for role in (0, 1)
        ]
    choices += [
        f"       :: {faulty} && faults < MAX_FAULTS && started[{h}] -> mv = MV_TERMINAL; "
        f"c_fact = {fact}; hc = {h}"
        for h in handoffs
        for fact in _TERMINAL
    ]
    body = "\n".join(choices)
    return f"""\
/* -- the system: one move at a time, chosen among those enabled, then made in one step -- */
active proctype system() {{
  d_step {{
    c_code {{
      handoff_state_flags(PanSource, state_flags, STATES);
      handoff_contract(PanSource, react_cells, role_cells, CONTRACT_TASKS, CONTRACT_MEMORIES);
    }};
    for (y : 0 .. HANDOFFS - 1) {{ MEM(0, y) = M_INITIAL_0; MEM(1, y) = M_INITIAL_1 }};
    y = 0
  }};
end:
  do
  :: atomic {{
       if
{body}
       :: !stopped && !calm -> mv = MV_CALM
       fi;
       d_step {{
         if
         :: mv == MV_START -> started[hc] = 1; c_kind = K_START; c_event = E_start
         :: mv == MV_DELIVER || mv == MV_FAIL -> dequeue(); deliver()
         :: mv == MV_DUPLICATE ->   /* delivered, and a copy sent again behind it */
              dequeue(); nm = qm; enqueue(); duplicated++; deliver()
         :: mv == MV_LOSE ->        /* lost; the runtime's timer reports TimedOut */
              dequeue(); lost++; term[hc] = 1;
              c_kind = K_FACT; c_fact = F_TimedOut; c_event = E_terminated
         :: mv == MV_RESTART -> restart()
         :: mv == MV_TERMINAL -> term[hc] = 1; c_kind = K_FACT; c_event = E_terminated; faults++
         :: mv == MV_CALM -> calm = 1
         fi;
         /* what moved, read back from a trail: the move, its message (or fact), its id (or
            the worker, or the handoff) */
         printf("MOVE %d %d %d\\n", mv, (mv == MV_TERMINAL -> c_fact : qm),
                (mv == MV_START || mv == MV_TERMINAL -> hc : k))
       }};
       d_step {{ if :: c_kind != 0 -> call_coordinator() :: else -> skip fi }};
       d_step {{ judge(); mv = 0; k = 0; qc = 0; qp = 0; qm = 0; hc = 0 }}
     }}
  od
}}"""


def _liveness() -> str:
    return """\
/* -- liveness.  Fairness: none needed.  Once calm the system only starts handoffs and
      delivers, and every delivery consumes a message, so a calm run is finite unless the
      chart loops; a calm run that ends (no move possible) with a handoff incomplete, or
      never ends, breaks W4.  W5: once calm after a terminal fact (reported, or a lost
      message's timeout), every run ends with every handoff it was reported for complete
      CANCELED.  W7: once calm with no fault so far (so the whole run is fault-free),
      every run ends with every handoff complete SUCCESS.  An early fact waits until the
      coordinator would take it. -- */
ltl W4 { [] (calm -> <> (QUIET && ALL_COMPLETE)) }
ltl W5 { [] ((calm && TERMINATED) -> <> (QUIET && TERMINATED_CANCELED)) }
ltl W7 { [] ((calm && FAULT_FREE) -> <> (QUIET && ALL_COMPLETE && ALL_SUCCESS)) }"""
