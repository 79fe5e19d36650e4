"""Traces: the shipped examples replay, divergences are pinpointed, bad files are refused."""

from __future__ import annotations

import enum
import typing
import uuid
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from handoff import (
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    IssuedHandoffAction,
)
from handoff.__main__ import main
from handoff._runs.replay import CallResult, Monitor, record, replay
from handoff._runs.trace import Entry, Trace, TraceError, call_object, read_trace, write_trace
from handoff._system.call import Call, CallKind
from handoff._system.properties import Finding

TRACES = sorted((Path(__file__).parent / "traces").glob("*.jsonl"))
EXAMPLE = Path(__file__).parent / "traces" / "source_first_success.jsonl"
HID = HandoffId(uuid.UUID(int=10))
HEADER = (
    '{"handoff_id":"00000000-0000-0000-0000-00000000000a","order":"SourceFirst",'
    '"fallback_transfer_delay_ms":0.0}\n'
)


def _bare(trace: Trace) -> Trace:
    return attrs.evolve(trace, entries=tuple(Entry(entry.call) for entry in trace.entries))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


# -- calls ---------------------------------------------------------------------------------


def test_a_call_carries_exactly_the_arguments_of_its_method() -> None:
    fact = HandoffFact.Canceled(HID)
    with pytest.raises(ValueError, match="a start call takes no arguments"):
        Call(CallKind.START, fact)
    with pytest.raises(ValueError, match="a fact call takes a fact and nothing else"):
        Call(CallKind.FACT)
    with pytest.raises(ValueError, match="an outcome call takes an action id and an outcome"):
        Call(CallKind.OUTCOME, action_id=HandoffActionId(1))


def test_a_call_in_words_and_its_label() -> None:
    assert Call.start().describe() == "start()"
    assert str(Call.of_fact(HandoffFact.DestinationReserved(HID, 7))) == (
        "on_fact(DestinationReserved(7))"
    )
    outcome = Call.of_outcome(HandoffActionId(3), HandoffActionOutcome.failed("x"))
    assert outcome.describe() == 'on_action_outcome(3, Failed("x"))'
    labelled = Call.of_fact(HandoffFact.Failed(HID), "on_fact(Failed, said loudly)")
    assert labelled.label == "on_fact(Failed, said loudly)"
    # The words are not part of the call: a trace drops them, and equality ignores them.
    assert labelled == Call.of_fact(HandoffFact.Failed(HID))
    assert labelled.terminal
    assert not Call.of_fact(HandoffFact.Failed(HID), usable=False).terminal


def test_a_call_is_spelled_in_a_report_as_in_a_trace() -> None:
    call = Call.of_outcome(HandoffActionId(3), HandoffActionOutcome.NOOP)
    assert call_object(call) == {"call": "outcome", "id": 3, "outcome": "Noop"}
    assert call_object(Call.start()) == {"call": "start"}


# -- the shipped examples ------------------------------------------------------------------


def test_the_examples_cover_both_orders_success_cancel_reopen_and_rejections() -> None:
    names = {path.stem for path in TRACES}
    assert {
        "source_first_success",
        "destination_first_success",
        "destination_first_cancel",
        "source_first_reopen",
        "source_first_rejected",
    } <= names
    rejected = read_trace(Path(__file__).parent / "traces" / "source_first_rejected.jsonl")
    assert sum(entry.expect_error is not None for entry in rejected.entries) == 3


@pytest.mark.parametrize("path", TRACES, ids=lambda path: path.stem)
def test_each_example_replays_and_states_every_answer(path: Path) -> None:
    trace = read_trace(path)
    assert all(entry.expect is not None or entry.expect_error for entry in trace.entries)
    verdict = replay(trace)
    assert verdict.ok
    assert verdict.calls == len(trace.entries)


@pytest.mark.parametrize("path", TRACES, ids=lambda path: path.stem)
def test_recording_an_example_again_rewrites_it_byte_for_byte(path: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    write_trace(record(_bare(read_trace(path))), again)
    assert again.read_bytes() == path.read_bytes()


# -- divergences ---------------------------------------------------------------------------


def test_a_changed_expectation_is_reported_at_its_line(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text().splitlines()
    # Line 6 (the DestinationReserved fact) issues StartTransfer #2; claim it issued nothing.
    assert '"DestinationReserved"' in lines[5]
    lines[5] = lines[5].split(',"expect":')[0] + ',"expect":[]}'
    divergence = replay(read_trace(_write(tmp_path, "\n".join(lines) + "\n"))).divergence
    assert divergence is not None
    assert divergence.line == 6
    assert divergence.chart_state == "destination_accepted"
    assert divergence.expected == "[]"
    assert "StartTransfer" in divergence.actual


def test_an_expected_error_that_does_not_happen_diverges() -> None:
    trace = read_trace(EXAMPLE)
    entries = list(trace.entries)
    entries[1] = Entry(entries[1].call, expect_error="unknown handoff action 0")
    divergence = replay(attrs.evolve(trace, entries=tuple(entries))).divergence
    assert divergence is not None
    assert (divergence.line, divergence.actual) == (3, "[]")


def test_an_expected_error_is_compared_whole() -> None:
    path = Path(__file__).parent / "traces" / "source_first_rejected.jsonl"
    trace = read_trace(path)
    (index, entry) = next((i, e) for i, e in enumerate(trace.entries) if e.expect_error)
    message = entry.expect_error
    assert message is not None
    assert message.startswith("source held before prefill submission was acknowledged (")
    for wrong in ("", "source held", message + ".", message.upper()):
        entries = list(trace.entries)
        entries[index] = Entry(entry.call, expect_error=wrong)
        divergence = replay(attrs.evolve(trace, entries=tuple(entries))).divergence
        assert divergence is not None, wrong
        assert divergence.actual == f"error {message!r}"


def test_a_replay_goes_on_after_a_divergence_and_each_monitor_reports_once() -> None:
    trace = read_trace(EXAMPLE)
    entries = list(trace.entries)
    entries[0] = Entry(entries[0].call, expect=())
    seen: list[tuple[str, CallResult]] = []

    def watch_everything(_: Trace) -> Monitor:
        def judge(call: Call, answer: CallResult) -> str | None:
            seen.append((call.describe(), answer))
            return None

        return _Judge(judge)

    def no_release(_: Trace) -> Monitor:
        def judge(call: Call, answer: CallResult) -> str | None:
            released = any(isinstance(i.action, HandoffAction.ReleaseSource) for i in answer.issued)
            return "the source was released" if released or call.kind is CallKind.FACT else None

        return _Judge(judge)

    verdict = replay(attrs.evolve(trace, entries=tuple(entries)), [watch_everything, no_release])
    assert verdict.divergence is not None
    assert verdict.divergence.line == 2
    assert len(seen) == len(entries)
    assert seen[0][0] == "start()"
    assert seen[-1][1].issued[0].action == HandoffAction.Complete(trace.handoff_id)
    # The first fact is the monitor's one violation: it is not asked again after that.
    (violation,) = verdict.violations
    assert (violation.line, violation.message) == (4, "P (held): the source was released")
    assert violation.chart_state == "prefill_running"
    assert not verdict.ok


class _Held(enum.Enum):
    """The one property `_Judge` judges."""

    P = "P"


@attrs.frozen
class _Judge:
    """A monitor judging property P (held) one call at a time, with `judge`."""

    judge: Callable[[Call, CallResult], str | None]

    def see(self, call: Call, answer: CallResult) -> list[Finding]:
        said = self.judge(call, answer)
        return [] if said is None else [Finding(_Held.P, "held", said)]

    def end(self) -> list[Finding]:
        return []


class _Crashing(HandoffCoordinatorCore):
    """A coordinator whose `start()` crashes (as a broken chart might)."""

    __slots__ = ()

    def start(self) -> list[IssuedHandoffAction]:
        raise KeyError("oops")


def _crashing(trace: Trace) -> _Crashing:
    return _Crashing(trace.handoff_id, trace.order)


def test_a_crash_is_a_divergence_not_a_traceback() -> None:
    trace = read_trace(EXAMPLE)
    verdict = replay(trace, coordinator=_crashing(trace))
    assert verdict.divergence is not None
    assert verdict.divergence.actual == "crash KeyError: 'oops'"
    entry = Entry(Call.start(), expect_error="'oops'")
    verdict = replay(attrs.evolve(trace, entries=(entry,)), coordinator=_crashing(trace))
    assert verdict.divergence is not None


# -- what a trace survives -----------------------------------------------------------------


def test_a_reason_with_any_line_separator_survives_a_round_trip(tmp_path: Path) -> None:
    reason = "busy\u2028retry\u2029later\x85now\x0bthen\x0c\r\n"
    trace = read_trace(Path(__file__).parent / "traces" / "source_first_rejected.jsonl")
    entries = [
        attrs.evolve(
            entry,
            call=Call.of_outcome(
                typing.cast(HandoffActionId, entry.call.action_id),
                HandoffActionOutcome.failed(reason),
            ),
        )
        if entry.call.outcome == HandoffActionOutcome.failed("busy")
        else entry
        for entry in trace.entries
    ]
    recorded = record(_bare(attrs.evolve(trace, entries=tuple(entries))))
    path = tmp_path / "separators.jsonl"
    write_trace(recorded, path)
    again = read_trace(path)
    assert again == recorded
    # The refusal quotes the reason: U+2028 as it is, the ASCII controls escaped.
    assert any("\u2028retry\u2029" in (entry.expect_error or "") for entry in again.entries)
    assert replay(again).ok


def test_a_trace_that_cannot_be_written_leaves_nothing_behind(tmp_path: Path) -> None:
    trace = read_trace(EXAMPLE)
    with pytest.raises(TraceError, match="cannot write"):
        write_trace(trace, tmp_path / "missing" / "t.jsonl")
    surrogate = Entry(Call.of_outcome(HandoffActionId(0), HandoffActionOutcome.failed("\ud800")))
    target = tmp_path / "t.jsonl"
    with pytest.raises(TraceError, match="lone surrogate"):
        write_trace(attrs.evolve(trace, entries=(surrogate,)), target)
    assert list(tmp_path.iterdir()) == []


def test_a_truncated_trace_is_refused(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    lines = text.splitlines(keepends=True)
    assert lines[-1] == '{"end":{"calls":9}}\n'
    without_end = "".join(lines[:-1])
    with pytest.raises(TraceError, match=r"t\.jsonl: no end line after 9 calls: .* --record"):
        read_trace(_write(tmp_path, without_end))
    # Cut inside its last call: refused from its tail, before any call is parsed.
    with pytest.raises(TraceError, match=r"t\.jsonl: no end line after 9 calls"):
        read_trace(_write(tmp_path, text[: -len(lines[-1]) - 20]))
    with pytest.raises(TraceError, match=r":10: not JSON|:10: malformed JSON"):
        read_trace(_write(tmp_path, text[: -len(lines[-1]) - 20]), require_end=False)
    short = "".join([*lines[:-2], lines[-1]])
    with pytest.raises(TraceError, match=":10: the end line counts 9 calls, the trace has 8"):
        read_trace(_write(tmp_path, short))
    with pytest.raises(TraceError, match=":13: a line after the end line"):
        read_trace(_write(tmp_path, text + "\n" + lines[1]))
    # Without its end line a trace may still be read as complete, to be rewritten with one.
    assert len(read_trace(_write(tmp_path, without_end), require_end=False).entries) == 9


def test_crlf_line_ends_and_blank_lines_are_read(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    trace = read_trace(_write(tmp_path, "\n" + text.replace("\n", "\r\n\n")))
    assert trace == read_trace(EXAMPLE)
    assert trace.entries[1].line == 6  # where it is in this file, for the verdicts


_START = '{"call":"start"}\n'
_END = '{"end":{"calls":1}}\n'


def test_a_byte_order_mark_opening_a_trace_is_read_past(tmp_path: Path) -> None:
    # Some editors save UTF-8 with a byte order mark; JSON never starts with one.
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    assert read_trace(marked) == read_trace(EXAMPLE)
    assert main(["replay", str(marked)]) == 0
    # Anywhere else it is what it is: not JSON.
    inner = tmp_path / "inner.jsonl"
    first, rest = EXAMPLE.read_text(encoding="utf-8").split("\n", 1)
    inner.write_text(first + "\n\ufeff" + rest, encoding="utf-8")
    with pytest.raises(TraceError, match=r"inner\.jsonl:2: "):
        read_trace(inner)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty: a trace starts with a header line"),
        ("not json\n", ":1: malformed JSON: Expecting value at line 1 column 1"),
        ("[1]\n", ":1: $: expected a JSON object, got an array of 1 items"),
        (
            '{"handoff_id":"x","order":"SourceFirst","fallback_transfer_delay_ms":0}\n',
            ":1: $.handoff_id: expected a UUID string like 0123abcd-0123-0123-0123-0123456789ab, "
            'got the string "x"',
        ),
        ('{"order":"SourceFirst","fallback_transfer_delay_ms":0}\n', ":1: missing 'handoff_id'"),
        (_START, ":1: unexpected key 'call' (expected handoff_id, order"),
        (HEADER + '{"call":"jump"}\n', ':2: $.call: expected "start", "fact" or "outcome"'),
        (HEADER + '{"call":"fact","fact":{"Exploded":{}}}\n', ":2: $.fact"),
        (HEADER + '{"call":"start","call":"fact"}\n', ":2: $.call: duplicate key"),
        (HEADER + '{"call":"start","when":1}\n', ":2: unexpected key 'when' (expected call, "),
        (HEADER + '{"call":"start","id":1}\n', ":2: unexpected key 'id'"),
        (HEADER + '{"call":"outcome","id":1}\n', ":2: missing 'outcome'"),
        (HEADER + '{"call":"start","expect":{}}\n', ":2: $.expect: expected an array of issued"),
        (HEADER + '{"call":"start","expect":[{"id":0}]}\n', r":2: $.expect[0]"),
        (HEADER + '{"call":"start","expect_error":7}\n', ":2: $.expect_error: expected a string"),
        (
            HEADER + '{"call":"start","expect":[],"expect_error":"x"}\n',
            ":2: a call expects actions or an error, not both",
        ),
        (HEADER + _START + '{"end":{"calls":1.0}}\n', ":3: the end line counts 1.0 calls"),
        (HEADER + _START + '{"end":1}\n', ':3: the end line must be {"end":{"calls":N}}'),
        (HEADER + _START + '{"end":{"calls":1},"x":2}\n', ":3: unexpected key 'x'"),
        (HEADER.replace("0.0", "-1"), ":1: fallback_transfer_delay_ms must be a finite, non-"),
        (HEADER.replace("0.0", "true"), ":1: fallback_transfer_delay_ms must be a finite"),
        (HEADER.replace("0.0", "1e400"), ":1: malformed JSON: number out of range: 1e400"),
        (HEADER.replace("0.0", "NaN"), ":1: malformed JSON: NaN is not JSON"),
        (HEADER.replace("0.0", "9" * 5000), ":1: malformed JSON: number out of range: 999"),
        (HEADER + '{"call":"outcome","id":' + "9" * 400 + ',"outcome":"Noop"}\n', "out of range"),
        (
            HEADER + '{"call":"outcome","id":18446744073709551616,"outcome":"Noop"}\n',
            ":2: $.id: expected",
        ),
        (HEADER + '{"call":"start","expect":' + "[" * 100_000 + "\n", "nested too deeply"),
        (HEADER + '{"call":"fact","fact":' + '{"a":' * 5000 + "1" + "}" * 5001 + "\n", ":2:"),
    ],
)
def test_a_malformed_trace_is_one_clear_error_with_its_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = _write(tmp_path, content + (_END if content.startswith(HEADER) else ""))
    with pytest.raises(TraceError) as raised:
        read_trace(path)
    assert str(raised.value).startswith(str(path))
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_file_that_is_not_a_readable_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(tmp_path / "missing.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(HEADER.encode() + b'{"call":"start","expect_error":"\xe9"}\n')
    with pytest.raises(TraceError, match=r"not UTF-8 \(byte 141\)"):
        read_trace(path)


# -- the command ---------------------------------------------------------------------------


def test_each_file_gets_its_verdict_and_the_exit_status_is_the_worst(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", *map(str, TRACES)]) == 0
    assert capsys.readouterr().out.count("OK ") == len(TRACES)
    lines = EXAMPLE.read_text().splitlines()
    diverging = tmp_path / "diverging.jsonl"
    diverging.write_text("\n".join([lines[0], '{"call":"start","expect":[]}', *lines[2:]]) + "\n")
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.write_text("\n".join(lines[:-1]) + "\n")
    assert main(["replay", str(diverging), str(EXAMPLE)]) == 1
    out = capsys.readouterr().out
    assert f"DIVERGED {diverging}:2: start()" in out
    assert "chart state before the call: idle" in out
    assert f"OK {EXAMPLE} (9 calls)" in out
    assert main(["replay", str(unreadable), str(diverging), str(EXAMPLE)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"handoff replay: error: {unreadable}: no end line after 9 calls: the trace was cut "
        "short, or was written before traces ended with one (if it is complete, "
        "`handoff replay --record` adds the end line)\n"
    )
    assert f"DIVERGED {diverging}:2" in captured.out
    assert f"OK {EXAMPLE}" in captured.out


def test_record_adds_the_end_line_and_the_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "bare.jsonl"
    bare.write_text(HEADER + _START + '{"call":"outcome","id":5,"outcome":"Noop"}\n')
    assert main(["replay", "--record", str(bare)]) == 0
    assert capsys.readouterr().out == f"RECORDED {bare} (2 calls)\n"
    text = bare.read_text().splitlines()
    assert text[-1] == '{"end":{"calls":2}}'
    assert text[-2].endswith(',"expect_error":"unknown handoff action 5 (the journal holds [0])"}')
    assert main(["replay", str(bare)]) == 0
    assert main(["replay", "--record", str(tmp_path / "none.jsonl")]) == 2


def test_the_command_reports_each_monitor_violation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from handoff._runs import replay_cli

    def never_complete(trace: Trace) -> Monitor:
        assert trace.order is HandoffOrder.SOURCE_FIRST

        def judge(call: Call, answer: CallResult) -> str | None:
            if any(isinstance(item.action, HandoffAction.Complete) for item in answer.issued):
                return "Complete was issued"
            return None

        return _Judge(judge)

    args = type("Args", (), {"traces": [EXAMPLE], "record": False})()
    assert replay_cli.run(args, [never_complete]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"VIOLATED {EXAMPLE}:10: on_action_outcome(4, Applied)",
        "  chart state before the call: releasing",
        "  P (held): Complete was issued",
    ]


def test_the_example_in_the_docs_replays(tmp_path: Path) -> None:
    page = (Path(__file__).parent.parent / "docs" / "traces.md").read_text()
    example = page.split("A complete example", 1)[1].split("```\n")[1]
    trace = read_trace(_write(tmp_path, example))
    assert len(trace.entries) == 4
    assert replay(trace).ok
    assert record(_bare(trace)) == trace
