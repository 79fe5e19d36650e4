"""The properties a model review checks, in the contract's words, and the verdicts it gives them.

Each property has a `Key`.  The safety properties (S, R, P, Q) judge one call at a time from
what the environment saw (`handoff._review.monitors`); S6 also compares the coordinator's
configuration before and after a call that must change nothing.  L1 and L2 walk the explored
graph, C2 compares the recorded lifecycle with the environment's at every completion;
Coverage, Bound and Errors say how complete and how sound the exploration was; Table, that
the table the coordinator runs is the chart as python-statemachine reads it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection
from typing import Any, Protocol

import attrs

from handoff._system.bound import MAX_ACTIONS

__all__ = [
    "GUARDS",
    "LEAKS",
    "PROPERTIES",
    "Family",
    "Finding",
    "Judged",
    "Key",
    "OwnKey",
    "Property",
    "PropertyName",
    "SpinCheck",
    "WorldKind",
    "prop",
    "properties_of",
]


class Key(enum.Enum):
    """Every property the review checks; the value is its short name in reports."""

    __hash__ = object.__hash__  # a singleton: identity hashes in C, `Enum` by its name

    ACTIVATE_AFTER_TRANSFER = "S1"
    RELEASE_AFTER_ACTIVATION = "S2"
    TRANSFER_WHEN_READY = "S3"
    ONE_COMPLETE = "S4"
    OWNERS_FREED = "S5"
    NO_EFFECT = "S6"
    IDS = "S7"
    EACH_ACTION = "C1"
    FACTS = "R1"
    OUTCOMES = "R2"
    PAYLOADS = "P1"
    PROMPT = "Q1"
    PROGRESS = "L1"
    CANCELLATION = "L2"
    LIFECYCLE = "C2"
    COVERAGE = "Coverage"
    BOUND = "Bound"
    ERRORS = "Errors"
    EQUIVALENCE = "Table"
    # Judged with the workers (handoff._review.system): the coordinator, its two workers and
    # the messages in flight; Bound and Errors are judged there too.
    SLOTS_AT_COMPLETION = "W1"
    NO_SLOT_AFTER_FREED = "W2"
    ONLY_ISSUED_WORK = "W3"
    DELIVERIES_COMPLETE = "W4"
    TERMINAL_CANCELS = "W5"
    ONE_SLOT_PER_REQUEST = "W6"
    EVERY_HANDOFF_SUCCEEDS = "W7"
    SLOT_OWNED_ONCE = "W8"
    KV_INTO_OWN_SLOT = "W9"
    ACTIVATED_SERVES = "W10"


@attrs.frozen
class OwnKey:
    """The key of a property of one's own (`--property MODULE:NAME`): its name in reports."""

    value: str
    spelling: str = ""
    """How it was named, `MODULE:NAME` (a trace records it, so that a replay judges it too)."""


AnyKey = Key | OwnKey
"""A shipped property's key, or one of one's own."""


class WorldKind(enum.Enum):
    """The world a chart is reviewed in: what may happen next to its coordinator."""

    CHART = "chart"
    """The chart alone: a nondeterministic environment makes every call it may make."""
    SYSTEM = "system"
    """The chart with its workers: two workers following a contract, and a runtime whose
    messages between them and the coordinator take their time (`--workers`)."""


GUARDS = {WorldKind.CHART: 4_000, WorldKind.SYSTEM: 500_000}
"""Each world's last guard on the configurations explored, far above what the shipped charts
reach (fewer than 150 alone, tens of thousands with workers): it keeps any chart's review
within seconds."""

_NO_SLOT_IDENTITY = "Spin's model counts each request's slots, not which slot is whose"

_ALONE = frozenset({WorldKind.CHART})
_WITH_WORKERS = frozenset({WorldKind.SYSTEM})
_BOTH = _ALONE | _WITH_WORKERS


class Judged(enum.Enum):
    """Where the review judges a property."""

    EDGE = "at each call"  # by the monitors, on every move explored and every call replayed
    GRAPH = "over the explored graph"  # everything reachable: the liveness properties
    CHART = "over the chart"  # the chart's own cells, which no run shows


class SpinCheck(enum.Enum):
    """How Spin checks a property its Promela model mirrors."""

    ASSERTION = "assertion"
    """A monitor sets `<key>_broken`; the exhaustive safety search reports it."""
    LTL = "ltl"
    """An LTL formula named `<key>`; the acceptance-cycle search (`-a -N <key>`) checks it."""


class Family(enum.Enum):
    """What breaking a property means for a deployment."""

    SAFETY = "safety"
    """KV lost or owned twice, an owner never freed, a handoff that cannot end: unsafe."""
    CONFORMANCE = "conformance"
    """Not what the reference (SPEC.md) answers: a chart may differ and still be safe."""


@attrs.frozen
class Property:
    """One property, defined once: every list and lookup of the review and of Spin reads it.

    `title` for tables, `words` for the report, `unit` for the count; `family` says whether
    breaking it is unsafe or a difference from the reference, and `why`; `judged` says where
    the review judges it, `spin` how Spin's model mirrors it (None: not mirrored, `unmirrored`
    says why); `worlds`, in which worlds it is judged.
    """

    key: Key | OwnKey
    title: str
    words: str
    unit: str
    """What the `checked` count counts, in plain words ("calls that issued StartTransfer")."""
    family: Family
    why: str
    """Why the property is in its family, in one line."""
    judged: Judged = Judged.EDGE
    spin: SpinCheck | None = SpinCheck.ASSERTION
    unmirrored: str = ""
    """Why Spin does not check it, when `spin` is None."""
    worlds: frozenset[WorldKind] = _ALONE
    predicate: Callable[[Any], object] | None = attrs.field(default=None, eq=False)
    """A property of one's own: the function judging each configuration's `SystemView`."""


def _p(
    key: Key,
    family: Family,
    why: str,
    title: str,
    unit: str,
    words: str,
    judged: Judged = Judged.EDGE,
    spin: SpinCheck | None = SpinCheck.ASSERTION,
    unmirrored: str = "",
    worlds: frozenset[WorldKind] = _ALONE,
) -> Property:
    return Property(key, title, words, unit, family, why, judged, spin, unmirrored, worlds)


PROPERTIES = (
    _p(
        Key.ACTIVATE_AFTER_TRANSFER,
        Family.SAFETY,
        "activating before the KV arrived hands decode a cache that is not there",
        "activate only after the transfer completed",
        "calls that issued ActivateDestination",
        "`ActivateDestination` is issued only after the environment reported "
        "`TransferCompleted` for a `StartTransfer` it had acknowledged `SCHEDULED`.",
    ),
    _p(
        Key.RELEASE_AFTER_ACTIVATION,
        Family.SAFETY,
        "releasing the source before the destination owns the KV loses it",
        "release only after the activation applied",
        "calls that issued ReleaseSource",
        "`ReleaseSource` is issued only after `ActivateDestination` was acknowledged `APPLIED`.",
    ),
    _p(
        Key.TRANSFER_WHEN_READY,
        Family.SAFETY,
        "a transfer before the source is held and the destination reserved moves KV nowhere",
        "transfer only when held, reserved, finite",
        "calls that issued StartTransfer",
        "`StartTransfer` is issued only once the source is held (`SourceHeld` taken after "
        "`SubmitPrefill` was acknowledged `SUBMITTED`) and the destination reserved "
        "(`DestinationReserved` taken after `ReserveDestination` was acknowledged `ACCEPTED`), "
        "with a finite, non-negative `delay_ms`.",
    ),
    _p(
        Key.ONE_COMPLETE,
        Family.SAFETY,
        "an action after completion acts for a handoff its caller has finished with",
        "one Complete per completion, nothing after",
        "calls made and Completes issued at or after a completion",
        "Each completion issues one `Complete`; in *complete* mode nothing is issued, except "
        "that a `Failed`, `TimedOut` or `Canceled` fact after a SUCCESS reopens cleanup.",
    ),
    _p(
        Key.OWNERS_FREED,
        Family.SAFETY,
        "an owner neither freed nor handed over at completion leaks its KV or its slot",
        "every owner freed or handed over at completion",
        "Completes issued",
        "At a CANCELED completion every `SubmitPrefill` ended in a `ReleaseSource` or "
        "`CancelSource` acknowledged `APPLIED` or `NOOP`, and every `ReserveDestination` in a "
        "`CancelDestination` so acknowledged; at a SUCCESS completion the destination was "
        "activated (`APPLIED`) and the source released (`APPLIED` or `NOOP`).",
    ),
    _p(
        Key.NO_EFFECT,
        Family.SAFETY,
        "a refused call that changes state leaves caller and coordinator split on who owns what",
        "refused calls and dropped repeats change nothing",
        "refused or dropped calls",
        "A call that raises `HandoffError`, or that the contract answers `[]` without effect (a "
        "repeated fact, a duplicate outcome, any call once complete), leaves the coordinator's "
        "configuration unchanged.",
    ),
    _p(
        Key.IDS,
        Family.SAFETY,
        "a skipped or reused id lets an acknowledgement land on the wrong action",
        "action ids count up by one",
        "issued actions",
        "Issued action ids are 0, 1, 2, … in issue order, each one more than the last.",
    ),
    _p(
        Key.EACH_ACTION,
        Family.CONFORMANCE,
        "which call issues an action, and how often, is the reference's schedule (leaks: S5)",
        "each action once, when allowed, for an engaged owner",
        "issued actions",
        "Each kind of action but `Complete` is issued at most once per run.  `SubmitPrefill` "
        "and `ReserveDestination` go out in active mode only: the order's first one from "
        "`start()`, the other once the first owner's fact (`SourceHeld`, `DestinationReserved`) "
        "was taken; `StartTransfer`, `ActivateDestination` and `ReleaseSource` in active mode "
        "only; `CancelSource` and `CancelDestination` only in cleanup, each for an owner that "
        "was engaged (its `SubmitPrefill` or `ReserveDestination` issued) and not yet freed.",
    ),
    _p(
        Key.FACTS,
        Family.CONFORMANCE,
        "refusal classes and phrases are the reference's; taking a fact too early breaks S1-S3",
        "facts taken, refused or dropped as the contract says",
        "facts reported",
        "A fact for another handoff is refused (`fact belongs to a different handoff`).  In "
        "active mode a first-time `SourceHeld`, `DestinationReserved` or `TransferCompleted` "
        "reported before its acknowledgement is refused with its own error class and phrase "
        "(`source held before prefill submission was acknowledged`, …); after it, it is taken "
        "(it issues the next action), never silently dropped; a repeat of a fact already taken "
        "is dropped (`[]`).  A terminal fact is taken in active mode and after a SUCCESS; every "
        "other fact in cleanup or once complete is dropped.",
    ),
    _p(
        Key.OUTCOMES,
        Family.CONFORMANCE,
        "refusal classes and phrases are the reference's; a lost owner breaks S5, L1 or L2",
        "acknowledgements taken or refused as the contract says",
        "acknowledgements made",
        "Once complete every outcome is dropped.  Otherwise an id not in the journal is refused "
        "(`unknown handoff action {id}`); a repeat of the recorded outcome is dropped, a "
        "different one refused (`conflicting outcome for handoff action {id}`); a failed "
        "`CancelSource` or `CancelDestination` is refused (`handoff cleanup action {id} "
        "failed`), never silently accepted; any other failure is taken; an outcome that does "
        "not fit its action is refused (`invalid handoff action outcome {outcome}`); a fitting "
        "acknowledgement is never refused.",
    ),
    _p(
        Key.PAYLOADS,
        Family.CONFORMANCE,
        "when a bad payload is refused is the reference's choice; a bad delay's transfer fails S3",
        "unusable payloads refused when they arrive",
        "first-time facts whose payload was judged",
        "A `SourceHeld` whose bandwidth is NaN, ±inf or negative is refused (`invalid handoff "
        "transfer bandwidth`), one whose full-prompt delay overflows is refused (`invalid "
        "handoff transfer delay`), and a fact that makes the transfer due with a delay that is "
        "not finite and non-negative is refused whole (`invalid handoff transfer delay`).  The "
        "one documented exception: in DESTINATION_FIRST a reservation whose delay overflows "
        "arrives before any timing, so it can only be judged, and is refused, at `SourceHeld`.",
    ),
    _p(
        Key.PROMPT,
        Family.CONFORMANCE,
        "what goes out in which call is the reference's; an action never sent breaks L1 or L2",
        "actions go out in the call that makes them due",
        "calls the contract takes",
        "In active mode the action the contract's `advance` names goes out in the call that "
        "makes it due (`Complete` in the call that acknowledges the release).  The call that "
        "begins cleanup (or reopens it) issues the cancels still owed, `CancelSource` before "
        "`CancelDestination`, or `Complete` when no owner was engaged; during cleanup "
        "`Complete` goes out in the call that confirms the last engaged owner freed.",
    ),
    _p(
        Key.PROGRESS,
        Family.SAFETY,
        "a handoff that cannot complete holds its owners forever",
        "a cooperative environment completes",
        "configurations reached with usable payloads",
        "From every reachable configuration a completion is reachable when the environment "
        "cooperates: it acknowledges actions with fitting outcomes and reports `SourceHeld`, "
        "`DestinationReserved` and `TransferCompleted` with usable payloads (no deadlock, no "
        "livelock).  Configurations reachable only through an accepted unusable payload wait "
        "for a terminal fact: L2 judges them.",
        Judged.GRAPH,
        SpinCheck.LTL,
    ),
    _p(
        Key.CANCELLATION,
        Family.SAFETY,
        "a handoff that cannot be canceled holds its owners after the request is gone",
        "a terminal fact leads to CANCELED",
        "configurations not completed CANCELED",
        "From every configuration that has not completed CANCELED, each terminal fact "
        "(`Failed`, `TimedOut`, `Canceled`) followed by fitting acknowledgements alone reaches a "
        "CANCELED completion, including after a success (the reopened cleanup).",
        Judged.GRAPH,
        SpinCheck.LTL,
    ),
    _p(
        Key.LIFECYCLE,
        Family.CONFORMANCE,
        "the exact lifecycle record is the reference's; no owner depends on it",
        "the lifecycle is recorded as the contract says",
        "Completes issued",
        "At every completion the coordinator's `lifecycle` is exactly the events contract §4 "
        "records for the calls taken (`SourceHeld`, `ReserveDestination`'s `ACCEPTED`, "
        "`DestinationReserved`, `ActivateDestination`'s `APPLIED`, `ReleaseSource` done, a "
        "SUCCESS completion), and at a SUCCESS it equals `expected_normalized_handoff(order)`.",
    ),
    _p(
        Key.COVERAGE,
        Family.CONFORMANCE,
        "a dead state or transition is chart text no run uses: no risk, not the reference",
        "every state and declared transition runs",
        "states and declared transitions",
        "Every chart state is reached and every transition the chart declares (a move, an issuing "
        "step or a refusal) is taken by some run; a dead one is a failure.",
        Judged.CHART,
        None,
        "a judgment on the chart's declared cells, not on runs: Spin sees no cells",
    ),
    _p(
        Key.SLOTS_AT_COMPLETION,
        Family.SAFETY,
        "a slot a worker still holds once the handoff has ended is KV cache lost or owned twice",
        "no slot held for a CANCELED handoff; after SUCCESS only the destination's",
        "quiet configurations after a completion",
        "At every completion, once every message in flight has been delivered, no worker "
        "holds a KV slot for a CANCELED handoff, and after a SUCCESS the destination holds "
        "the request's slot and the source none.",
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.NO_SLOT_AFTER_FREED,
        Family.SAFETY,
        "a slot the coordinator believes freed is one no cleanup will ever free again",
        "no slot held after the coordinator was told it is freed",
        "moves",
        "Once the coordinator has been told a worker freed the request's slot (a "
        "`ReleaseSource`, `CancelSource` or `CancelDestination` acknowledged `APPLIED` or "
        "`NOOP`), that worker never holds a slot for the request again.",
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.ONLY_ISSUED_WORK,
        Family.SAFETY,
        "work nobody issued takes a slot that no cleanup knows of",
        "workers perform only what the coordinator issued",
        "actions performed",
        "Every action a worker performs was issued by the coordinator, is for that worker, "
        "and is performed once.",
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.DELIVERIES_COMPLETE,
        Family.SAFETY,
        "a handoff that never completes keeps both owners' slots forever",
        "delivering what is in flight completes the handoff",
        "configurations",
        "From every reachable configuration, every run that suffers no further fault and "
        "delivers every message in flight (fairness) ends, once nothing is in flight, with "
        "the handoff complete.",
        Judged.GRAPH,
        SpinCheck.LTL,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.TERMINAL_CANCELS,
        Family.SAFETY,
        "a failed, timed-out or canceled request must free both owners, or its cache leaks",
        "a terminal fact leads to CANCELED",
        "runs ended after a terminal fact",
        "After a terminal fact (`Failed`, `TimedOut`, `Canceled`) every run that delivers "
        "every message in flight ends with the handoff complete CANCELED, including after a "
        "success (the reopened cleanup): judged at every configuration where such a run ends.",
        Judged.GRAPH,
        SpinCheck.LTL,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.ONE_SLOT_PER_REQUEST,
        Family.SAFETY,
        "a second slot for one request is KV no cleanup frees: the request's one cancel frees one",
        "no worker holds two slots for one request",
        "moves",
        "No worker ever holds more than one KV slot for one request: work that takes a slot "
        "is taken once per request, a redelivered copy included.",
        Judged.EDGE,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.EVERY_HANDOFF_SUCCEEDS,
        Family.SAFETY,
        "workers that let no handoff succeed when nothing goes wrong serve no request at all",
        "with no fault, every handoff succeeds",
        "runs with no fault",
        "From the first configuration, every run with no fault at all (no terminal fact, no "
        "failed work, nothing injected) that delivers every message in flight ends with every "
        "handoff complete SUCCESS.",
        Judged.GRAPH,
        SpinCheck.LTL,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.SLOT_OWNED_ONCE,
        Family.SAFETY,
        "a slot holding one request's KV while another owns it decodes the wrong cache",
        "a destination slot belongs to one request at a time",
        "transfers performed",
        "No destination KV slot gets one request's KV while another request holds it: the "
        "transfer for a request lands in the slot its reservation took, which no other "
        "request may hold by then.  Which slot is whose is modelled with `--slots C` and "
        "several handoffs (a reservation takes the lowest-numbered free slot); with unbounded "
        "slots, or one handoff, no other request ever takes a request's slot.",
        spin=None,
        unmirrored=_NO_SLOT_IDENTITY,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.KV_INTO_OWN_SLOT,
        Family.SAFETY,
        "KV moved into a slot its request no longer holds is lost or overwrites another's",
        "KV moves only into a slot its own request holds",
        "transfers performed",
        "When the source performs `StartTransfer` for a request, the destination holds the "
        "slot that request's reservation took (where slots are not told apart: a slot for "
        "the request), so the KV never lands in a free slot or in another request's.",
        spin=None,
        unmirrored=_NO_SLOT_IDENTITY,
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.ACTIVATED_SERVES,
        Family.SAFETY,
        "a destination that acknowledged activation and does not decode leaves it unserved",
        "an activated destination is serving its request",
        "destination actions performed",
        "A destination that acknowledged a request's `ActivateDestination` as applied is "
        "serving the request (its contract's `serves`: remembering it as "
        "`RequestMemory.SERVING`, for the shipped contracts) from then until it frees the "
        "request's slot.",
        spin=None,
        unmirrored="Spin's model tabulates what a worker remembers, not whether it serves",
        worlds=_WITH_WORKERS,
    ),
    _p(
        Key.BOUND,
        Family.SAFETY,
        "a run that never ends never frees its owners, and leaves the review unproven",
        "every run explored to its end",
        "configurations explored",
        f"No run issues more than {MAX_ACTIONS} actions, no run grows the configuration three "
        "times without progress (an issued action, a state change or a new journal entry), and "
        f"the space stays under the exploration's guard ({GUARDS[WorldKind.CHART]:,} "
        f"configurations alone, {GUARDS[WorldKind.SYSTEM]:,} with workers, or "
        "`--max-configurations`): so the exploration is exhaustive.  A review its guard stops is "
        "cut short, and leaves Bound not judged.",
        worlds=_BOTH,
    ),
    _p(
        Key.ERRORS,
        Family.SAFETY,
        "a crash leaves the handoff's owners to no one",
        "only HandoffError escapes",
        "calls",
        "Every call returns actions or raises `HandoffError`; any other exception is a failure.",
        worlds=_BOTH,
    ),
    _p(
        Key.EQUIVALENCE,
        Family.SAFETY,
        "if python-statemachine runs the chart otherwise, the rules judged are not those written",
        "the table agrees with python-statemachine",
        "reachable (state, event) cells",
        "The compiled table and python-statemachine agree on every reachable cell: in every "
        "chart state a run reaches, each event, given to the table and to the chart run by "
        "python-statemachine from that state, makes the same move, refusal, checks and effects.",
        Judged.CHART,
        None,
        "compares the compiled table with python-statemachine, not runs: "
        "Spin has no model of the interpreter to check",
    ),
)

_BY_KEY: dict[Key | OwnKey, Property] = {entry.key: entry for entry in PROPERTIES}


def prop(key: Key) -> Property:
    """The property `key` names."""
    return _BY_KEY[key]


def own_property(predicate: Callable[[Any], object], name: str, spelling: str = "") -> Property:
    """A property of one's own judged at every system configuration: `predicate` takes a
    `handoff.SystemView` and returns True where the property holds (False, or a string saying
    why, where it does not).  Its title is its docstring's first line, else its name."""
    doc = (getattr(predicate, "__doc__", None) or "").strip().splitlines()
    title = doc[0].rstrip(".") if doc else name
    return Property(
        OwnKey(name, spelling),
        title,
        f"Your property {name}: {title}, at every configuration the system reaches.",
        "configurations",
        Family.SAFETY,
        "a property of your own: breaking it is what you said must not happen",
        Judged.EDGE,
        None,
        "a Python function of the configuration: Spin's model has no Python to call",
        _WITH_WORKERS,
        predicate,
    )


def find_property(text: str, allowed: Collection[str] | None = None) -> Property:
    """The property of one's own `MODULE:NAME` names: a function of a `handoff.SystemView`
    (MODULE imported from the current directory or the Python path).  ValueError says why
    not; with `allowed` given (a name read from a file), a name outside it is `NotGiven`,
    nothing imported."""
    from handoff._system.workers import named_object  # a module of one's own, when asked for

    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        raise ValueError(f"expected MODULE:NAME, a function of a handoff.SystemView, got {text!r}")
    missing = (
        f"{text}: module {module_name} has no function {name}; a property is a function of a "
        "handoff.SystemView returning True where it holds"
    )
    found = named_object(module_name, name, "property", allowed, missing)
    if not callable(found):
        raise ValueError(missing)
    return own_property(found, name, f"{module_name}:{name}")


def properties_of(world: WorldKind) -> tuple[Property, ...]:
    """The properties judged in `world`, in the order of `PROPERTIES`."""
    return tuple(entry for entry in PROPERTIES if world in entry.worlds)


LEAKS = (
    Key.OWNERS_FREED,
    Key.SLOTS_AT_COMPLETION,
    Key.NO_SLOT_AFTER_FREED,
    Key.ONLY_ISSUED_WORK,
    Key.ONE_SLOT_PER_REQUEST,
)
"""Properties whose failure is KV or a slot nobody will free."""


class PropertyName(Protocol):
    """What names a property: a key whose value is its short name ("S1", or one's own)."""

    @property
    def value(self) -> str: ...


@attrs.frozen
class Finding:
    """A property judged broken, and how: what a review's move, a replayed call or a
    simulated handoff broke."""

    key: PropertyName
    """The property, whose value is its short name ("S1"): the judge's own key."""
    title: str
    message: str

    @classmethod
    def of(cls, key: AnyKey, message: str) -> Finding:
        """A finding of a shipped property (titled as it is) or of one's own (by its name)."""
        return cls(key, prop(key).title if isinstance(key, Key) else key.value, message)

    def __str__(self) -> str:
        return f"{self.key.value} ({self.title}): {self.message}"
