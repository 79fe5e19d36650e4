/* -- names: chart events, action kinds, outcome kinds, fact kinds,
      lifecycle events and completions -- */
$names
#define K_START 1
#define K_FACT 2
#define K_OUTCOME 3
#define TAKEN 0   /* what a call did: taken, dropped, refused or crashed */
#define DROPPED 1
#define REFUSED 2
#define CRASHED 3
