/* -- what the environment has seen (contract §4 as the environment can tell it) -- */
byte log[LOG_SIZE];          /* action kinds received, by id */
byte nlog = 0;
byte received = 0;           /* the action kinds ever received, one bit each */
#define SPEC_ACTIVE 0
#define SPEC_CLEANING 1
#define SPEC_COMPLETE 2
byte spec_mode = SPEC_ACTIVE;
byte spec_journal = 0;       /* the SPEC's journal: the ids received since the last Complete */
byte spec_outcome[LOG_SIZE]; /* the outcome kind the SPEC recorded for each journaled id */
bit seen_started, seen_submitted, seen_source_held, seen_accepted, seen_reserved;
bit seen_scheduled, seen_transferred, seen_activated, seen_source_freed;
bit seen_destination_freed;
bit seen_succeeded;          /* the latest completion was a SUCCESS */
byte spec_timing = 0;        /* the timing class and tokens class the SPEC kept */
byte spec_tokens = 0;
byte spec_life[LIFECYCLE_SIZE];   /* the lifecycle the SPEC records for the calls taken */
byte spec_nlife = 0;

#define FIRST $first
#define SECOND $second
#define READY $ready   /* the first owner's fact was taken */
#define EVER(A) ((received >> (A - 1)) & 1)
#define DONE(O) (O == O_Applied || O == O_Noop)
#define IS_CANCEL(A) (A == A_CancelSource || A == A_CancelDestination)
#define FORWARD(A) (A == A_SubmitPrefill || A == A_ReserveDestination || \
  A == A_StartTransfer || A == A_ActivateDestination || A == A_ReleaseSource)
#define FITS(A, O) ((A == A_SubmitPrefill && O == O_Submitted) || \
  (A == A_ReserveDestination && O == O_Accepted) || (A == A_StartTransfer && O == O_Scheduled) || \
  (A == A_ActivateDestination && O == O_Applied) || \
  ((A == A_ReleaseSource || A == A_CancelSource || A == A_CancelDestination) && DONE(O)))
#define IN_JOURNAL(ID) (ID >= spec_journal && ID < nlog && log[ID] != A_Complete)
#define SOURCE_ENGAGED (EVER(A_SubmitPrefill) && !seen_source_freed)
#define DESTINATION_ENGAGED (EVER(A_ReserveDestination) && !seen_destination_freed)
#define COMPLETED (spec_mode == SPEC_COMPLETE)
#define COMPLETED_CANCELED (COMPLETED && !seen_succeeded)

/* scratch, zeroed after every call */
#define ANS_TAKE 1
#define ANS_DROP 2
#define ANS_REFUSE 3
byte ans, ans_refusal;       /* the SPEC's answer, and its refusal */
bit ans_payload;             /* the refusal judges the payload (P1), not the order of calls */
byte pt, pn, k, found, due0, due1, ndue, got0, got1, ngot;
