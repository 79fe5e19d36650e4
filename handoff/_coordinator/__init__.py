"""The coordinator, and what copies, snapshots, records and inspects one."""
