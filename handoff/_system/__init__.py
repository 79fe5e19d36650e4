"""The system around coordinators, written once: the calls a runtime makes into a coordinator
(`call`), the messages it carries and when it acknowledges (`runtime`), the workers and their
contracts (`workers`, `worker_state`), the faults (`faults`) and the configuration naming all
of them (`config`); the properties judged of it (`properties`), what a step breaks
(`judgments`) and when a run never ends (`bound`).  Pure: no I/O, no scheduler; the one
command-line module (`cli`) only translates the world's options into a `System`.  The review
explores these steps, the simulation samples them and replay follows them."""
