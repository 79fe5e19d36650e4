"""The coordinator's part of a generated Promela model: the chart's step and the journal.

The chart is data: one `CELL` line per (state, event) ends the model, read off the compiled
table and `handoff._coordinator.binding.plan_for`, and one inline (`chart_step`) does what the
call's cell says.  Checks run before anything changes, and a step commits in the adapter's
order: journal, lifecycle, chart state, issued actions.  Since nothing else in the model is
the chart's, one compiled verifier serves every chart of the same order and size.
"""

from __future__ import annotations

from collections.abc import Sequence

from handoff._chart.vocabulary import ChartEvent, Check
from handoff._compile.table import CompiledChart
from handoff._coordinator.binding import Keep, Plan, plan_for
from handoff._review.environment import environment
from handoff._review.spin.vocabulary import (
    ACTIONS,
    COMPLETIONS,
    LIFECYCLE_EVENTS,
    OUTCOME_KINDS,
    REFUSALS,
    acknowledgement_event,
    action_name,
    event_name,
    numbered,
    payloads,
    refused_as,
)
from handoff._values.errors import HandoffError
from handoff._values.messages import HandoffAction
from handoff._values.timing import validate_transfer_timing

__all__ = [
    "CRASHES",
    "chart_cells",
    "chart_step",
    "coordinator",
    "journal_rules",
    "most_per_call",
]

CRASHES = (
    "a transfer is issued only after its delay was checked",
    "the timing check runs on a SourceHeld fact only",
)
"""The adapter's assertions the model stands in for: a trail's `CRASH` line names one.

The first is the adapter's own message; the second asserts without one, so its words here
say what it asserts (`isinstance(fact, HandoffFact.SourceHeld)`).
"""


def journal_rules() -> str:
    """The journal's rules, the payload checks and how an action is issued."""
    acks = [
        f"  :: issued[c_id] == {action_name(action)} && c_out == O_{kind.value} -> "
        f"c_event = {event_name(acknowledgement_event(action, kind))}"
        for action in ACTIONS
        if action is not HandoffAction.Complete
        for kind in OUTCOME_KINDS
        if acknowledgement_event(action, kind) is not ChartEvent.MISMATCHED_OUTCOME
    ]
    return "\n".join(
        [
            *_refusals(),
            "",
            "/* -- the journal's rules (handoff._coordinator.binding): an outcome's event -- */",
            "inline classify_outcome() {",
            "  if",
            "  :: issued[c_id] == 0 -> c_event = E_unknown_action",
            "  :: issued[c_id] != 0 && recorded[c_id] == c_out -> c_event = E_duplicate_outcome",
            "  :: issued[c_id] != 0 && recorded[c_id] != 0 && recorded[c_id] != c_out ->",
            "       c_event = E_conflicting_outcome",
            "  :: issued[c_id] != 0 && recorded[c_id] == 0 ->",
            "       if",
            *("  " + line for line in acks),
            "       :: else -> c_event = E_mismatched_outcome",
            "       fi",
            "  fi",
            "}",
            "",
            "inline record_lifecycle(EVENT) {",
            "  if",
            "  :: nlife < LIFECYCLE_SIZE -> lifecycle[nlife] = EVENT; nlife++",
            "  :: else -> stopped = 1; Bound_broken = 1",
            "  fi",
            "}",
            "",
            "inline clear_journal() {",
            "  for (i : 0 .. LOG_SIZE - 1) { issued[i] = 0; delay_of[i] = 0; recorded[i] = 0 }",
            "}",
            "",
            "/* Issue an action: journal it (or complete, clearing the journal), hand it out. */",
            "inline issue(ACTION, COMPLETION) {",
            "  if",
            "  :: result == CRASHED -> skip",
            "  :: ACTION == A_StartTransfer && delay == 0 ->",
            "       result = CRASHED;   /* the adapter's assertion, in its own words: */",
            f'       printf("CRASH {CRASHES[0]}\\n")',
            "  :: else ->",
            "       out[nout] = ACTION; out_id[nout] = next_id; nout++;",
            "       if",
            "       :: COMPLETION != 0 ->",
            "            completion = COMPLETION;",
            "            if",
            "            :: COMPLETION == C_SUCCESS -> record_lifecycle(L_Completed)",
            "            :: else -> skip",
            "            fi;",
            "            clear_journal()",
            "       :: else -> issued[next_id] = ACTION; delay_of[next_id] = delay",
            "       fi;",
            "       next_id++",
            "  fi",
            "}",
            "",
            "/* The payload checks a step runs, in order, before anything changes. */",
            "inline check_transfer_timing_is_valid() {",
            "  if",
            "  :: result != TAKEN -> skip",
            "  :: c_fact != F_SourceHeld ->",
            f'       result = CRASHED; printf("CRASH {CRASHES[1]}\\n")',
            "  :: c_fact == F_SourceHeld && timing_valid(c_timing) -> skip",
            "  :: else -> result = REFUSED; refusal = timing_refusal(c_timing)",
            "  fi",
            "}",
            "",
            "inline check_transfer_delay_is_valid() {",
            "  if",
            "  :: result != TAKEN -> skip",
            "  :: else ->",
            "       delay_of_pair();",
            "       if",
            "       :: result == REFUSED && (D_T == 0 || D_N == 0) ->",
            "            refusal = R_UNPLANNED_TRANSFER",
            "       :: result == REFUSED && D_T != 0 && D_N != 0 -> refusal = R_INVALID_DELAY",
            "       :: else -> skip",
            "       fi",
            "  fi",
            "}",
        ]
    )


def _refusals() -> list[str]:
    """The refusal kinds, and which one the adapter's timing check makes of each timing."""
    kinds = [f"     {name}: {kind.__name__} '{phrase}'" for name, kind, phrase in REFUSALS]
    cases = []
    for number, timing in enumerate(payloads(environment(), 0.0).timings, start=1):
        try:
            validate_transfer_timing(timing)
        except HandoffError as error:
            cases.append(f"  (t == {number} -> R_{refused_as(error)} : \\")
    return [
        "/* -- refusals: the error a refused call raises, by class and phrase:",
        *kinds,
        "   timing_refusal(t): what the adapter's timing check refuses timing t with -- */",
        *numbered([name for name, _, _ in REFUSALS], "R_"),
        "byte refusal;               /* scratch: the refusal of a refused call */",
        "#define timing_refusal(t) \\",
        *cases,
        "  0" + ")" * len(cases),
    ]


_CELL_FIELDS = ("kind", "refusal", "stays", "target", "keep", "lifecycle")
"""The first fields of a `CELL` line, after its state and event; then one per check a step
may run (`Check`, in order), how many actions it issues, and each action with its completion."""

_DROPPED, _REFUSED, _TAKEN = range(3)


def most_per_call(chart: CompiledChart) -> int:
    """The most actions one step of `chart` issues, at least 1: MOST_PER_CALL, the number of
    action slots in each cell."""
    return max(max(len(step.effects) for step in chart.steps()), 1)


_REFUSAL_NAMES = tuple(name for name, _, _ in REFUSALS)
"""The refusals as the model numbers them (`R_<name>`, from 1)."""


def chart_step() -> str:
    """The chart's step, the same for every chart: it reads the cell of (state, event) off the
    `CELL` lines that end the model (`chart_cells`), then checks and commits as that cell says.

    The chart is data, not code, so that one compiled verifier serves every chart whose model
    is otherwise the same (see `handoff._review.spin.run`)."""
    checks = [
        f"           :: cell[CF_CHECK + cell_k] == {number} -> check_{check.value}()"
        for number, check in enumerate(Check, start=1)
    ]
    fields = [f"#define CF_{name.upper()} {number}" for number, name in enumerate(_CELL_FIELDS)]
    return "\n".join(
        [
            "/* -- the chart, as data: the CELL lines at the end of this file, one per (state,",
            "      event); `pan` reads them the first time a step needs one -- */",
            f"#define NCHECKS {len(Check)}",
            *fields,
            f"#define CF_CHECK {len(_CELL_FIELDS)}",
            "#define CF_ISSUED (CF_CHECK + NCHECKS)",
            "#define CF_ACTIONS (CF_ISSUED + 1)   /* then action, completion; action, ... */",
            "#define NCELL (CF_ACTIONS + 2 * MOST_PER_CALL)",
            "#define CELL_ACTION cell[CF_ACTIONS + 2 * cell_k]",
            "#define CELL_COMPLETION cell[CF_ACTIONS + 2 * cell_k + 1]",
            f"#define CELL_DROPPED {_DROPPED}",
            f"#define CELL_REFUSED {_REFUSED}",
            f"#define CELL_TAKEN {_TAKEN}",
            f"#define KEEP_OUTCOME {Keep.OUTCOME}",
            f"#define KEEP_TIMING {Keep.TIMING}",
            f"#define KEEP_TOKENS {Keep.TOKENS}",
            "byte cell[NCELL];            /* scratch: the cell of this call's step */",
            "byte cell_s, cell_e, cell_k;  /* scratch: its state and event, and a counter */",
            "",
            _CELLS_READER,
            "",
            "inline chart_step() {",
            "  cell_s = state; cell_e = c_event;",
            "  c_code {",
            "    int x; unsigned char *at = handoff_cell(PanSource, now.cell_s, now.cell_e);",
            "    for (x = 0; x < NCELL; x++) now.cell[x] = at[x];",
            "  };",
            "  if",
            "  :: cell[CF_KIND] == CELL_DROPPED -> result = DROPPED",
            "  :: cell[CF_KIND] == CELL_REFUSED -> result = REFUSED; refusal = cell[CF_REFUSAL]",
            "  :: cell[CF_KIND] == CELL_TAKEN ->",
            "       for (cell_k : 0 .. NCHECKS - 1) {   /* checks first, in the chart's order */",
            "         if",
            *checks,
            "         :: else -> skip",
            "         fi",
            "       };",
            "       if",
            "       :: result == TAKEN ->   /* journal, lifecycle, chart state, issued actions */",
            "            if",
            "            :: cell[CF_KEEP] == KEEP_OUTCOME -> recorded[c_id] = c_out",
            "            :: cell[CF_KEEP] == KEEP_TIMING -> timing = c_timing",
            "            :: cell[CF_KEEP] == KEEP_TOKENS -> tokens = c_tokens",
            "            :: else -> skip",
            "            fi;",
            "            if :: cell[CF_LIFECYCLE] != 0 -> record_lifecycle(cell[CF_LIFECYCLE])",
            "            :: else -> skip fi;",
            "            if :: !cell[CF_STAYS] -> state = cell[CF_TARGET] :: else -> skip fi;",
            "            for (cell_k : 0 .. MOST_PER_CALL - 1) {",
            "              if",
            "              :: cell_k < cell[CF_ISSUED] -> issue(CELL_ACTION, CELL_COMPLETION)",
            "              :: else -> skip",
            "              fi",
            "            }",
            "       :: else -> skip",
            "       fi",
            "  fi;",
            "  for (cell_k : 0 .. NCELL - 1) { cell[cell_k] = 0 };",
            "  cell_k = 0; cell_s = 0; cell_e = 0",
            "}",
        ]
    )


_CELLS_READER = r"""c_decl {
/* The chart's cells, read from the CELL lines of the model's own file (`source`), and each
   state's flags from its STATE line, if the model has them (0 if not). */
unsigned char *handoff_cells = 0, *handoff_flags = 0;
int handoff_states = 0, handoff_events = 0;
/* The workers' contract, if the model has one: REACT lines (role, task, memory, then the
   memory, reply and slots it leads to) and ROLE lines (role, then its initial memory,
   whether its memory is bounded, and the bound). */
int handoff_reacts = 0, handoff_react[1024][6], handoff_role[2][3];

void handoff_load(const char *source) {
  char line[1024]; int cells = 0, x; FILE *file = fopen(source, "r");
  if (!file) { printf("pan: cannot read the chart's cells from %s\n", source); exit(1); }
  while (fgets(line, sizeof line, file)) {
    char *at = line + 5; long s_, e_;
    if (!handoff_cells && sscanf(line, "CHART %d %d", &handoff_states, &handoff_events) == 2) {
      handoff_cells = calloc((size_t) (handoff_states * handoff_events), NCELL);
      handoff_flags = calloc((size_t) handoff_states, 1);
    } else if (handoff_cells && strncmp(line, "CELL ", 5) == 0) {
      s_ = strtol(at, &at, 10); e_ = strtol(at, &at, 10);
      if (s_ < 0 || s_ >= handoff_states || e_ < 0 || e_ >= handoff_events) break;
      for (x = 0; x < NCELL; x++)
        handoff_cells[(s_ * handoff_events + e_) * NCELL + x] = strtol(at, &at, 10);
      cells++;
    } else if (handoff_cells && sscanf(line, "STATE %ld %d", &s_, &x) == 2) {
      if (s_ >= 0 && s_ < handoff_states) handoff_flags[s_] = x;
    } else if (strncmp(line, "REACT ", 6) == 0) {
      if (handoff_reacts == 1024) {
        printf("pan: %s holds more REACT lines than a contract has\n", source); exit(1);
      }
      at = line + 6;
      for (x = 0; x < 6; x++) handoff_react[handoff_reacts][x] = strtol(at, &at, 10);
      handoff_reacts++;
    } else if (strncmp(line, "ROLE ", 5) == 0) {
      s_ = strtol(at, &at, 10);
      if (s_ >= 0 && s_ < 2) for (x = 0; x < 3; x++) handoff_role[s_][x] = strtol(at, &at, 10);
    }
  }
  fclose(file);
  if (!handoff_cells) { printf("pan: %s holds no CHART line: regenerate it\n", source); exit(1); }
  if (cells != handoff_states * handoff_events) {
    printf("pan: %s holds %d of the chart's cells, not %d\n", source, cells,
      handoff_states * handoff_events);
    exit(1);
  }
}

unsigned char *handoff_cell(const char *source, int s, int e) {
  if (!handoff_cells) handoff_load(source);
  if (s >= handoff_states || e >= handoff_events) {
    printf("pan: no cell for state %d and event %d\n", s, e); exit(1);
  }
  return handoff_cells + (s * handoff_events + e) * NCELL;
}

/* Copy each state's flags into `into`, which holds `states` of them. */
void handoff_state_flags(const char *source, unsigned char *into, int states) {
  int s;
  if (!handoff_cells) handoff_load(source);
  if (states != handoff_states) {
    printf("pan: %s names %d states, the model %d\n", source, handoff_states, states); exit(1);
  }
  for (s = 0; s < states; s++) into[s] = handoff_flags[s];
}

/* Copy the contract's REACT cells into `into` (memory, reply, slots for each role, task and
   memory: `tasks` and `memories` of them) and each ROLE's three numbers into `roles`. */
void handoff_contract(const char *source, unsigned char *into, unsigned char *roles,
    int tasks, int memories) {
  int n, x, *row;
  if (!handoff_cells) handoff_load(source);
  for (n = 0; n < handoff_reacts; n++) {
    row = handoff_react[n];
    if (row[0] < 0 || row[0] > 1 || row[1] < 0 || row[1] >= tasks || row[2] < 0
        || row[2] >= memories) {
      printf("pan: %s: REACT line %d names no cell of the contract\n", source, n + 1); exit(1);
    }
    for (x = 0; x < 3; x++)
      into[((x * 2 + row[0]) * tasks + row[1]) * memories + row[2]] = row[3 + x];
  }
  for (n = 0; n < 2; n++) for (x = 0; x < 3; x++) roles[n * 3 + x] = handoff_role[n][x];
}
}"""


def chart_cells(chart: CompiledChart, flags: Sequence[tuple[int, str]] = ()) -> str:
    """The chart as data, to end the model with: a comment holding one `CELL` line per
    (state, event), each named in words after its numbers; and, with `flags` (each state's
    number and words, or 0 and ""), one `STATE` line per state holding its flags."""
    most = most_per_call(chart)
    header = " ".join(f"<{name}>" for name in _CELL_FIELDS)
    lines = [
        "/* -- the chart's cells: what chart_step reads (it parses this comment's lines).",
        f"   CELL <state> <event> {header} <check>*{len(Check)} <issued> (<action> <completion>)*"
        f"{most}",
        f"   kind: {_DROPPED} dropped, {_REFUSED} refused, {_TAKEN} taken; names are numbered "
        "as the #defines above",
        f"CHART {len(chart.states)} {len(ChartEvent)}",
    ]
    for state in range(len(chart.states)):
        for event in ChartEvent:
            step = chart.step(state, event)
            numbers, words = _cell(chart, plan_for(step), stays=step.target == state, most=most)
            lines.append(f"CELL {state} {event.index} {numbers}   {chart.states[state]}, "
                         f"{event.value}: {words}")  # fmt: skip
    for state, (number, words) in enumerate(flags):
        lines.append(f"STATE {state} {number}   {chart.states[state]}: {words or 'no flag'}")
    return "\n".join([*lines, "*/"])


def _cell(chart: CompiledChart, move: Plan, *, stays: bool, most: int) -> tuple[str, str]:
    """One cell's numbers (after its state and event), and what it does in words."""
    fields = [0] * (len(_CELL_FIELDS) + len(Check) + 1 + 2 * most)
    checks, issued = len(_CELL_FIELDS), len(_CELL_FIELDS) + len(Check)
    if move.ignored:
        words = "dropped"
    elif move.refusal is not None:
        refusal = _REFUSAL_NAMES.index(move.refusal.name) + 1
        fields[:checks] = _named(kind=_REFUSED, refusal=refusal)
        words = f'refused, "{move.refusal.phrase}"'
    else:
        fields[:checks] = _named(
            kind=_TAKEN,
            stays=int(stays),
            target=move.target,
            keep=move.keep,
            lifecycle=_lifecycle(move),
        )
        for slot, check in enumerate(move.checks):
            fields[checks + slot] = list(Check).index(check) + 1
        fields[issued] = len(move.issues)
        said = [f"checks {check.value}" for check in move.checks]
        said += [] if stays else [f"to {chart.states[move.target]}"]
        for slot, (make, completion) in enumerate(move.issues):
            fields[issued + 1 + 2 * slot] = ACTIONS.index(make) + 1
            done = 0 if completion is None else COMPLETIONS.index(completion) + 1
            fields[issued + 2 + 2 * slot] = done
            said.append(f"issues {make.__name__}" + ("" if done == 0 else f" ({completion})"))
        words = "taken" + "".join(f", {each}" for each in said)
    return " ".join(map(str, fields)), words


def _named(**given: int) -> list[int]:
    """A cell's first fields, in `_CELL_FIELDS`' order: those `given` by name, else 0."""
    return [given.get(name, 0) for name in _CELL_FIELDS]


def _lifecycle(move: Plan) -> int:
    return 0 if move.lifecycle is None else LIFECYCLE_EVENTS.index(move.lifecycle) + 1


def coordinator() -> str:
    """The adapter: a call becomes one chart event, the chart takes the step."""
    return "\n".join(
        [
            "/* -- the adapter: the call becomes one chart event, the chart takes the step -- */",
            "inline coordinator_step() {",
            "  if",
            "  :: c_foreign -> result = REFUSED; refusal = R_FOREIGN_FACT",
            "  :: !c_foreign ->",
            "       if",
            "       :: c_kind == K_OUTCOME -> classify_outcome()",
            "       :: else -> skip",
            "       fi;",
            "       chart_step()",
            "  fi",
            "}",
        ]
    )
