"""`handoff conform` holds an implementation to the chart: the reference driver conforms, a
driver with one wrong answer is caught with the shortest run that shows it, exported vectors
replay green on the reference and red on a wrong driver, and a driver that breaks the protocol
is one line, exit 2, with no process left behind.

Every command runs once, in a subprocess, from a module-scoped fixture (all at once, so the
suite waits for the slowest rather than for their sum); the tests read the results.  The
drivers are `tests/drivers/`; the commands run in `tests/`, so `charts.families` is found.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from handoff import (
    HandoffActionOutcome,
    HandoffOrder,
)
from handoff._review.conform.suite import Model, Suite, build_suite

TESTS = Path(__file__).resolve().parent
DRIVERS = TESTS / "drivers"
PYTHON = sys.executable
REFERENCE = [PYTHON, "-m", "handoff.conform_driver"]
CHART = "charts.families:CancelDestinationFirst"
BROKEN = ("hang", "exit", "garbage", "handoff", "version")
OUTCOME = HandoffActionOutcome.failed("no room")
UNRULY = ("flood", "trickle", "stderr", "setsid", "orphan")
DEFECTS = (
    "defect_start_after_terminal",
    "defect_no_reopen",
    "defect_refusal_journaled",
    "defect_null_delay",
    "defect_refusal_reserves",
    "defect_zero_bandwidth",
    "defect_per_request_ignored",
)
"""Drivers that each play one defect an upstream coordinator once had."""
_SOURCE_FIRST = ("--order", "SourceFirst", "--walks", "0")


@functools.cache
def _suite(order: HandoffOrder) -> Suite:
    return build_suite(Model(order))


def _driver(name: str, *args: str) -> list[str]:
    return [PYTHON, str(DRIVERS / f"{name}.py"), *args]


def _conform(*args: str, driver: list[str] | None = None) -> list[str]:
    return [PYTHON, "-m", "handoff", "conform", *args, *(["--", *driver] if driver else [])]


@attrs.frozen
class Ran:
    status: int
    out: str
    err: str


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("conform")


def _commands(scratch: Path) -> dict[str, list[str]]:
    sf = _SOURCE_FIRST
    commands = {
        "reference": _conform(driver=REFERENCE),
        "user chart": _conform(
            "--chart", CHART, "--walks", "10", driver=[*REFERENCE, "--chart", CHART]
        ),
        "user chart, shipped driver": _conform(
            "--chart", CHART, "--walks", "0", "--trace-out", str(scratch / "chart.jsonl"),
            driver=REFERENCE,
        ),
        "noop cancel": _conform(
            "--walks", "0", "--trace-out", str(scratch / "noop.jsonl"),
            driver=_driver("wrong_noop_cancel"),
        ),
        "reopened": _conform(*sf, driver=_driver("wrong_reopened")),
        "late": _conform(
            "--order", "SourceFirst", "--walks", "30", "--trace-out", str(scratch / "late.jsonl"),
            driver=_driver("wrong_late"),
        ),
        "export": _conform(
            "--order", "DestinationFirst", "--export", str(scratch / "vectors.jsonl")
        ),
    }  # fmt: skip
    for defect in DEFECTS:
        commands[defect] = _conform(driver=_driver(defect))
    reserves = str(scratch / "reserves.vectors")
    commands["defect_refusal_reserves"] = _conform(
        "--vectors-out", reserves, driver=_driver("defect_refusal_reserves")
    )
    commands["version one"] = _conform(*sf, driver=_driver("version_one"))
    commands["no lifecycle"] = _conform(*sf, driver=_driver("no_lifecycle"))
    commands["no lifecycle, wrong"] = _conform(
        *sf,
        "--vectors-out",
        str(scratch / "wrong.vectors"),
        driver=_driver("no_lifecycle", "wrong"),
    )
    commands["long message"] = _conform(*sf, driver=_driver("wrong_long_message"))
    for how in UNRULY:
        pids = str(scratch / f"unruly-{how}.pids")
        # A flood must end by its own limit, long before a timeout that would end it too.
        timeout = "20" if how in ("trickle", "setsid", "orphan") else "300"
        commands[f"unruly {how}"] = _conform(
            *sf, "--timeout", timeout, driver=_driver("unruly", how, pids)
        )
    for how in BROKEN:
        pids = str(scratch / f"{how}.pids")
        # Only a hang waits for its timeout, hidden behind the slowest command: long enough that
        # a driver starting on a loaded machine (13 start at once) is never taken for a hang.
        timeout = "20" if how == "hang" else "300"
        commands[how] = _conform(*sf, "--timeout", timeout, driver=_driver("broken", how, pids))
    return commands


def _start(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen(
        args, cwd=TESTS, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _finish(process: subprocess.Popen[str]) -> Ran:
    out, err = process.communicate(timeout=600)
    return Ran(process.returncode, out, err)


@pytest.fixture(scope="module")
def ran(scratch: Path) -> dict[str, Ran]:
    started = {name: _start(args) for name, args in _commands(scratch).items()}
    results = {name: _finish(process) for name, process in started.items()}
    vectors = str(scratch / "vectors.jsonl")
    reserves, wrong = str(scratch / "reserves.vectors"), str(scratch / "wrong.vectors")
    replays = {
        "vectors on the reference": _start([*REFERENCE, "--vectors", vectors]),
        "vectors on a wrong driver": _start([*_driver("wrong_noop_cancel"), "--vectors", vectors]),
        "counterexample on its driver": _start(
            _conform("--vectors", reserves, driver=_driver("defect_refusal_reserves"))
        ),
        "counterexample on the reference": _start(
            _conform("--vectors", reserves, driver=REFERENCE)
        ),
        "unreported counterexample on its driver": _start(
            _conform("--vectors", wrong, driver=_driver("no_lifecycle", "wrong"))
        ),
    }
    results |= {name: _finish(process) for name, process in replays.items()}
    return results


def _counterexamples(out: str) -> list[list[str]]:
    """The calls of each counterexample the report lists, in order."""
    found: list[list[str]] = []
    for line in out.splitlines():
        if re.match(r"  the .* that shows it", line):
            found.append([])
        elif (listed := re.fullmatch(r"\s+\d+\. (.*)", line)) and found:
            found[-1].append(listed.group(1))
    return found


def _replay(trace: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "handoff", "replay", *options, str(trace)],
        capture_output=True, text=True, cwd=TESTS, check=False,
    )  # fmt: skip


# -- conforming ------------------------------------------------------------------------------


def test_the_reference_driver_conforms_on_both_orders(ran: dict[str, Ran]) -> None:
    result = ran["reference"]
    assert result.status == 0, result.err
    for order in HandoffOrder:
        suite = _suite(order)
        line = next(line for line in result.out.splitlines() if line.startswith(order.value))
        assert f"{suite.configurations:,} configurations" in line
        assert f"{suite.calls:,} calls" in line
        assert "14/14 states, 35/35 transitions" in line
        assert f"{len(suite.probes)} payload classes" in line
        assert line.endswith("100 walks from seed 0, 4,000 calls: OK")
    assert "OK: every answer is the chart's" in result.out


def test_a_user_chart_conforms_when_the_driver_runs_it_too(
    ran: dict[str, Ran], scratch: Path
) -> None:
    result = ran["user chart"]
    assert result.status == 0, result.err
    assert f"chart {CHART}:" in result.out
    # The chart cancels the destination first where the shipped one cancels the source first:
    # they part at the first cleanup of both, after start, its acknowledgement and SourceHeld.
    shipped = ran["user chart, shipped driver"]
    assert shipped.status == 1, shipped.err
    (calls,) = _counterexamples(shipped.out)
    assert len(calls) == 4
    assert "the chart answered:          [#2 CancelDestination, #3 CancelSource]" in shipped.out
    assert "the implementation answered: [#2 CancelSource, #3 CancelDestination]" in shipped.out
    # The trace names the chart, which `handoff replay` runs once it is given (a trace's names
    # are data), and every answer is the chart's (the replay's monitors may still say where
    # the chart differs from the SPEC: this one does).
    trace = scratch / "chart.jsonl"
    assert f'"chart":"{CHART}"' in trace.read_text().splitlines()[0]
    replayed = _replay(trace, "--chart", CHART)
    assert replayed.returncode in (0, 1), replayed.stderr
    assert "DIVERGED" not in replayed.stdout


# -- wrong answers -----------------------------------------------------------------------------


def test_a_forgotten_completion_in_a_cleanup_is_found_by_its_shortest_run(
    ran: dict[str, Ran], scratch: Path
) -> None:
    result = ran["noop cancel"]
    assert result.status == 1, result.err
    source_first, destination_first = _counterexamples(result.out)
    # SourceFirst reserves the destination only once the source holds the prefill: start, its
    # acknowledgement and SourceHeld, then a failure (CancelSource #2, CancelDestination #3),
    # the source's cancel done, and the destination's Noop that should complete: six calls.
    assert len(source_first) == 6
    assert (source_first[0], source_first[-1]) == ("start()", "on_action_outcome(3, Noop)")
    # DestinationFirst reserves first: start, a failure (CancelDestination #1 alone), its Noop.
    assert len(destination_first) == 3
    assert destination_first[-1] == "on_action_outcome(1, Noop)"
    assert "the implementation answered: []" in result.out
    replayed = _replay(scratch / "noop.jsonl")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "(6 calls)" in replayed.stdout


def test_a_wrong_refusal_in_a_reopened_cleanup_is_found(ran: dict[str, Ran]) -> None:
    result = ran["reopened"]
    assert result.status == 1, result.err
    (calls,) = _counterexamples(result.out)
    # Nine calls reach a success (five steps and their acknowledgements, two facts), a
    # failure reopens the cleanup (CancelDestination #6), and its failure is refused.
    assert len(calls) == 11
    assert calls[-1] == 'on_action_outcome(6, Failed("x"))'
    assert "refused: CleanupActionFailed" in result.out
    assert "refused: InvalidOutcome" in result.out


def test_a_divergence_only_walks_reach_is_shrunk_to_the_calls_it_needs(
    ran: dict[str, Ran], scratch: Path
) -> None:
    result = ran["late"]
    assert result.status == 1, result.err
    # No configuration's shortest run is 20 calls long: the suite passes, and walks are made
    # only after a suite that passes.
    assert "; 30 walks from seed 0, 1,200 calls: DIVERGED" in result.out
    (calls,) = _counterexamples(result.out)
    # The driver is right until a handoff's 20th call, and a walk is 40 calls; shrunk, the
    # run keeps exactly 20: one fewer is right, and any call more could be deleted.
    assert len(calls) == 20
    assert "the implementation answered: refused: UnknownAction" in result.out
    assert "  the walk that shows it, shrunk, handoff " in result.out
    assert (scratch / "late.jsonl").read_text().count("\n") == 22  # header, calls, end


# -- upstream's defects, with default options ---------------------------------------------------


def _said(out: str, who: str) -> list[str]:
    """What `who` ("the chart", "the implementation") answered, for each counterexample."""
    return [
        line.split(": ", 1)[1].strip() for line in out.splitlines() if f"  {who} answered:" in line
    ]


def test_start_after_a_terminal_fact_is_found(ran: dict[str, Ran]) -> None:
    result = ran["defect_start_after_terminal"]
    assert result.status == 1, result.err
    assert _counterexamples(result.out) == [["on_fact(Failed)", "start()"]] * 2
    assert _said(result.out, "the chart")[0].startswith("[]; then complete, completion Canceled")
    assert _said(result.out, "the implementation")[0].startswith("[#0 SubmitPrefill]")


def test_a_success_that_never_reopens_its_cleanup_is_found(ran: dict[str, Ran]) -> None:
    result = ran["defect_no_reopen"]
    assert result.status == 1, result.err
    for calls in _counterexamples(result.out):
        # Nine calls reach a success (five actions acknowledged, three facts, start); then a
        # failure must reopen the cleanup with a CancelDestination (#6: #5 was Complete).
        assert (len(calls), calls[-1]) == (10, "on_fact(Failed)")
    assert _said(result.out, "the chart")[0].startswith("[#6 CancelDestination]; then not complete")


def test_a_refused_outcome_that_is_journaled_is_found_past_the_refusal(ran: dict[str, Ran]) -> None:
    result = ran["defect_refusal_journaled"]
    assert result.status == 1, result.err
    # SubmitPrefill acknowledged Accepted is refused; its fitting Submitted must then be taken.
    assert _counterexamples(result.out)[0] == [
        "start()", "on_action_outcome(0, Accepted)", "on_action_outcome(0, Submitted)",
    ]  # fmt: skip
    assert "the run past a refused or dropped call that shows it, shrunk" in result.out
    assert _said(result.out, "the implementation")[0].startswith("refused: ConflictingOutcome")


def test_an_infinite_delay_written_as_null_is_a_divergence_not_a_broken_protocol(
    ran: dict[str, Ran],
) -> None:
    result = ran["defect_null_delay"]
    assert result.status == 1, result.err
    # SourceFirst only: DestinationFirst reserves before the timing is known, so the huge
    # reservation is taken and the SourceHeld after it is what overflows.
    (calls,) = _counterexamples(result.out)
    assert calls[-1] == "on_fact(DestinationReserved(18446744073709551615: the delay overflows))"
    assert _said(result.out, "the chart")[0].startswith("refused: InvalidTransferTiming")
    (answered,) = _said(result.out, "the implementation")
    assert '"delay_ms":null' in answered
    assert answered.endswith(
        "which no chart answers ($.issued[0].action.StartTransfer.delay_ms: "
        "expected a number, got null)"
    )


def test_a_refusal_that_still_reserves_the_destination_is_found(ran: dict[str, Ran]) -> None:
    result = ran["defect_refusal_reserves"]
    assert result.status == 1, result.err
    (calls,) = _counterexamples(result.out)
    # The reservation refused for its delay, then the same fact with a usable payload.
    assert calls[-2:] == [
        "on_fact(DestinationReserved(18446744073709551615: the delay overflows))",
        "on_fact(DestinationReserved(1))",
    ]
    # The valid timing's 1e-304 GB/s makes one missing token 1 / 1e-304 / 1e9 * 1000 ms.
    assert _said(result.out, "the chart") == [
        "[#2 StartTransfer(delay_ms=1e+298)]; then not complete, "
        "lifecycle SourceHeld, DestinationAccepted, DestinationReserved"
    ]
    assert _said(result.out, "the implementation")[0].startswith("[]; ")


def test_a_refused_bandwidth_of_zero_is_found(ran: dict[str, Ran]) -> None:
    result = ran["defect_zero_bandwidth"]
    assert result.status == 1, result.err
    source_first, destination_first = _counterexamples(result.out)
    assert source_first[-1] == destination_first[-1] == "on_fact(SourceHeld(bandwidth 0))"
    # No modelled delay: the fallback, 0.0, is the transfer's delay.
    assert _said(result.out, "the chart")[1].startswith("[#2 StartTransfer(delay_ms=0.0)]")
    assert _said(result.out, "the implementation")[1].startswith("refused: InvalidTransferTiming")


def test_per_request_bytes_left_out_of_the_delay_are_found(ran: dict[str, Ran]) -> None:
    result = ran["defect_per_request_ignored"]
    assert result.status == 1, result.err
    for calls in _counterexamples(result.out):
        assert "on_fact(SourceHeld(per-request bytes, no kv_bytes_per_token))" in calls
    # 2**20 bytes for the request, none per token: 1048576 / (50 GB/s * 1e9) * 1000 ms; left
    # out, nothing is modelled and the fallback, 0.0, applies.
    assert _said(result.out, "the chart")[0].startswith("[#2 StartTransfer(delay_ms=0.02097152)]")
    assert _said(result.out, "the implementation")[0].startswith("[#2 StartTransfer(delay_ms=0.0)]")


# -- protocol versions, what an implementation reports, counterexamples as vectors ---------------


def test_a_version_1_implementation_still_conforms(ran: dict[str, Ran]) -> None:
    result = ran["version one"]
    assert result.status == 0, result.err
    assert "(a version 1 engine, protocol 1)" in result.out
    assert "not checked" not in result.out


def test_what_an_implementation_does_not_report_is_not_compared_and_is_said(
    ran: dict[str, Ran],
) -> None:
    result = ran["no lifecycle"]
    assert result.status == 0, result.err
    assert "(handoff reference driver, protocol 2)" in result.out
    assert "not checked: lifecycle (the implementation's hello says it does not report it)" in (
        result.out
    )
    # What it does report is still compared: `complete` answered wrongly once complete.
    wrong = ran["no lifecycle, wrong"]
    assert wrong.status == 1, wrong.err
    assert _said(wrong.out, "the chart") == ["[#5 Complete]; then complete, completion Success"]
    assert _said(wrong.out, "the implementation") == [
        "[#5 Complete]; then not complete, completion Success"
    ]


def test_a_counterexample_written_as_vectors_replays_on_the_implementation(
    ran: dict[str, Ran], scratch: Path
) -> None:
    result = ran["defect_refusal_reserves"]
    assert "as 7 test vectors" in result.out  # the opening and the six calls
    lines = (scratch / "reserves.vectors").read_text().splitlines()
    assert lines[0] == '{"vectors":{"version":1,"lines":7}}'
    # The refusal is written with its kind, as the implementation must answer it.
    assert '"error":{"kind":"InvalidTransferTiming"' in lines[-2]
    again = ran["counterexample on its driver"]
    assert again.status == 1, again.err
    assert ": 1 handoffs, 6 calls: DIVERGED" in again.out
    assert _counterexamples(again.out) == _counterexamples(result.out)
    assert _said(again.out, "the implementation") == _said(result.out, "the implementation")
    fixed = ran["counterexample on the reference"]
    assert fixed.status == 0, fixed.err
    assert ": 1 handoffs, 6 calls: OK" in fixed.out
    unreported = ran["unreported counterexample on its driver"]
    assert unreported.status == 1, unreported.err
    assert "not checked: lifecycle" in unreported.out


# -- vectors -----------------------------------------------------------------------------------


def test_exported_vectors_replay_green_on_the_reference_and_red_on_a_wrong_driver(
    ran: dict[str, Ran],
) -> None:
    export = ran["export"]
    assert export.status == 0, export.err
    suite = _suite(HandoffOrder.DESTINATION_FIRST)
    vectors = suite.calls + suite.handoffs  # each handoff's opening, then its calls
    assert f"wrote {vectors:,} test vectors ({suite.handoffs:,} handoffs)" in export.out
    green = ran["vectors on the reference"]
    assert (green.status, green.err) == (0, "")
    assert f"({vectors} vectors)" in green.out
    red = ran["vectors on a wrong driver"]
    assert red.status == 1, red.err
    assert red.out.startswith("FAILED ")
    assert "expected: [#2 Complete]" in red.out
    assert "answered: []" in red.out


# -- a broken protocol -------------------------------------------------------------------------


def test_a_driver_of_another_protocol_version_is_refused_at_the_hello(ran: dict[str, Ran]) -> None:
    result = ran["version"]
    assert result.status == 2, result.err
    assert result.err == (
        "handoff conform: error: the implementation speaks protocol version 3; "
        "handoff conform speaks versions 1 and 2\n"
    )


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("hang", "gave no answer within 20 s to "),
        ("exit", "exited with status 3 ('the driver gave up') before answering "),
        ("garbage", "printed what is not the protocol to "),
        ("handoff", "answered for handoff 00000000-0000-0000-0000-000000000bad to "),
    ],
)
def test_a_driver_that_breaks_the_protocol_is_one_line_and_is_ended(
    ran: dict[str, Ran], scratch: Path, how: str, says: str
) -> None:
    result = ran[how]
    assert result.status == 2, result.err
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"handoff conform: error: the implementation {says}")
    assert " of handoff " in result.err  # names the call
    pids = [int(pid) for pid in (scratch / f"{how}.pids").read_text().split()]
    assert len(pids) == 2
    assert _all_gone(pids)


# -- limits ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("flood", "wrote a line longer than 1,048,576 bytes ('xxxxx"),
        ("trickle", "gave no answer within 20 s to the opening of handoff "),
        ("stderr", "exited with status 3 ('the last words') before answering the opening of "),
        ("setsid", "gave no answer within 20 s to the opening of handoff "),
        ("orphan", "gave no answer within 20 s to the opening of handoff "),
    ],
)
def test_an_implementation_that_outlasts_a_limit_is_one_line_and_ends_with_all_it_started(
    ran: dict[str, Ran], scratch: Path, how: str, says: str
) -> None:
    result = ran[f"unruly {how}"]
    assert result.status == 2, result.err
    assert result.err.startswith(f"handoff conform: error: the implementation {says}")
    assert result.err.count("\n") == 1
    assert len(result.err) < 500
    pids = _pids(scratch / f"unruly-{how}.pids")
    # Its own process, and for setsid and orphan the helper that left its process group.
    assert len(pids) == (2 if how in ("setsid", "orphan") else 1)
    assert _all_gone(pids)


def test_what_a_report_quotes_of_an_implementation_is_clipped(ran: dict[str, Ran]) -> None:
    result = ran["long message"]
    assert result.status == 1, result.err
    (answered,) = _said(result.out, "the implementation")
    assert answered.startswith("refused: ForeignFact (" + "x" * 200 + "…)")
    assert max(map(len, result.out.splitlines())) < 500


def test_sigterm_ends_the_implementation_and_its_helpers_with_the_check(tmp_path: Path) -> None:
    pids = tmp_path / "setsid.pids"
    args = _conform(
        *_SOURCE_FIRST, "--timeout", "600", driver=_driver("unruly", "setsid", str(pids))
    )
    check = _start(args)
    deadline = time.monotonic() + 300
    while "ready" not in (pids.read_text() if pids.exists() else ""):
        assert time.monotonic() < deadline, "the driver never got ready"
        assert check.poll() is None, "the check ended before the driver got ready"
        time.sleep(0.05)
    check.send_signal(signal.SIGTERM)
    ended = _finish(check)
    assert ended.status == 128 + signal.SIGTERM, ended.err
    assert ended.err == "handoff conform: error: terminated (SIGTERM)\n"
    assert _all_gone(_pids(pids))


def _pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split() if word.isdigit()]


def test_ctrl_c_ends_the_implementation_with_the_check(tmp_path: Path) -> None:
    pids = tmp_path / "hang.pids"
    args = _conform(*_SOURCE_FIRST, "--timeout", "600", driver=_driver("broken", "hang", str(pids)))
    check = _start(args)
    deadline = time.monotonic() + 300
    while not pids.with_suffix(".hanging").exists():
        assert time.monotonic() < deadline, "the driver never reached its hang"
        assert check.poll() is None, "the check ended before the driver hung"
        time.sleep(0.05)
    check.send_signal(signal.SIGINT)
    ended = _finish(check)
    assert ended.status == 130, ended.err
    assert ended.err == "handoff conform: error: interrupted\n"
    assert _all_gone([int(pid) for pid in pids.read_text().split()])


def _all_gone(pids: list[int]) -> bool:
    # The driver's own child is reparented when the group is killed, and reaped a moment later.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")
