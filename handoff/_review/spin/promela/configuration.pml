/* -- the coordinator's configuration: chart state, journal, payloads kept, lifecycle -- */
byte state = 0;
byte next_id = 0;
byte issued[LOG_SIZE];       /* action kind by id; 0: not in the journal */
byte delay_of[LOG_SIZE];     /* a StartTransfer's delay class */
byte recorded[LOG_SIZE];     /* outcome kind recorded by id; 0: none yet */
byte timing = 0;             /* timing class kept from SourceHeld */
byte tokens = 0;             /* tokens class kept from DestinationReserved */
byte lifecycle[LIFECYCLE_SIZE];
byte nlife = 0;
byte completion = 0;
bit stopped = 0;             /* a crash or a cut-off run: the environment stops */
