"""The runtime's duties beyond carrying messages, as settings of the one `System`: what it
sends again once its timer says a message was lost (`Resend`, `--resend`) and what a worker's
restart does (`Restart`, `--restart`).  Apart from `config` so that a runtime profile
(`profiles`) can name them without importing the `System` that reads the profiles."""

from __future__ import annotations

import enum
from collections.abc import Collection
from typing import ClassVar

import attrs

__all__ = ["Resend", "Restart"]


class Resend(enum.Enum):
    """What the runtime sends again once its timer says a message was lost; the value is its
    option (`--resend`)."""

    NONE = "none"
    """Nothing: it reports `TimedOut` for the handoff instead."""
    CLEANUPS = "cleanups"
    """A lost `ReleaseSource`, `CancelSource` or `CancelDestination`, or its lost
    acknowledgement; any other loss is reported `TimedOut`."""
    EVERYTHING = "everything"
    """Every lost message, whichever way it went: nothing is reported `TimedOut`."""

    @property
    def words(self) -> str:
        """The policy in a report's words (nothing for `NONE`, the contract's default)."""
        if self is Resend.NONE:
            return ""
        what = "cleanups" if self is Resend.CLEANUPS else "messages"
        return f", lost {what} re-sent"


@attrs.frozen
class Restart:
    """What a worker's restart (`--faults crash`) does, choice by choice; the default is a
    restart that loses nothing in flight, frees every slot and forgets every request."""

    loses_inbox: bool = False
    """The actions on their way to it are lost with it: the runtime's timer notices each,
    and re-sends it if its `--resend` policy covers it, else reports `TimedOut`."""
    keeps_slots: bool = False
    """It forgets its requests but not the KV slots it held for them: nobody frees those."""
    durable_tombstones: bool = False
    """It keeps what it remembers of the requests it holds no slot for (its tombstones)."""
    refuses_unvouched: bool = False
    """The runtime stamps each action with the worker's generation, and a restarted worker
    refuses, as failed, work (a submission, reservation, transfer or activation) sent before
    its restart; a restarted destination also refuses the KV write of a transfer whose
    reservation it took before its restart (`runtime.fenced`), which the source then answers
    as failed."""

    WORDS: ClassVar[dict[str, str]] = {
        "loses-inbox": "loses_inbox",
        "keeps-slots": "keeps_slots",
        "durable-tombstones": "durable_tombstones",
        "refuses-unvouched": "refuses_unvouched",
    }
    """Each choice as the command line spells it (`--restart`), and its field."""

    @classmethod
    def of(cls, words: Collection[str]) -> Restart:
        """The restart `words` name, each a key of `WORDS` (else a `ValueError`)."""
        unknown = [word for word in words if word not in cls.WORDS]
        if unknown:
            choices = ", ".join(cls.WORDS)
            raise ValueError(f"unknown restart choice {unknown[0]!r}: expected any of {choices}")
        return cls(**{cls.WORDS[word]: True for word in words})

    @property
    def spelling(self) -> tuple[str, ...]:
        """The choices made, as the command line spells them."""
        return tuple(word for word, field in self.WORDS.items() if getattr(self, field))

    @property
    def words(self) -> str:
        """What a report says of it (nothing for the default)."""
        parts = {
            "loses-inbox": "loses its inbox",
            "keeps-slots": "keeps its slots",
            "durable-tombstones": "keeps its tombstones",
            "refuses-unvouched": "refuses work and KV writes sent before it",
        }
        chosen = [parts[word] for word in self.spelling]
        return f", a restarted worker {' and '.join(chosen)}" if chosen else ""
