/* -- the environment's calls, numbered: a trail's CALL n is review call n -- */
#define NCALLS $ncalls
#define FIRST_OUTCOME $first_outcome
#define OUTCOMES_PER_ID $outcomes_per_id
inline decode() {
  c_kind = K_START; c_fact = 0; c_event = E_start; c_timing = 0; c_tokens = 0;
  c_usable = 1; c_terminal = 0; c_foreign = 0; c_id = 0; c_out = 0;
  if
  :: c == 0 -> skip   /* start() */
  $facts
  :: c >= FIRST_OUTCOME ->
       c_kind = K_OUTCOME; c_id = (c - FIRST_OUTCOME) / OUTCOMES_PER_ID;
       if
       $kinds
       fi
  fi
}
