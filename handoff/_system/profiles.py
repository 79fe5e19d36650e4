"""Runtime profiles: how a runtime around the coordinators behaves, bundled under one name
(`--runtime NAME`), so that a review or a simulation assumes the runtime one runs.

A profile says when the runtime acknowledges each kind of action, whether it holds back a
fact that arrives before the acknowledgement it follows, whether a worker takes one action at
a time, whether the destination answers a repeated action from its cache of outcomes, how its
tombstones are bounded and whether they expire, and whether it cleans up outside the chart
(ending a session without telling the coordinator, then cancelling on its own).  Each setting
is one `System` field, scheduled by the review and the simulation like any other; the profile
only fills them in, and an explicit option (`--acknowledge`, `--workers`) overrides its value.

Three ship: `offline` (the serving simulator's offline replay, the command line's default),
`live` (its live mocker) and `eager` (what reviews assumed before profiles: every take and
transfer acknowledged as it is sent, which no upstream runtime does; `--runtime eager`
reproduces earlier verdicts).  One's own is `MODULE:NAME`, a `RuntimeProfile`, loaded as
`find_contract` loads a worker contract.
"""

from __future__ import annotations

from collections.abc import Collection

import attrs

from handoff._system.acknowledge import Acknowledge, AnyAcknowledge, PerAction
from handoff._system.duties import Resend, Restart
from handoff._system.workers import (
    FORGETFUL,
    TOMBSTONE,
    Tombstone,
    WorkerContract,
    find_contract,
    named_object,
)

__all__ = [
    "DEFAULT_RUNTIME",
    "EAGER",
    "LIVE",
    "OFFLINE",
    "RUNTIMES",
    "RuntimeProfile",
    "find_runtime",
]


@attrs.frozen
class RuntimeProfile:
    """How one runtime behaves, each setting the `System` field of the same name.

    The runtime's duties (`retry` of a failed cleanup, `resend` after a loss, what a
    `restart` loses) are the `System` fields of their names too: None keeps the `System`'s own
    default, the contract's."""

    name: str
    """The profile's name in reports (`--runtime NAME`)."""
    summary: str
    """One sentence saying which runtime it is, for reports and docs."""
    acknowledge: AnyAcknowledge = Acknowledge.ON_REPLY
    """When the runtime reports each kind of work acknowledged (`--acknowledge` overrides)."""
    workers: WorkerContract | str | None = None
    """The contract its workers follow, when `--workers` names none: a contract, or its name
    as `--workers` spells it (None: give one)."""
    tombstones: int | None = None
    """The most retired requests its workers keep a tombstone for (None: more than a review
    ever runs), applied to `workers` when that is `tombstone`."""
    expires: bool = False
    """A retired request's tombstone expires (after the session timeout: in the untimed
    review, at any move once the request retired)."""
    holds_early: bool = False
    """The runtime holds a fact back while the acknowledgement it follows is still on its
    way to the coordinator, instead of delivering it early."""
    one_at_a_time: bool = False
    """A worker takes one action at a time: the next only once its reply to the last one
    reached the coordinator."""
    answers_again: int = 0
    """The destination keeps the outcomes of its last N actions and answers a repeated
    action with the same acknowledgement again, without doing it again (0: it stays silent)."""
    abandons: bool = False
    """The runtime never reports `Failed`, `TimedOut` or `Canceled`: a deadline, a client's
    cancel, a shutdown or a transport error ends the session instead, and the runtime cleans
    up outside the chart (`CancelSource` with no action id, `Abort` to the destination)."""
    retry: bool | None = None
    """Whether a failed cleanup is retried (None: the `System`'s default, as the contract
    demands)."""
    resend: Resend | None = None
    """What the runtime re-sends after a loss (None: the `System`'s default, nothing)."""
    restart: Restart | None = None
    """What a restarted worker loses (None: the `System`'s default)."""
    drains_transfers: bool | None = None
    """Whether the runtime holds a `CancelDestination` while a `StartTransfer` of its
    handoff is on its way to the source (None: the `System`'s default, it does not)."""
    spelled: str | None = attrs.field(default=None, eq=False, repr=False)
    """How `--runtime` named a profile of one's own, `MODULE:NAME` (`find_runtime` sets it):
    what reports and traces call it, so that a trace finds it again."""

    def contract(self) -> WorkerContract | None:
        """The workers' contract, its tombstones bounded as the profile says."""
        workers = self.workers
        if isinstance(workers, str):
            workers = find_contract(workers)
        if self.tombstones is not None and workers is TOMBSTONE:
            return Tombstone(remembers=self.tombstones)
        return workers

    def settings(self) -> dict[str, object]:
        """The `System` fields this profile sets, by name (`System.runtime` its name); the
        runtime's duties (`retry`, `resend`, `restart`, `drains_transfers`) only where the
        profile says."""
        found: dict[str, object] = {
            "runtime": self.spelled or self.name,
            "acknowledge": self.acknowledge,
            "holds_early": self.holds_early,
            "one_at_a_time": self.one_at_a_time,
            "answers_again": self.answers_again,
            "expires": self.expires,
            "abandons": self.abandons,
        }
        duties = {
            "retry": self.retry,
            "resend": self.resend,
            "restart": self.restart,
            "drains_transfers": self.drains_transfers,
        }
        found.update((name, value) for name, value in duties.items() if value is not None)
        return found

    def __repr__(self) -> str:
        return f"<handoff runtime profile {self.name!r}>"


OFFLINE = RuntimeProfile(
    "offline",
    "the serving simulator's offline replay: StartTransfer acknowledged Scheduled at once, "
    "other work once the worker's command completed, a cancel before the worker has the "
    "request answered Noop",
    acknowledge=PerAction(frozenset(("StartTransfer",))),
    workers=FORGETFUL,
)
LIVE = RuntimeProfile(
    "live",
    "the serving simulator's live mocker: work acknowledged on the worker's reply, early "
    "facts held back, one action at a time, the destination answering repeats from its last "
    "16 outcomes, expiring tombstones, and its own cleanup when a session ends",
    acknowledge=Acknowledge.ON_REPLY,
    workers=TOMBSTONE,
    expires=True,
    holds_early=True,
    one_at_a_time=True,
    answers_again=16,
    abandons=True,
)
EAGER = RuntimeProfile(
    "eager",
    "every submission, reservation and transfer acknowledged as the runtime sends it, before "
    "the worker has it (what reviews assumed before runtime profiles; no upstream runtime "
    "acknowledges so)",
    acknowledge=Acknowledge.ON_SEND,
)
RUNTIMES: dict[str, RuntimeProfile] = {p.name: p for p in (OFFLINE, LIVE, EAGER)}
"""The shipped profiles, by name."""

DEFAULT_RUNTIME = OFFLINE
"""The profile a review, a simulation or an export with workers assumes unless told
(`--runtime`): a runtime upstream ships, that reports terminal facts as the contract says and
acknowledges the work that takes a slot once the worker has it."""


def find_runtime(text: str, allowed: Collection[str] | None = None) -> RuntimeProfile:
    """The profile `text` names: a shipped one (`offline`, `live`, `eager`) or `MODULE:NAME`,
    a `RuntimeProfile` of one's own.  A name read from a file is data: with `allowed` given,
    a `MODULE:NAME` outside it is refused (`NotGiven`) before anything is imported.  Raises
    ValueError saying what is wrong and what would be right."""
    shipped = RUNTIMES.get(text.strip().casefold())
    if shipped is not None:
        return shipped
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        raise ValueError(
            f"unknown runtime {text!r}: expected {', '.join(RUNTIMES)} or MODULE:NAME, a "
            "RuntimeProfile of your own"
        )
    found = named_object(module_name, name, "runtime", allowed)
    if not isinstance(found, RuntimeProfile):
        raise ValueError(f"{text} is not a runtime profile: make it a handoff.RuntimeProfile")
    return attrs.evolve(found, spelled=f"{module_name}:{name}")


RuntimeProfile.__module__ = "handoff"
