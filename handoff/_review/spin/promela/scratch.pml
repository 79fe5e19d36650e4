/* -- scratch: one call, and what the coordinator did with it.  Every call runs in one
      deterministic step (d_step) and zeroes these at its end, so they never tell two
      states apart. -- */
byte c_kind, c_fact, c_event, c_timing, c_tokens, c_id, c_out;
byte c_usable, c_terminal, c_foreign;
byte result, delay, nout, i, j;
byte out[MOST_PER_CALL];
byte out_id[MOST_PER_CALL];
