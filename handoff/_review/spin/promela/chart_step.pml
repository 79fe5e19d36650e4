/* -- the chart, as data: the CELL lines at the end of this file, one per (state,
      event); `pan` reads them the first time a step needs one -- */
#define NCHECKS $nchecks
$fields
#define CF_CHECK $cf_check
#define CF_ISSUED (CF_CHECK + NCHECKS)
#define CF_ACTIONS (CF_ISSUED + 1)   /* then action, completion; action, ... */
#define NCELL (CF_ACTIONS + 2 * MOST_PER_CALL)
#define CELL_ACTION cell[CF_ACTIONS + 2 * cell_k]
#define CELL_COMPLETION cell[CF_ACTIONS + 2 * cell_k + 1]
#define CELL_DROPPED $dropped
#define CELL_REFUSED $refused
#define CELL_TAKEN $taken
#define KEEP_OUTCOME $keep_outcome
#define KEEP_TIMING $keep_timing
#define KEEP_TOKENS $keep_tokens
byte cell[NCELL];            /* scratch: the cell of this call's step */
byte cell_s, cell_e, cell_k;  /* scratch: its state and event, and a counter */

c_decl {
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
}

inline chart_step() {
  cell_s = state; cell_e = c_event;
  c_code {
    int x; unsigned char *at = handoff_cell(PanSource, now.cell_s, now.cell_e);
    for (x = 0; x < NCELL; x++) now.cell[x] = at[x];
  };
  if
  :: cell[CF_KIND] == CELL_DROPPED -> result = DROPPED
  :: cell[CF_KIND] == CELL_REFUSED -> result = REFUSED; refusal = cell[CF_REFUSAL]
  :: cell[CF_KIND] == CELL_TAKEN ->
       for (cell_k : 0 .. NCHECKS - 1) {   /* checks first, in the chart's order */
         if
           $checks
         :: else -> skip
         fi
       };
       if
       :: result == TAKEN ->   /* journal, lifecycle, chart state, issued actions */
            if
            :: cell[CF_KEEP] == KEEP_OUTCOME -> recorded[c_id] = c_out
            :: cell[CF_KEEP] == KEEP_TIMING -> timing = c_timing
            :: cell[CF_KEEP] == KEEP_TOKENS -> tokens = c_tokens
            :: else -> skip
            fi;
            if :: cell[CF_LIFECYCLE] != 0 -> record_lifecycle(cell[CF_LIFECYCLE])
            :: else -> skip fi;
            if :: !cell[CF_STAYS] -> state = cell[CF_TARGET] :: else -> skip fi;
            for (cell_k : 0 .. MOST_PER_CALL - 1) {
              if
              :: cell_k < cell[CF_ISSUED] -> issue(CELL_ACTION, CELL_COMPLETION)
              :: else -> skip
              fi
            }
       :: else -> skip
       fi
  fi;
  for (cell_k : 0 .. NCELL - 1) { cell[cell_k] = 0 };
  cell_k = 0; cell_s = 0; cell_e = 0
}
