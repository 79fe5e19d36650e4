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
forgets it, so a submission that arrives after its own cancel is run and its slot held for
ever; `TOMBSTONE` remembers the cancel and drops the late work.  Write your own by
subclassing `WorkerContract` and overriding `react`; the model review
(`handoff review --workers MODULE:NAME`) and the simulation take it as they take these.
"""

from __future__ import annotations

import argparse
import enum
from typing import Any, NamedTuple

import attrs

from handoff._compile.lookup import _import as import_module
from handoff._values.messages import HandoffAction, HandoffFact
from handoff._values.values import HandoffActionOutcome

__all__ = [
    "CONTRACTS",
    "DROPPED",
    "FORGETFUL",
    "TOMBSTONE",
    "WORKERS_HELP",
    "Acknowledge",
    "ContractTable",
    "Forgetful",
    "Message",
    "MessageKind",
    "RequestMemory",
    "Role",
    "Tombstone",
    "WorkerContract",
    "WorkerReaction",
    "WorkerReply",
    "WorkerTask",
    "contract_argument",
    "find_contract",
    "on_send",
    "outcome_of",
    "role_of",
    "task_of",
]


class Role(enum.Enum):
    """Which worker an action goes to."""

    SOURCE = "source"
    DESTINATION = "destination"


class WorkerTask(enum.Enum):
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


class RequestMemory(enum.Enum):
    """What a worker remembers of one request id."""

    UNKNOWN = "unknown"
    """Never seen, or forgotten."""
    HELD = "held"
    """A KV slot is held for it: the only memory that holds a slot."""
    FREED = "freed"
    """A slot was held for it and is free again."""
    CANCELED = "canceled"
    """A cancel came before any work: a tombstone, remembered so that late work is dropped."""


class WorkerReply(enum.Enum):
    """How a worker acknowledges an action."""

    DONE = "done"
    """The action's fitting outcome (`SUBMITTED`, `ACCEPTED`, `SCHEDULED`, `APPLIED`)."""
    NOOP = "noop"
    """`NOOP`: nothing to do (a release or cancel of what is not held)."""
    FAILED = "failed"
    """A failed outcome: the work was not done."""
    SILENT = "silent"
    """No acknowledgement at all."""


@attrs.frozen
class WorkerReaction:
    """What a worker does with one task: what it remembers afterwards, how it replies."""

    memory: RequestMemory = attrs.field(validator=attrs.validators.instance_of(RequestMemory))
    reply: WorkerReply = attrs.field(validator=attrs.validators.instance_of(WorkerReply))

    @property
    def holds(self) -> bool:
        """Whether the worker holds a KV slot for the request afterwards."""
        return self.memory is RequestMemory.HELD


class MessageKind(enum.IntEnum):
    """What a message between the runtime's coordinator and a worker carries; the value orders
    messages canonically."""

    ACTION = 0
    OUTCOME = 1
    FACT = 2


class Message(NamedTuple):
    """One message in flight: an action to a worker, or an outcome or fact back from it."""

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

    def describe(self) -> str:
        """The message in words: `#0 SubmitPrefill`, `#0 Submitted`, `SourceHeld`; a copy
        is `#0 SubmitPrefill (copy)`."""
        again = " (copy)" if self.copy else ""
        if self.kind is MessageKind.ACTION:
            return f"#{self.action_id} {type(self.action).__name__}{again}"
        if self.kind is MessageKind.OUTCOME:
            return f"#{self.action_id} {self.outcome}{again}"
        return f"{type(self.fact).__name__}{again}"


class WorkerContract:
    """How workers treat each task; subclass it and override `react` to write your own.

    `react` must be a pure function of its two arguments: the review tabulates it once, for
    every task and memory, and the simulation looks answers up in that table.
    """

    name = "workers"
    """The contract's name in reports."""
    summary = ""
    """One sentence saying what the contract promises, for reports."""

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        """What the worker does with `task` for a request it remembers as `memory`."""
        raise NotImplementedError(f"{type(self).__name__} must define react(task, memory)")

    def __repr__(self) -> str:
        return f"<handoff worker contract {self.name!r}>"


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

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        """Take every submission; free what is held on release or cancel; `NOOP` otherwise."""
        held = memory is _M.HELD
        if task is WorkerTask.TAKE:
            return _R(_M.HELD, _Y.DONE)
        if task in (WorkerTask.TRANSFER, WorkerTask.ACTIVATE):
            return _R(memory, _Y.DONE if held else _Y.FAILED)
        if held:
            return _R(_M.FREED, _Y.DONE)
        return _R(memory, _Y.NOOP)


class Tombstone(Forgetful):
    """Every canceled request id is remembered, and later work for it dropped (`FAILED`)."""

    name = "tombstone"
    summary = (
        "a worker remembers every canceled request id and drops later work for it, "
        "acknowledging it as failed"
    )

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        """As `Forgetful`, but a cancel leaves a tombstone and work after a cancel is dropped."""
        if task is WorkerTask.TAKE and memory in (_M.CANCELED, _M.FREED):
            return _R(memory, _Y.FAILED)
        if task is WorkerTask.CANCEL and memory is _M.UNKNOWN:
            return _R(_M.CANCELED, _Y.NOOP)
        return super().react(task, memory)


FORGETFUL = Forgetful()
TOMBSTONE = Tombstone()
CONTRACTS: dict[str, WorkerContract] = {FORGETFUL.name: FORGETFUL, TOMBSTONE.name: TOMBSTONE}
"""The shipped contracts, by name."""


class ContractTable:
    """A contract tabulated for every task and memory, checked once: what the tools run.

    Raises ValueError naming the contract and the cell when `react` raises or answers
    something that is not a `WorkerReaction`.
    """

    def __init__(self, contract: WorkerContract) -> None:
        self.contract = contract
        self.name = str(contract.name)
        self._cells = {
            (task, memory): _reaction(contract, task, memory)
            for task in WorkerTask
            for memory in RequestMemory
        }

    def react(self, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
        """The contract's reaction, looked up."""
        return self._cells[task, memory]

    def __repr__(self) -> str:
        return f"<handoff contract table {self.name!r}>"


def _reaction(contract: WorkerContract, task: WorkerTask, memory: RequestMemory) -> WorkerReaction:
    where = f"worker contract {contract.name!r}: react({task.name}, {memory.name})"
    first, again = (_react(contract, task, memory, where) for _ in range(2))
    if first != again:
        # A contract that keeps hidden state would be tabulated once per order and behave
        # differently in every tool: refuse it rather than judge a table it does not follow.
        raise ValueError(
            f"{where} answered {_words(first)}, then {_words(again)}: react must be a pure "
            "function of task and memory (keep no state on the contract)"
        )
    return first


def _react(
    contract: WorkerContract, task: WorkerTask, memory: RequestMemory, where: str
) -> WorkerReaction:
    try:
        found = contract.react(task, memory)
    except Exception as error:  # a user's contract may raise anything
        raise ValueError(f"{where} raised {type(error).__name__}: {error}") from None
    if not isinstance(found, WorkerReaction):
        raise ValueError(f"{where} returned {found!r}; expected a WorkerReaction")
    return found


def _words(reaction: WorkerReaction) -> str:
    return f"({reaction.memory.name}, {reaction.reply.name})"


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


class Acknowledge(enum.Enum):
    """When the runtime acknowledges work that takes or moves KV; the value is its option."""

    ON_REPLY = "on-reply"
    """The worker's reply carries the acknowledgement: it has the work when it is reported."""
    ON_SEND = "on-send"
    """The runtime reports `Submitted`, `Accepted` or `Scheduled` as it sends the work, before
    the worker has it (as docs/integrating.md's asyncio runtime does for `Submitted` and
    `Scheduled`); the worker then only
    reports the work's fact, or `Failed` when it did not do it."""


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


def find_contract(text: str) -> WorkerContract:
    """The contract `text` names: a shipped one (`forgetful`, `tombstone`) or `MODULE:NAME`.

    NAME is a `WorkerContract` instance or a subclass built without arguments.  Raises
    ValueError saying what is wrong and what would be right.
    """
    shipped = CONTRACTS.get(text.strip().casefold())
    if shipped is not None:
        return shipped
    module_name, colon, name = (part.strip() for part in text.partition(":"))
    if not (colon and module_name and name):
        choices = ", ".join(CONTRACTS)
        raise ValueError(f"unknown worker contract {text!r}: expected {choices} or MODULE:NAME")
    found = _attribute(import_module(module_name), module_name, name)
    if isinstance(found, type) and issubclass(found, WorkerContract):
        try:
            found = found()
        except Exception as error:  # a user's class may raise anything
            raise ValueError(f"{text}() failed: {type(error).__name__}: {error}") from None
    if not isinstance(found, WorkerContract):
        raise ValueError(f"{text} is not a worker contract: derive it from WorkerContract")
    return found


def contract_argument(text: str) -> WorkerContract:
    """An argparse type: a worker contract, shipped (`forgetful`, `tombstone`) or MODULE:NAME,
    tabulated once so that a contract that raises, answers what is not a reaction or keeps
    hidden state is a usage error before any work."""
    try:
        found = find_contract(text)
        ContractTable(found)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return found


WORKERS_HELP = (
    "forgetful (a cancel for an unseen request is answered Noop and forgotten), tombstone "
    "(canceled ids are remembered and late work dropped), or MODULE:NAME, a WorkerContract "
    "of your own"
)
"""How every command's `--workers` help ends."""


def _attribute(module: Any, module_name: str, name: str) -> Any:
    found = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ValueError(f"module {module_name} has no {name}")
    return found


# A contract of one's own derives from `handoff.WorkerContract`: the names say so.
for _exported in (RequestMemory, WorkerContract, WorkerReaction, WorkerReply, WorkerTask):
    _exported.__module__ = "handoff"
