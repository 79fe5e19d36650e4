/* -- the runtime: what it issued, what is in flight, what it was told -- */
#define MAX_FAULTS $max_faults
#define BUDGET $budget            /* of each fault --faults injects: a handoff's duplicates and losses, the run's restarts */
#define CHANNELS $channels          /* $delivery */
#define QMAX $qmax
#define ON_SEND $on_send
#define ON_SEND_KIND(A) ($on_send_kinds)
#define COPIES $copies
/* A message: its handoff times 256, plus its action id times 16, plus what it
   carries: the action itself, the work's fact, a Failed fact (the worker's word for
   work acknowledged on send that it did not do), or an outcome kind. */
#define G_ACT $g_act
#define G_FACT $g_fact
#define G_FAILED $g_failed
#define G_OUT $g_out              /* G_OUT + O_<kind>: an outcome */
#define MSG(H, K, G) ((H) * $handoff_code + (K) * 16 + (G))
#define HANDOFF_OF(M) ((M) / $handoff_code)
#define ID(M) (((M) / 16) % 16)
#define WHAT(M) ((M) % 16)
#define IS_ACT(M) (WHAT(M) == G_ACT)
#define IS_FACT(M) (WHAT(M) == G_FACT || WHAT(M) == G_FAILED)
typedef Queue { $code m[QMAX]; byte n };
Queue q[CHANNELS];       /* in flight: one sorted multiset, or each worker's four channels in order */
byte inflight[HANDOFFS]; /* how many of each handoff's messages are in flight */
/* Each worker's memory of each request (a request is a handoff: worker w's of
   request r is at w * HANDOFFS + r): what it remembers, the KV slots it holds, and
   (bit k) that it did (or failed) action k, as long as it remembers the request. */
byte mem[2 * HANDOFFS];
byte held[2 * HANDOFFS];
short done[2 * HANDOFFS];
#define MEM(W, R) mem[(W) * HANDOFFS + (R)]
#define HELD(W, R) held[(W) * HANDOFFS + (R)]
#define DONE(W, R) done[(W) * HANDOFFS + (R)]
#define SLOT_BOUND $slot_bound      /* --slots; 0: unbounded */
#define REMEMBERS(W, R) (MEM(W, R) != M_INITIAL(W) || HELD(W, R) > 0)
#define REMEMBERS_ANY(W) ($remembers_any)
#define HELD_ALL(W) ($held_all)
/* The requests each worker remembers idle (holding no slot for them), the longest
   idle first: kept only by a worker whose memory is bounded (BOUNDED). */
byte idle[2 * HANDOFFS];
byte nidle[2];
#define IDLE(W, P) idle[(W) * HANDOFFS + (P)]
byte kind_of[HANDOFFS * LOG_SIZE];  /* each handoff's action issued with each id; never cleared */
bit performed[HANDOFFS * LOG_SIZE];
#define KIND(H, K) kind_of[(H) * LOG_SIZE + (K)]
#define KIND_OF(M) KIND(HANDOFF_OF(M), ID(M))
#define PERFORMED(H, K) performed[(H) * LOG_SIZE + (K)]
bit told[2 * HANDOFFS];  /* the coordinator of request r was told worker w freed its slot */
#define TOLD(W, R) told[(W) * HANDOFFS + (R)]
bit restarted[2];        /* this worker restarted (--faults crash) */
bit started[HANDOFFS];
bit term[HANDOFFS];      /* a terminal fact was reported for the handoff (W5) */
byte faults = 0;
byte duplicated[HANDOFFS], lost[HANDOFFS];  /* each handoff's messages duplicated, lost */
byte restarts = 0;
bit calm = 0;                /* no more faults: deliveries only (W4, W5, W7) */
bit W1_broken, W2_broken, W3_broken, W6_broken, Bound_broken, Errors_broken;
byte k, w, qc, qp, x, y, freeing, remembered, holding;
$code qm, nm;
#define STATES $states
hidden byte state_flags[STATES];   /* each chart state's, from its STATE line */
#define COMPLETE(H) (state_flags[co[H].h_state] & $complete_flag)
#define QUIET ($quiet)
/* handoff H complete, with nothing of it in flight (W1) */
#define ENDED(H) (started[H] && COMPLETE(H) && inflight[H] == 0)
#define ALL_COMPLETE ($all_complete)
#define ALL_SUCCESS ($all_success)
#define TERMINATED ($terminated)
/* every handoff a terminal fact was reported for is complete CANCELED (W5) */
#define TERMINATED_CANCELED ($terminated_canceled)
/* no fault so far: no terminal fact, no failed work, nothing injected (W7) */
#define FAULT_FREE (faults == 0 && $none_struck && restarts == 0 && !TERMINATED)
$early
