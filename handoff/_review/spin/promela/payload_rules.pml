/* -- payload classes, judged by the adapter's own checks:
     $timing_notes
     $token_notes
     fallback transfer delay: $fallback ms -- */
#define timing_valid(t) ($timings)
#define delay_valid(t, n) ($pairs)
/* a transfer's delay is computed from this fact's payload, else the kept one */
#define D_T (c_fact == F_SourceHeld -> c_timing : timing)
#define D_N (c_fact == F_DestinationReserved -> c_tokens : tokens)
inline delay_of_pair() {
  if
  $delays
  :: else -> result = REFUSED   /* no delay yet, or an invalid one */
  fi
}
