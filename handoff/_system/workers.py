"""Workers and their contracts: what a prefill or decode worker does with each action it gets.

The coordinator issues actions; a runtime carries each one to the worker it is for (the
*source* runs `SubmitPrefill`, `StartTransfer`, `ReleaseSource` and `CancelSource`, the
*destination* `ReserveDestination`, `ActivateDestination` and `CancelDestination`;
`Complete` is the runtime's own).  What the worker then does is its **contract**: for each
`WorkerTask` and what it remembers of the request (`RequestMemory`), one `WorkerReaction`,
which says what it remembers afterwards (holding a KV slot is `RequestMemory.HELD`) and how
it replies (`WorkerReply`).  A worker that takes the work and replies `DONE` goes on to
report the work's fact (`SourceHeld`, `DestinationReserved`, `TransferCompleted`).

Two contracts ship: `FORGETFUL` answers a cancel for a request it has not seen `NOOP` and
forgets it (and forgets a request once its slot is freed), so a submission that arrives after
its own cancel is run and its slot held for ever; `TOMBSTONE` remembers the cancel and drops
the late work.  `tombstone:K` (`Tombstone(remembers=K)`) remembers only the last K requests it
holds no slot for, as a worker with bounded memory does.  Write your own by subclassing
`WorkerContract` and overriding `react`: it may remember any hashable value (`initial` is what
it remembers of a request it never saw), take or free a slot as it says (`Slots`), answer
several ways (return a tuple of reactions: each is explored), or differ per role (`PerRole`).
The model review (`handoff review --workers MODULE:NAME`) and the simulation take it as they
take these.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Any, NamedTuple, TypeVar

import attrs

from handoff._compile.lookup import NotGiven
from handoff._compile.lookup import _import as import_module
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.values import HandoffActionOutcome

__all__ = [
    "CONTRACTS",
    "DROPPED",
    "FORGETFUL",
    "RUNTIME_OWN",
    "TOMBSTONE",
    "ContractTable",
    "Forgetful",
    "Message",
    "MessageKind",
    "PerRole",
    "RequestMemory",
    "Role",
    "Slots",
    "Tombstone",
    "WorkerContract",
    "WorkerReaction",
    "WorkerReply",
    "WorkerTask",
    "contract_spelling",
    "find_contract",
    "on_send",
    "outcome_of",
    "role_of",
    "task_of",
]


class _Singleton(enum.Enum):
    """An enum whose members hash by identity: each is its own singleton, and a review hashes
    millions of configurations holding them."""

    __hash__ = object.__hash__


class Role(_Singleton):
    """Which worker an action goes to."""

    SOURCE = "source"
    DESTINATION = "destination"


class WorkerTask(_Singleton):
    """What an action asks of the worker it goes to."""

    TAKE = "take"
    """`SubmitPrefill` or `ReserveDestination`: take a KV slot for the request."""
    TRANSFER = "transfer"
    """`StartTransfer`: send the held KV to the destination."""
    ACTIVATE = "activate"
    """`ActivateDestination`: start decoding from the reserved slot."""
    RELEASE = "release"
    """`ReleaseSource`: the destination owns the KV now; free the source's slot."""
    CANCEL = "cancel"
    """`CancelSource` or `CancelDestination`: free the slot, the request is over."""


class RequestMemory(_Singleton):
    """What a worker remembers of one request id."""

    UNKNOWN = "unknown"
    """Never seen, or forgotten."""
    HELD = "held"
    """A KV slot is held for it, and nothing is done with it yet."""
    FREED = "freed"
    """A slot was held for it and is free again."""
    CANCELED = "canceled"
    """A cancel came before any work: a tombstone, remembered so that late work is dropped."""
    SERVING = "serving"
    """Activated: the destination decodes the request from the KV slot it holds for it."""


class WorkerReply(_Singleton):
    """How a worker acknowledges an action."""

    DONE = "done"
    """The action's fitting outcome (`SUBMITTED`, `ACCEPTED`, `SCHEDULED`, `APPLIED`)."""
    NOOP = "noop"
    """`NOOP`: nothing to do (a release or cancel of what is not held)."""
    FAILED = "failed"
    """A failed outcome: the work was not done."""
    SILENT = "silent"
    """No acknowledgement at all."""


class Slots(_Singleton):
    """What a reaction does to the KV slots the worker holds for the request."""

    TAKE = "take"
    """Takes one more slot (a second one when it already holds one)."""
    FREE = "free"
    """Frees every slot it holds for the request."""
    KEEP = "keep"
    """Leaves the slots as they are."""


def _hashable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, Hashable):
        raise TypeError(f"a worker's memory must be hashable, got {value!r}")
    hash(value)


@attrs.frozen
class WorkerReaction:
    """What a worker does with one task: what it remembers afterwards, how it replies, and what
    it does to the request's slots.

    `slots` None is the usual reading of the shipped memories: entering `HELD` or `SERVING`
    (the memories that hold a slot) takes a slot, leaving them frees the request's slots,
    anything else keeps them.
    """

    memory: Hashable = attrs.field(validator=_hashable)
    reply: WorkerReply = attrs.field(validator=attrs.validators.instance_of(WorkerReply))
    slots: Slots | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(Slots))
    )

    @property
    def holds(self) -> bool:
        """Whether the worker remembers the request as holding a KV slot afterwards."""
        return self.memory in _HOLDING

    def change(self, before: Hashable) -> Slots:
        """What this reaction does to the slots of a request remembered as `before`."""
        if self.slots is not None:
            return self.slots
        held_before = before in _HOLDING
        if self.holds and not held_before:
            return Slots.TAKE
        if held_before and not self.holds:
            return Slots.FREE
        return Slots.KEEP


_HOLDING = (RequestMemory.HELD, RequestMemory.SERVING)
"""The shipped memories that hold a KV slot."""


def memory_name(memory: Hashable) -> str:
    """How reports and pictures name a memory: a shipped one by its value, any other as
    Python writes it."""
    return memory.value if isinstance(memory, RequestMemory) else repr(memory)


class MessageKind(enum.IntEnum):
    """What a message between the runtime's coordinator and a worker carries; the value orders
    messages canonically."""

    ACTION = 0
    OUTCOME = 1
    FACT = 2


RUNTIME_OWN = 62
"""The action id a message of the runtime's own cleanup carries (`runtime.abandoned`): no
coordinator issued it, and no coordinator hears its reply."""


class Message(NamedTuple):
    """One message in flight: an action to a worker, or an outcome or fact back from it.

    With several handoffs sharing the workers, `handoff` says whose it is (0, 1, …): each
    handoff's request is known to the workers by that number."""

    kind: MessageKind
    action_id: int
    """The action's id; for a fact, the id of the action that led to it."""
    role: Role
    """The worker the message goes to or comes from."""
    action: HandoffAction
    """The action, or the one acknowledged or followed."""
    outcome: HandoffActionOutcome | None = None
    fact: HandoffFact | None = None
    copy: bool = False
    """A second copy of a message already delivered (the network duplicated it)."""
    handoff: int | None = None
    """Whose message it is, when several handoffs share the workers (None: the only one)."""

    def describe(self) -> str:
        """The message in words: `#0 SubmitPrefill`, `#0 Submitted`, `SourceHeld`; a copy
        is `#0 SubmitPrefill (copy)`; another handoff's, `h2 #0 SubmitPrefill`; the
        runtime's own cleanup `CancelSource (no action id)` and `Abort`."""
        again = " (copy)" if self.copy else ""
        whose = "" if self.handoff is None else f"h{self.handoff + 1} "
        if self.action_id == RUNTIME_OWN:
            if self.role is Role.DESTINATION:
                return f"{whose}Abort (CancelDestination on its own){again}"
            return f"{whose}{type(self.action).__name__} (no action id){again}"
        if self.kind is MessageKind.ACTION:
            return f"{whose}#{self.action_id} {type(self.action).__name__}{again}"
        if self.kind is MessageKind.OUTCOME:
            return f"{whose}#{self.action_id} {self.outcome}{again}"
        return f"{whose}{type(self.fact).__name__}{again}"


class WorkerContract:
    """How workers treat each task; subclass it and override `react` to write your own.

    `react` must be a pure function of its two arguments: the review tabulates it once, for
    every task and every memory it can reach from `initial`, and the simulation looks answers
    up in that table.  It returns one `WorkerReaction`, or several (a tuple): a worker that may
    answer either way, each explored.
    """

    name = "workers"
    """The contract's name in reports."""
    summary = ""
    """One sentence saying what the contract promises, for reports."""
    initial: Hashable = RequestMemory.UNKNOWN
    """What the worker remembers of a request it never saw (or forgot)."""
    remembers: int | None = None
    """How many requests it remembers while holding no slot for them, the last ones first
    forgotten last (None: every one)."""

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction | tuple[WorkerReaction, ...]:
        """What the worker does with `task` for a request it remembers as `memory`."""
        raise NotImplementedError(f"{type(self).__name__} must define react(task, memory)")

    def serves(self, memory: Any) -> bool:
        """Whether a destination remembering a request as `memory` is serving it (decoding from
        the slot it holds for it): what it must be once it acknowledged the request's
        `ActivateDestination` as applied, until it frees the slot (W10).  Override it when
        your memories say so otherwise than `RequestMemory.SERVING`."""
        return memory is RequestMemory.SERVING

    def for_role(self, role: Role) -> WorkerContract:
        """The contract the worker of `role` follows: this one, unless it differs per role."""
        return self

    def __repr__(self) -> str:
        return f"<handoff worker contract {self.name!r}>"


T = TypeVar("T")
_R = WorkerReaction
_M = RequestMemory
_Y = WorkerReply


class Forgetful(WorkerContract):
    """A cancel for a request the worker has not seen is answered `NOOP` and forgotten."""

    name = "forgetful"
    summary = (
        "a cancel for a request the worker has not seen is answered Noop and forgotten; "
        "a later submission or reservation for it is taken"
    )

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction:
        """Take every submission (one more slot each); serve an activated request from its
        slot; free what is held on release or cancel, and forget the request; `NOOP`
        otherwise."""
        held = memory in _HOLDING
        if task is WorkerTask.TAKE:
            return _R(_M.SERVING if memory is _M.SERVING else _M.HELD, _Y.DONE, Slots.TAKE)
        if task is WorkerTask.ACTIVATE and held:
            return _R(_M.SERVING, _Y.DONE, Slots.KEEP)
        if task in (WorkerTask.TRANSFER, WorkerTask.ACTIVATE):
            return _R(memory, _Y.DONE if held else _Y.FAILED)
        if held:
            return _R(self._freed, _Y.DONE)
        return _R(memory, _Y.NOOP)

    _freed: RequestMemory = _M.UNKNOWN
    """What a release or cancel of a held slot leaves remembered."""


class Tombstone(Forgetful):
    """Every canceled request id is remembered, and later work for it dropped (`FAILED`);
    `Tombstone(remembers=K)` remembers only the last K."""

    name = "tombstone"
    summary = (
        "a worker remembers every canceled request id and drops later work for it, "
        "acknowledging it as failed"
    )
    _freed = _M.FREED

    def __init__(self, remembers: int | None = None) -> None:
        if remembers is not None:
            if type(remembers) is not int or remembers < 1:
                raise ValueError(f"tombstone:K remembers K ≥ 1 requests, got {remembers!r}")
            self.remembers = remembers
            self.name = f"tombstone:{remembers}"
            self.summary = (
                f"as tombstone, but a worker remembers only the last {remembers} request "
                f"id{'s' if remembers > 1 else ''} it holds no slot for"
            )

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction:
        """As `Forgetful`, but a cancel leaves a tombstone and work after a cancel is dropped."""
        if task is WorkerTask.TAKE and memory in (_M.CANCELED, _M.FREED):
            return _R(memory, _Y.FAILED)
        if task is WorkerTask.CANCEL and memory is _M.UNKNOWN:
            return _R(_M.CANCELED, _Y.NOOP)
        return super().react(task, memory)


class PerRole(WorkerContract):
    """Workers that differ per role: the source follows one contract, the destination another."""

    def __init__(self, source: WorkerContract, destination: WorkerContract) -> None:
        self.source = source
        self.destination = destination
        self.name = f"source={source.name},destination={destination.name}"
        self.summary = f"the source: {source.summary}; the destination: {destination.summary}"

    def for_role(self, role: Role) -> WorkerContract:
        return self.source if role is Role.SOURCE else self.destination

    def react(self, task: WorkerTask, memory: Any) -> WorkerReaction | tuple[WorkerReaction, ...]:
        raise TypeError(f"{self.name}: ask for_role(role) which contract a worker follows")


FORGETFUL = Forgetful()
TOMBSTONE = Tombstone()
CONTRACTS: dict[str, WorkerContract] = {FORGETFUL.name: FORGETFUL, TOMBSTONE.name: TOMBSTONE}
"""The shipped contracts, by name."""

MEMORY_LIMIT = 64
"""The most memories a contract may reach from its `initial` one: a model needs a finite set."""


class ContractTable:
    """A contract tabulated per role, for every task and every memory it reaches from its
    `initial` one, checked once: what the tools run.

    Raises ValueError naming the contract and the cell when `react` raises, answers something
    that is not a `WorkerReaction`, answers differently when asked again, or reaches more than
    `MEMORY_LIMIT` memories.
    """

    def __init__(self, contract: WorkerContract) -> None:
        self.contract = contract
        self.name = str(contract.name)
        self._cells: dict[tuple[Role, WorkerTask, Hashable], tuple[WorkerReaction, ...]] = {}
        self._memories: dict[Role, tuple[Hashable, ...]] = {}
        self._serving: dict[tuple[Role, Hashable], bool] = {}
        self._of_role = {role: _role_contract(contract, role) for role in Role}
        for role, own in self._of_role.items():
            self._memories[role] = self._tabulate(role, own)
            for memory in self._memories[role]:
                self._serving[role, memory] = _serves(own, memory)

    def _tabulate(self, role: Role, contract: WorkerContract) -> tuple[Hashable, ...]:
        initial = _initial(contract)
        found: dict[Hashable, None] = {initial: None}
        queue = [initial]
        for memory in queue:  # grows as new memories are reached
            for task in WorkerTask:
                reactions = _reactions(contract, task, memory)
                self._cells[role, task, memory] = reactions
                for reaction in reactions:
                    if reaction.memory not in found:
                        if len(found) >= MEMORY_LIMIT:
                            raise ValueError(
                                f"worker contract {contract.name!r} reaches more than "
                                f"{MEMORY_LIMIT} memories from {initial!r}: a model needs a "
                                "finite set of them"
                            )
                        found[reaction.memory] = None
                        queue.append(reaction.memory)
        return tuple(found)

    def serves(self, memory: Hashable, role: Role = Role.DESTINATION) -> bool:
        """Whether the worker of `role` remembering a request as `memory` serves it, looked
        up (`WorkerContract.serves`)."""
        return self._serving[role, memory]

    def initial(self, role: Role) -> Hashable:
        """What the worker of `role` remembers of a request it never saw."""
        return self._memories[role][0]

    def remembers(self, role: Role) -> int | None:
        """How many requests the worker of `role` remembers holding no slot (None: all)."""
        return self._of_role[role].remembers

    def memories(self, role: Role) -> tuple[Hashable, ...]:
        """Every memory the worker of `role` can reach, `initial` first."""
        return self._memories[role]

    def reactions(
        self, task: WorkerTask, memory: Hashable, role: Role = Role.SOURCE
    ) -> tuple[WorkerReaction, ...]:
        """Every way the worker of `role` may react, looked up."""
        return self._cells[role, task, memory]

    def react(self, task: WorkerTask, memory: Hashable, role: Role = Role.SOURCE) -> WorkerReaction:
        """The reaction of a worker that answers one way, looked up (the first of several)."""
        return self._cells[role, task, memory][0]

    @property
    def deterministic(self) -> bool:
        """Whether every cell has one reaction and both roles follow one contract."""
        one = all(len(reactions) == 1 for reactions in self._cells.values())
        return one and self._of_role[Role.SOURCE] is self._of_role[Role.DESTINATION]

    def __repr__(self) -> str:
        return f"<handoff contract table {self.name!r}>"


def _asked(where: str, ask: Callable[[], object], kind: type[T], expected: str) -> T:
    """What a contract answers `ask` (`where` names the call), a `kind`: whatever it raises,
    or an answer of another kind, is a ValueError saying where."""
    try:
        found = ask()
    except Exception as error:  # a user's contract may raise anything
        raise ValueError(f"{where} raised {type(error).__name__}: {error}") from None
    if not isinstance(found, kind):
        raise ValueError(f"{where} returned {found!r}; expected {expected}")
    return found


def _role_contract(contract: WorkerContract, role: Role) -> WorkerContract:
    where = f"worker contract {contract.name!r}: for_role({role.name})"
    return _asked(where, lambda: contract.for_role(role), WorkerContract, "a WorkerContract")


def _initial(contract: WorkerContract) -> Hashable:
    initial = contract.initial
    try:
        hash(initial)
    except TypeError:
        raise ValueError(
            f"worker contract {contract.name!r}: initial must be hashable, got {initial!r}"
        ) from None
    return initial


def _reactions(
    contract: WorkerContract, task: WorkerTask, memory: Hashable
) -> tuple[WorkerReaction, ...]:
    where = f"worker contract {contract.name!r}: react({task.name}, {_memory_name(memory)})"
    first, again = (_react(contract, task, memory, where) for _ in range(2))
    if set(first) != set(again):
        # A contract that keeps hidden state would be tabulated once per order and behave
        # differently in every tool: refuse it rather than judge a table it does not follow.
        raise ValueError(
            f"{where} answered {_all_words(first)}, then {_all_words(again)}: react must be a "
            "pure function of task and memory (keep no state on the contract)"
        )
    return first


def _react(
    contract: WorkerContract, task: WorkerTask, memory: Hashable, where: str
) -> tuple[WorkerReaction, ...]:
    try:
        found: object = contract.react(task, memory)
        answers = tuple(found) if isinstance(found, Iterable) else (found,)
    except Exception as error:  # a user's contract may raise anything
        raise ValueError(f"{where} raised {type(error).__name__}: {error}") from None
    if not answers:
        raise ValueError(f"{where} returned no reaction; expected at least one WorkerReaction")
    for answer in answers:
        if not isinstance(answer, WorkerReaction):
            raise ValueError(f"{where} returned {found!r}; expected a WorkerReaction")
    return tuple(dict.fromkeys(answers))  # each once, in the contract's order


def _serves(contract: WorkerContract, memory: Hashable) -> bool:
    where = f"worker contract {contract.name!r}: serves({_memory_name(memory)})"
    return _asked(where, lambda: contract.serves(memory), bool, "True or False")


def _memory_name(memory: Hashable) -> str:
    return memory.name if isinstance(memory, RequestMemory) else repr(memory)


def _all_words(reactions: tuple[WorkerReaction, ...]) -> str:
    return " or ".join(_words(reaction) for reaction in reactions)


def _words(reaction: WorkerReaction) -> str:
    slots = "" if reaction.slots is None else f", {reaction.slots.name}"
    return f"({_memory_name(reaction.memory)}, {reaction.reply.name}{slots})"


_TASKS: dict[type[HandoffAction], tuple[Role, WorkerTask]] = {
    HandoffAction.SubmitPrefill: (Role.SOURCE, WorkerTask.TAKE),
    HandoffAction.StartTransfer: (Role.SOURCE, WorkerTask.TRANSFER),
    HandoffAction.ReleaseSource: (Role.SOURCE, WorkerTask.RELEASE),
    HandoffAction.CancelSource: (Role.SOURCE, WorkerTask.CANCEL),
    HandoffAction.ReserveDestination: (Role.DESTINATION, WorkerTask.TAKE),
    HandoffAction.ActivateDestination: (Role.DESTINATION, WorkerTask.ACTIVATE),
    HandoffAction.CancelDestination: (Role.DESTINATION, WorkerTask.CANCEL),
}


def role_of(action: HandoffAction) -> Role | None:
    """The worker `action` goes to; None for `Complete`, which the runtime keeps."""
    found = _TASKS.get(type(action))
    return None if found is None else found[0]


def task_of(action: HandoffAction) -> WorkerTask:
    """What `action` asks of its worker (not defined for `Complete`)."""
    return _TASKS[type(action)][1]


_FITTING = {
    HandoffAction.SubmitPrefill: HandoffActionOutcome.SUBMITTED,
    HandoffAction.ReserveDestination: HandoffActionOutcome.ACCEPTED,
    HandoffAction.StartTransfer: HandoffActionOutcome.SCHEDULED,
}

DROPPED = HandoffActionOutcome.failed("dropped by the worker")


def on_send(action: HandoffAction) -> HandoffActionOutcome | None:
    """The acknowledgement an `ON_SEND` runtime reports as it sends `action` (None: the
    worker's reply acknowledges it, as with `ON_REPLY`)."""
    return _FITTING.get(type(action))


def outcome_of(action: HandoffAction, reply: WorkerReply) -> HandoffActionOutcome | None:
    """The acknowledgement a worker's `reply` to `action` is (None: no acknowledgement)."""
    if reply is WorkerReply.DONE:
        return _FITTING.get(type(action), HandoffActionOutcome.APPLIED)
    if reply is WorkerReply.NOOP:
        return HandoffActionOutcome.NOOP
    if reply is WorkerReply.FAILED:
        return DROPPED
    return None


def find_contract(text: str, allowed: Collection[str] | None = None) -> WorkerContract:
    """The contract `text` names: a shipped one (`forgetful`, `tombstone`), `tombstone:K` (the
    last K requests remembered), `source=A,destination=B` (one contract per role, each
    named as here), or `MODULE:NAME`.

    NAME is a `WorkerContract` instance or a subclass built without arguments.  A name read
    from a file is data: with `allowed` given, a `MODULE:NAME` outside it is refused
    (`NotGiven`) before anything is imported, unless `text` itself is allowed whole.  Raises
    ValueError saying what is wrong and what would be right.
    """
    if allowed is not None and text.strip() in allowed:
        allowed = None
    if "=" in text:
        return _per_role(text, allowed)
    shipped = CONTRACTS.get(text.strip().casefold())
    if shipped is not None:
        return shipped
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if module_name.casefold() == TOMBSTONE.name and colon:
        if not name.isdecimal() or int(name) < 1:
            raise ValueError(f"{text!r}: tombstone:K remembers K requests, K a count from 1")
        return Tombstone(remembers=int(name))
    if not (colon and module_name and name):
        choices = ", ".join(CONTRACTS)
        raise ValueError(
            f"unknown worker contract {text!r}: expected {choices}, tombstone:K, "
            "source=A,destination=B or MODULE:NAME"
        )
    found = named_object(module_name, name, "worker contract", allowed)
    if isinstance(found, type) and issubclass(found, WorkerContract):
        try:
            found = found()
        except Exception as error:  # a user's class may raise anything
            raise ValueError(f"{text}() failed: {type(error).__name__}: {error}") from None
    if not isinstance(found, WorkerContract):
        raise ValueError(f"{text} is not a worker contract: derive it from WorkerContract")
    return found


def contract_spelling(contract: WorkerContract) -> str:
    """How a trace names `contract` so `find_contract` finds it again: a shipped contract's
    name, `tombstone:K`, `source=A,destination=B` (each spelled so), or `MODULE:CLASS` of a
    contract of one's own."""
    if CONTRACTS.get(contract.name) is contract:
        return contract.name
    if type(contract) is Tombstone and contract.remembers is not None:
        return contract.name  # tombstone:K, which names the bound
    if isinstance(contract, PerRole):
        source, destination = (contract_spelling(contract.for_role(role)) for role in Role)
        return f"source={source},destination={destination}"
    kind = type(contract)
    return f"{kind.__module__}:{kind.__qualname__}"


def _per_role(text: str, allowed: Collection[str] | None) -> WorkerContract:
    named: dict[str, WorkerContract] = {}
    for part in text.split(","):
        role, equals, contract = (piece.strip() for piece in part.partition("="))
        if not equals or role not in ("source", "destination") or role in named:
            raise ValueError(f"{text!r}: name one contract per role, as source=A,destination=B")
        named[role] = find_contract(contract, allowed)
    if len(named) != 2:
        raise ValueError(f"{text!r}: name a contract for both roles, as source=A,destination=B")
    return PerRole(named["source"], named["destination"])


def named_object(
    module_name: str, name: str, what: str, allowed: Collection[str] | None, missing: str = ""
) -> Any:
    """The object `MODULE:NAME` names, a `what` of one's own: ValueError (`missing`, else
    that the module has no such name) when it names nothing.  A name read from a file is
    data: with `allowed` given, a name outside it is refused (`NotGiven`) before anything is
    imported."""
    if allowed is not None and f"{module_name}:{name}" not in allowed:
        raise NotGiven(what, f"{module_name}:{name}")
    found = import_module(module_name)
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is None:
        raise ValueError(missing or f"module {module_name} has no {name}")
    return found


# A contract of one's own derives from `handoff.WorkerContract`: the names say so.
for _exported in (
    Message,
    MessageKind,
    PerRole,
    Role,
    RequestMemory,
    Slots,
    WorkerContract,
    WorkerReaction,
    WorkerReply,
    WorkerTask,
):
    _exported.__module__ = "handoff"
