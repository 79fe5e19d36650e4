/* Contract §3: validate_transfer_timing's refusal of timing class t (0: valid),
   and whether a valid timing t with tokens class n makes an unusable delay. */
#define spec_timing_refusal(t) \
  $timings
  0$closing
#define spec_delay_unusable(t, n) ($unusable)
