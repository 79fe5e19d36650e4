"""The conformance check's parts, in this process: the protocol's lines, the reference driver,
the checker against drivers that break the protocol, a walk's shrinking, and `handoff conform`
itself through `main` (`test_conform.py` runs the command end to end, in subprocesses)."""

from __future__ import annotations

import contextlib
import io
import math
import re
import sys
from pathlib import Path

import attrs
import pytest
from drivers.wrong_noop_cancel import ForgetsCompletion

from handoff import (
    ConflictingOutcomeError,
    ForeignFactError,
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinatorCore,
    HandoffFact,
    HandoffOrder,
    InvalidTransferTimingError,
    KvTransferTimingMode,
    OutOfOrderFactError,
    UnknownActionError,
)
from handoff.__main__ import main
from handoff._review.conform.check import Broken, Checker
from handoff._review.conform.child import KEPT_STDERR, Implementation, Misbehaved
from handoff._review.conform.protocol import (
    Answer,
    CallRequest,
    Close,
    Closed,
    ErrorKind,
    Hello,
    Open,
    Opened,
    ProtocolError,
    ProtocolLine,
    Reply,
    read,
    write,
)
from handoff._review.conform.suite import (
    PAYLOADS,
    Model,
    Payload,
    Suite,
    build_suite,
    carried,
    handoff_id,
)
from handoff._review.conform.vectors import vector_line, vectors_header
from handoff._review.environment import HANDOFF_ID, environment
from handoff._system.call import Call
from handoff.conform_driver import Driver, DriverError, replay_vectors, serve
from handoff.conform_driver import main as driver_main

TESTS = Path(__file__).resolve().parent
PYTHON = sys.executable
REFERENCE = [PYTHON, "-m", "handoff.conform_driver"]
OUTCOME = HandoffActionOutcome.failed("no room")
SF = HandoffOrder.SOURCE_FIRST
HEADER = vectors_header(1)


def _driver(name: str, *args: str) -> list[str]:
    return [PYTHON, str(TESTS / "drivers" / f"{name}.py"), *args]


@pytest.fixture(scope="module")
def suite() -> Suite:
    return build_suite(Model(SF))


@pytest.fixture(scope="module")
def first_cases(suite: Suite) -> Suite:
    """The suite's first 300 cases: enough to reach a third call, quick to send."""
    return attrs.evolve(suite, cases=suite.cases[:300], probes=())


# -- the suite ---------------------------------------------------------------------------------


def test_every_call_of_the_suite_is_one_the_wire_carries(suite: Suite) -> None:
    env = environment()
    dropped = [call for call in env.facts if not carried(call)]
    # NaN and the infinities are written as null: exactly those three timings are left out.
    assert len(dropped) == 3
    assert all(call.fact is not None and not call.usable for call in dropped)
    assert suite.calls == sum(len(path) + 1 + len(tail) for path, _, tail in suite.cases) + sum(
        len(probe.calls) for probe in suite.probes
    )


def test_a_missing_implementation_or_none_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for args, says in [
        ([], "give the implementation to check after --"),
        (["--", "no-such-program-anywhere"], "cannot start no-such-program-anywhere"),
        (["--timeout", "0", "--", *REFERENCE], "--timeout: expected a number of seconds"),
    ]:
        assert main(["conform", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("handoff conform: error: "), err
        assert says in err


# -- the protocol ------------------------------------------------------------------------------


def test_every_message_reads_back_as_written() -> None:
    coordinator = HandoffCoordinatorCore(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    fresh = HandoffCoordinatorCore(HANDOFF_ID, HandoffOrder.DESTINATION_FIRST)
    fact = HandoffFact.Canceled(HANDOFF_ID)
    messages: list[ProtocolLine] = [
        Hello(1, "an engine"),
        Open(handoff_id(3), HandoffOrder.DESTINATION_FIRST, 2.5),
        Opened(handoff_id(3)),
        CallRequest(HANDOFF_ID, Call.of_fact(fact)),
        CallRequest(HANDOFF_ID, Call.of_outcome(HandoffActionId(4), OUTCOME)),
        Reply(HANDOFF_ID, Answer.of(Call.start(), coordinator)),
        Reply(HANDOFF_ID, Answer.of(Call.of_fact(HandoffFact.Failed(handoff_id(9))), coordinator)),
        # Canceled before start(): nothing was issued, so it completes at once.
        Reply(HANDOFF_ID, Answer.of(Call.of_fact(fact), fresh)),
    ]  # fmt: skip
    for message in messages:
        assert read(write(message)) == message
    completed = messages[-1]
    assert isinstance(completed, Reply)
    assert (completed.answer.complete, completed.answer.completion) == (
        True,
        HandoffCompletion.CANCELED,
    )
    refused = messages[-2]
    assert isinstance(refused, Reply)
    assert refused.answer.error is ErrorKind.FOREIGN_FACT
    assert read(write(refused)).answer.message == refused.answer.message  # type: ignore[union-attr]


def test_an_error_is_judged_by_its_kind_and_each_refusal_has_one() -> None:
    said = Answer(error=ErrorKind.UNKNOWN_ACTION, message="the reference's words")
    assert said == attrs.evolve(said, message="other words")
    assert said != attrs.evolve(said, error=ErrorKind.CONFLICTING_OUTCOME)
    named = {
        ForeignFactError: "ForeignFact",
        OutOfOrderFactError: "OutOfOrderFact",
        UnknownActionError: "UnknownAction",
        ConflictingOutcomeError: "ConflictingOutcome",
        InvalidTransferTimingError: "InvalidTransferTiming",
    }
    assert {cls: ErrorKind.of(cls("x")).value for cls in named} == named


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not JSON"),
        ("[1]", "expected a JSON object"),
        (
            '{"what":1}',
            'expected one of the keys "hello", "open", "opened", "close", "closed" or "handoff"',
        ),
        (
            '{"handoff":"00000000-0000-0000-0000-000000000001","error":{"kind":"Oops",'
            '"message":""},"complete":false,"completion":null,"lifecycle":[]}',
            "$.error.kind: expected one of ForeignFact",
        ),
        (
            '{"handoff":"00000000-0000-0000-0000-000000000001","issued":[],"complete":0,'
            '"completion":null,"lifecycle":[]}',
            "$.complete: expected true or false",
        ),
        ('{"handoff":"00000000-0000-0000-0000-000000000001","issued":[]}', "missing key"),
    ],
)
def test_a_line_that_is_not_the_protocol_says_why(line: str, says: str) -> None:
    with pytest.raises(ProtocolError, match=re.escape(says)):
        read(line)


# -- the reference driver ----------------------------------------------------------------------


def test_the_driver_refuses_a_request_it_cannot_serve_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opening = write(Open(handoff_id(0), HandoffOrder.SOURCE_FIRST)).encode()
    call = write(CallRequest(handoff_id(1), Call.start())).encode()
    for lines, says in [
        ([b"{}"], "line 1: expected one of the keys"),
        ([opening, opening], f"handoff {handoff_id(0)} is open already"),
        ([opening, call], f"a call for handoff {handoff_id(1)}, which was never opened"),
    ]:
        with pytest.raises(DriverError, match=re.escape(says)):
            serve(Driver(), lines, io.StringIO())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[]\n")))
    assert driver_main([]) == 2
    err = capsys.readouterr().err
    assert err == "python -m handoff.conform_driver: error: line 1: expected a JSON object\n"


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ([""], ':1: expected the header {"vectors":{"version":1,"lines":N}}'),
        (['{"vectors":{"version":2,"lines":0}}'], ":1: vectors of protocol version 2"),
        (['{"vectors":{"version":1,"lines":"1"}}'], ":1: lines must be a whole number"),
        ([HEADER, "{"], ":2: not JSON"),
        ([HEADER, '{"send":{}}'], ':2: expected {"send":…,"expect":…}'),
        ([HEADER, '{"send":[],"expect":{}}'], ":2: $send: expected a JSON object"),
        ([HEADER, '{"send":{"opened":"x"},"expect":{}}'], ":2: $send.opened: expected"),
        ([HEADER, '{"send":{"x":1},"expect":{}}'], ":2: send: expected one of the keys"),
    ],
)
def test_a_file_that_is_not_vectors_says_where(tmp_path: Path, lines: list[str], says: str) -> None:
    path = tmp_path / "vectors.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(ProtocolError, match=re.escape(f"{path}{says}")):
        replay_vectors(Driver(), path, io.StringIO())


def test_vectors_cut_short_are_refused(tmp_path: Path) -> None:
    whole = tmp_path / "whole.jsonl"
    opening = write(Open(handoff_id(0), HandoffOrder.SOURCE_FIRST))
    opened = write(Opened(handoff_id(0)))
    whole.write_text(f"{vectors_header(2)}\n{vector_line(opening, opened)}\n")
    with pytest.raises(ProtocolError, match="the header counts 2 vectors, the file holds 1"):
        replay_vectors(Driver(), whole, io.StringIO())


# -- the checker -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("hang", "gave no answer within 0.5 s to "),
        ("exit", "exited with status 3 ('the driver gave up') before answering "),
        ("garbage", "printed what is not the protocol to "),
        ("handoff", "answered for handoff 00000000-0000-0000-0000-000000000bad to "),
        ("version", "speaks protocol version 3; handoff conform speaks versions 1 and 2"),
    ],
)
def test_the_checker_names_the_call_a_driver_broke_the_protocol_at(
    first_cases: Suite, tmp_path: Path, how: str, says: str
) -> None:
    command = _driver("broken", how, str(tmp_path / "pids"))
    with pytest.raises(Broken) as raised:
        _check(command, first_cases, 0.5 if how == "hang" else 60.0)
    assert str(raised.value).startswith(f"the implementation {says}")


def _check(command: list[str], suite: Suite, timeout: float) -> None:
    with Implementation(command, timeout) as implementation:
        checker = Checker(implementation)
        checker.hello()
        checker.suite(suite)


def test_a_walk_that_diverges_is_shrunk_and_a_conforming_one_is_not(suite: Suite) -> None:
    with Implementation(_driver("wrong_late"), 10.0) as implementation:
        checker = Checker(implementation)
        checker.hello()
        walked, made, found = checker.walks(suite.model, 0, 3)
        assert (walked, made) == (3, 3 * 40)
        assert found is not None
        assert len(found.calls) == 20  # the driver is right until a handoff's 20th call
        assert found.shrunk
        assert found.actual is not None
        assert found.actual.answer.error is ErrorKind.UNKNOWN_ACTION
        assert found.expected.answer.error is not ErrorKind.UNKNOWN_ACTION
    with Implementation(REFERENCE, 10.0) as implementation:
        checker = Checker(implementation)
        checker.hello()
        assert checker.walks(suite.model, 0, 3) == (3, 120, None)


def test_conform_exports_vectors_and_shows_a_counterexample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vectors, trace = tmp_path / "vectors.jsonl", tmp_path / "trace.jsonl"
    args = ["--order", "DestinationFirst", "--walks", "0", "--export", str(vectors)]
    args += ["--trace-out", str(trace), "--", *_driver("wrong_noop_cancel")]
    assert main(["conform", *args]) == 1
    out = capsys.readouterr().out
    assert "test vectors" in out
    assert "     3. on_action_outcome(1, Noop)" in out  # start, a failure, the cancel's Noop
    assert "counterexample written to" in out
    assert trace.read_text().count("\n") == 5  # header, three calls, end line
    # The whole file replays on the reference in test_conform.py, in a subprocess; here its
    # first 600 vectors, re-headed, show the driver's own words either way.
    first = tmp_path / "first.jsonl"
    kept = vectors.read_text().splitlines()[1:601]
    first.write_text("".join(f"{line}\n" for line in [vectors_header(len(kept)), *kept]))
    with contextlib.redirect_stdout(io.StringIO()) as said:
        assert driver_main(["--vectors", str(first)]) == 0
    assert said.getvalue() == f"OK {first} (600 vectors)\n"
    wrong = io.StringIO()
    assert not replay_vectors(ForgetsCompletion(), first, wrong)
    assert wrong.getvalue().startswith(f"FAILED {first}:")
    assert "expected: [#2 Complete]" in wrong.getvalue()


def test_only_the_tail_of_an_implementations_stderr_is_kept(tmp_path: Path) -> None:
    with Implementation(_driver("unruly", "stderr", str(tmp_path / "pids")), 60.0) as child:
        child.exchange([write(Hello())])
        with pytest.raises(Misbehaved, match=r"exited with status 3 \('the last words'\)"):
            child.exchange([write(Open(handoff_id(0), SF))])
        # 32 MiB were written; what is kept ends with the last words.
        kept = child.stderr_tail()
        assert len(kept) == KEPT_STDERR
        assert kept.endswith(b"e\nthe last words\n")


@pytest.mark.parametrize(("version", "left"), [(2, 0), (1, 300)])
def test_version_2_closes_each_handoff_after_its_run_and_version_1_is_still_served(
    first_cases: Suite, version: int, left: int
) -> None:
    # A version 1 implementation gets no close: it holds every handoff it was sent.
    command = _driver("open_count" if version == 2 else "version_one")
    with Implementation(command, 60.0) as child:
        checker = Checker(child)
        assert checker.hello().version == version
        assert checker.closing is (version == 2)
        assert checker.suite(first_cases) is None
    assert child.stderr_tail().decode().endswith(f"open at the end: {left}\n")


def test_the_reference_driver_closes_a_handoff_and_refuses_to_close_one_twice() -> None:
    driver = Driver()
    hid = handoff_id(0)
    assert driver.respond(Hello(2)) == Hello(2, driver.implementation, ("completion", "lifecycle"))
    assert driver.respond(Hello(1)) == Hello(1, driver.implementation)  # a version 1 check
    assert driver.respond(Open(hid, SF)) == Opened(hid)
    assert driver.respond(Close(hid)) == Closed(hid)
    assert driver.handoffs == {}
    with pytest.raises(DriverError, match=r"closing handoff .*, which is not open"):
        driver.respond(Close(hid))


def test_a_reply_that_leaves_out_what_the_hello_says_it_reports_breaks_the_protocol() -> None:
    hid = handoff_id(0)
    line = f'{{"handoff":"{hid}","issued":[],"complete":false,"completion":null}}'
    reply = read(line)
    assert isinstance(reply, Reply)
    assert reply.left_out == {"lifecycle"}
    assert write(reply) == line  # spelled back as it came
    assert read(write(Hello(2, "x", ("completion",)))) == Hello(2, "x", ("completion",))
    with pytest.raises(ProtocolError, match=r"\$\.hello\.reports: expected a list of"):
        read('{"hello":{"version":2,"reports":["timing"]}}')


def _contract_delay(payload: Payload) -> float:
    """Contract §3, written out again: the delay a cooperative run must start its transfer with."""
    timing = payload.timing
    tokens = (
        timing.full_prompt_tokens
        if timing.mode is KvTransferTimingMode.FULL_PROMPT
        else payload.tokens
    )
    bandwidth = timing.bandwidth_gb_s
    if bandwidth is None or bandwidth <= 0.0:
        return payload.fallback_transfer_delay_ms
    if timing.kv_bytes_per_token is None and timing.kv_bytes_per_request == 0:
        return payload.fallback_transfer_delay_ms
    total = float(tokens) * float(timing.kv_bytes_per_token or 0) + float(
        timing.kv_bytes_per_request
    )
    return total / (bandwidth * 1e9) * 1000.0


def test_the_payload_classes_take_every_branch_of_the_delay_and_start_the_contracts_delay(
    suite: Suite,
) -> None:
    timings = [payload.timing for payload in PAYLOADS]
    assert {str(timing.bandwidth_gb_s) for timing in timings} >= {"None", "0.0", "-0.0", "50.0"}
    assert any(t.kv_bytes_per_token is None and t.kv_bytes_per_request == 0 for t in timings)
    assert any(t.kv_bytes_per_token is None and t.kv_bytes_per_request for t in timings)
    assert any(t.kv_bytes_per_token and t.kv_bytes_per_request for t in timings)
    assert {t.full_prompt_tokens for t in timings} >= {0, 2**64 - 1}
    assert {payload.tokens for payload in PAYLOADS} >= {0, 2**64 - 1}
    assert {payload.fallback_transfer_delay_ms for payload in PAYLOADS} >= {0.0, 2.5}
    started = 0
    for made in suite.probes:
        coordinator = made.model.coordinator(HANDOFF_ID)
        answers = [Answer.of(call, coordinator) for call in made.calls]
        transfers = [
            item.action
            for answer in answers
            for item in answer.issued
            if isinstance(item.action, HandoffAction.StartTransfer)
        ]
        delay = _contract_delay(made.payload)
        if math.isinf(delay):  # the one class whose delay overflows: refused, no transfer
            assert transfers == []
            assert answers[-1].error is ErrorKind.INVALID_TRANSFER_TIMING
            continue
        assert [action.delay_ms for action in transfers] == [delay], made.payload.words
        assert coordinator.is_complete
        started += 1
    assert started == len(PAYLOADS) - 1
