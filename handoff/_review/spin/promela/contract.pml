/* -- the workers' contract, $name, tabulated: r, t, m -- */
$tasks
$memories
$replies
#define CONTRACT_TASKS $ntasks
#define CONTRACT_MEMORIES $nmemories
/* the contract's cells (its REACT lines, at the end of this file) and each role's
   initial memory, whether it is bounded, and the bound (its ROLE lines) */
hidden byte react_cells[3 * 2 * CONTRACT_TASKS * CONTRACT_MEMORIES];
hidden byte role_cells[6];
#define CONTRACT_AT(x, r, t, m) ((((x) * 2 + (r)) * CONTRACT_TASKS + (t)) * CONTRACT_MEMORIES + (m))
#define REACT_MEMORY(r, t, m) react_cells[CONTRACT_AT(0, r, t, m)]
#define REACT_REPLY(r, t, m) react_cells[CONTRACT_AT(1, r, t, m)]
$slots
#define REACT_SLOTS(r, t, m) react_cells[CONTRACT_AT(2, r, t, m)]
#define M_INITIAL_0 role_cells[0]
#define M_INITIAL_1 role_cells[3]
#define M_INITIAL(W) role_cells[(W) * 3]
/* a memory bounded to K idle requests (tombstone:K): BOUNDED, and K */
#define BOUNDED(W) role_cells[(W) * 3 + 1]
#define BOUND(W) role_cells[(W) * 3 + 2]
#define DESTINATION_WORK(A) (A == A_ReserveDestination || A == A_ActivateDestination || A == A_CancelDestination)
#define ROLE(A) (DESTINATION_WORK(A) -> 1 : 0)
#define TASK(A) ((A == A_SubmitPrefill || A == A_ReserveDestination) -> T_TAKE : (A == A_StartTransfer -> T_TRANSFER : (A == A_ActivateDestination -> T_ACTIVATE : (A == A_ReleaseSource -> T_RELEASE : T_CANCEL))))
#define FITTING(A) (A == A_SubmitPrefill -> O_Submitted : (A == A_ReserveDestination -> O_Accepted : (A == A_StartTransfer -> O_Scheduled : O_Applied)))
#define OUTCOME(A, Y) (Y == Y_DONE -> FITTING(A) : (Y == Y_NOOP -> O_Noop : (Y == Y_FAILED -> O_Failed : 0)))
#define HAS_FACT(A) (A == A_SubmitPrefill || A == A_ReserveDestination || A == A_StartTransfer)
#define FAILABLE(A) (TASK(A) == T_TAKE || TASK(A) == T_TRANSFER || TASK(A) == T_ACTIVATE)
#define CLEANUP(A) (A == A_ReleaseSource || A == A_CancelSource || A == A_CancelDestination)
