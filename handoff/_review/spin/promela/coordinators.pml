$sizes

#define HANDOFFS $handoffs      /* live at once, sharing the workers */
/* -- each handoff's coordinator: chart state, journal, payloads, lifecycle -- */
typedef Coordinator { $declared };
Coordinator co[HANDOFFS];
byte hc = 0;                 /* the handoff called or moved (0 between moves) */
$names
bit stopped = 0;             /* a crash or a cut-off run: the system stops */

$scratch
