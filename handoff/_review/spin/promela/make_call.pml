/* Zero the scratch, so that states differ only by what the coordinator and watch keep. */
inline scrub() {
  $resets;
  c_kind = 0; c_fact = 0; c_event = 0; c_timing = 0; c_tokens = 0; c_id = 0; c_out = 0;
  c_usable = 0; c_terminal = 0; c_foreign = 0; result = 0; refusal = 0; delay = 0; nout = 0;
  j = 0; ans = 0; ans_refusal = 0; ans_payload = 0; pt = 0; pn = 0; k = 0;
  found = 0; due0 = 0; due1 = 0; ndue = 0; got0 = 0; got1 = 0; ngot = 0;
  for (i : 0 .. MOST_PER_CALL - 1) { out[i] = 0; out_id[i] = 0 };
  i = 0
}

/* A call is two deterministic steps (Spin bounds the length of one d_step): the
   coordinator takes call c, then the monitors judge what it did. */
inline make_call() {
  printf("CALL %d\n", c);
  decode();
  result = TAKEN; delay = 0; nout = 0;
  snapshot();
  coordinator_step()
}

inline judge_call() {
  if
  :: result == CRASHED -> Errors_broken = 1; stopped = 1   /* not a HandoffError */
  :: result == REFUSED -> observe()
  :: result == TAKEN || result == DROPPED -> observe(); NOTE_UNUSABLE
  fi;
  $asserts
  scrub()
}
