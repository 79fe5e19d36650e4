/* -- S6 and the cut: what a call changed, judged against the SPEC's answer -- */
#define MAX_STALLS $max_stalls
#define SPEC_DROPS (ans == ANS_DROP)
byte stalls = 0;             /* changes of the configuration without progress, this run */

/* scratch: the configuration before the call, and what the call did to it */
byte s_state, s_next_id, s_timing, s_tokens, s_nlife, s_completion;
byte s_issued[LOG_SIZE];
byte s_delay_of[LOG_SIZE];
byte s_recorded[LOG_SIZE];
byte s_lifecycle[LIFECYCLE_SIZE];
bit s_changed, s_journaled, s_fresh, s_known;
byte s_k, s_m;
