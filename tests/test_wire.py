"""The JSON wire format: SPEC §5 byte for byte, floats, round trips, strict decoding, fuzz."""

from __future__ import annotations

import copy
import json
import math
import pickle
import re
import subprocess
import sys
import typing
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import handoff
from handoff import (
    EngineType,
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffError,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    KvTransferTimingMode,
    NormalizedHandoffConformance,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
)
from handoff.wire import WireError, dumps, loads

# mypy types the fact and action namespaces as `Callable[[], Never]` because their `__init__`
# is NoReturn, so `loads(text, HandoffFact)` would not type-check; these are the same objects.
FACTS = HandoffFact
ACTIONS = HandoffAction

HID = HandoffId(uuid.UUID(int=1))
H = '"00000000-0000-0000-0000-000000000001"'
FULL = KvTransferTimingMode.FULL_PROMPT
TIMING = HandoffTransferTiming(FULL, 10, 1024, 1.5)
TIMING_JSON = (
    '{"mode":"full_prompt","full_prompt_tokens":10,"kv_bytes_per_token":1024,"bandwidth_gb_s":1.5}'
)

FACT_VARIANTS = (
    HandoffFact.SourceHeld,
    HandoffFact.DestinationReserved,
    HandoffFact.TransferCompleted,
    HandoffFact.Failed,
    HandoffFact.TimedOut,
    HandoffFact.Canceled,
)
ACTION_VARIANTS = (
    HandoffAction.SubmitPrefill,
    HandoffAction.ReserveDestination,
    HandoffAction.StartTransfer,
    HandoffAction.ActivateDestination,
    HandoffAction.ReleaseSource,
    HandoffAction.CancelSource,
    HandoffAction.CancelDestination,
    HandoffAction.Complete,
)
WIRE_TYPES: tuple[type, ...] = (
    HandoffId,
    HandoffOrder,
    EngineType,
    KvTransferTimingMode,
    HandoffTransferTiming,
    HandoffFact,
    *FACT_VARIANTS,
    HandoffAction,
    *ACTION_VARIANTS,
    HandoffActionId,
    IssuedHandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    NormalizedHandoffConformance,
)

SF_LIFECYCLE = (
    NormalizedHandoffEvent.SOURCE_HELD,
    NormalizedHandoffEvent.DESTINATION_ACCEPTED,
    NormalizedHandoffEvent.DESTINATION_RESERVED,
    NormalizedHandoffEvent.DESTINATION_ACTIVATED,
    NormalizedHandoffEvent.SOURCE_RELEASED,
    NormalizedHandoffEvent.COMPLETED,
)
CONFORMANCE = NormalizedHandoffConformance(
    EngineType.SGLANG,
    HandoffOrder.DESTINATION_FIRST,
    SF_LIFECYCLE[:2],
    1,
    2,
    1,
    NormalizedStoredTiming(0, 4, 0),
    True,
    False,
    True,
)


def held(timing_json: str) -> str:
    return '{"SourceHeld":{"handoff_id":' + H + ',"transfer_timing":' + timing_json + "}}"


def timing_with(**replaced: str) -> str:
    """TIMING_JSON with some fields' JSON text replaced (or removed, for an empty string)."""
    fields = {
        "mode": '"full_prompt"',
        "full_prompt_tokens": "10",
        "kv_bytes_per_token": "1024",
        "bandwidth_gb_s": "1.5",
        **replaced,
    }
    return "{" + ",".join(f'"{name}":{text}' for name, text in fields.items() if text) + "}"


# SPEC §5, byte for byte; each pair is also checked in the decoding direction.
EXACT = [
    (HID, H),
    (
        HandoffId(uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF")),
        '"6f9619ff-8b86-d011-b42d-00c04fc964ff"',
    ),
    (HandoffActionId(3), "3"),
    (HandoffActionId(0), "0"),
    (HandoffActionId(2**64 - 1), "18446744073709551615"),
    (HandoffOrder.SOURCE_FIRST, '"SourceFirst"'),
    (HandoffOrder.DESTINATION_FIRST, '"DestinationFirst"'),
    (EngineType.VLLM, '"vllm"'),
    (EngineType.SGLANG, '"sglang"'),
    (EngineType.TRTLLM, '"trtllm"'),
    (KvTransferTimingMode.FULL_PROMPT, '"full_prompt"'),
    (KvTransferTimingMode.DESTINATION_MISSING, '"destination_missing"'),
    (HandoffCompletion.SUCCESS, '"Success"'),
    (HandoffCompletion.CANCELED, '"Canceled"'),
    (NormalizedHandoffEvent.SOURCE_HELD, '"SourceHeld"'),
    (NormalizedHandoffEvent.DESTINATION_ACCEPTED, '"DestinationAccepted"'),
    (NormalizedHandoffEvent.DESTINATION_RESERVED, '"DestinationReserved"'),
    (NormalizedHandoffEvent.DESTINATION_ACTIVATED, '"DestinationActivated"'),
    (NormalizedHandoffEvent.SOURCE_RELEASED, '"SourceReleased"'),
    (NormalizedHandoffEvent.COMPLETED, '"Completed"'),
    (TIMING, TIMING_JSON),
    # kv_bytes_per_request is written only when it is not 0.
    (HandoffTransferTiming(FULL, 10, 1024, 1.5, kv_bytes_per_request=0), TIMING_JSON),
    # Upstream declares kv_bytes_per_request between kv_bytes_per_token and bandwidth_gb_s,
    # and serde writes a struct's fields in declaration order.
    (
        HandoffTransferTiming(KvTransferTimingMode.DESTINATION_MISSING, 0, None, None, 7),
        '{"mode":"destination_missing","full_prompt_tokens":0,"kv_bytes_per_token":null,'
        '"kv_bytes_per_request":7,"bandwidth_gb_s":null}',
    ),
    (
        HandoffTransferTiming(FULL, 10, 1024, 1.5, kv_bytes_per_request=4096),
        '{"mode":"full_prompt","full_prompt_tokens":10,"kv_bytes_per_token":1024,'
        '"kv_bytes_per_request":4096,"bandwidth_gb_s":1.5}',
    ),
    (HandoffFact.SourceHeld(HID, TIMING), held(TIMING_JSON)),
    (
        HandoffFact.DestinationReserved(HID, 12),
        '{"DestinationReserved":{"handoff_id":' + H + ',"transferable_prompt_tokens":12}}',
    ),
    (HandoffFact.TransferCompleted(HID), '{"TransferCompleted":{"handoff_id":' + H + "}}"),
    (HandoffFact.Failed(HID), '{"Failed":{"handoff_id":' + H + "}}"),
    (HandoffFact.TimedOut(HID), '{"TimedOut":{"handoff_id":' + H + "}}"),
    (HandoffFact.Canceled(HID), '{"Canceled":{"handoff_id":' + H + "}}"),
    (HandoffAction.SubmitPrefill(HID), '{"SubmitPrefill":{"handoff_id":' + H + "}}"),
    (HandoffAction.ReserveDestination(HID), '{"ReserveDestination":{"handoff_id":' + H + "}}"),
    (
        HandoffAction.StartTransfer(HID, 2.5),
        '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":2.5}}',
    ),
    (HandoffAction.ActivateDestination(HID), '{"ActivateDestination":{"handoff_id":' + H + "}}"),
    (HandoffAction.ReleaseSource(HID), '{"ReleaseSource":{"handoff_id":' + H + "}}"),
    (HandoffAction.CancelSource(HID), '{"CancelSource":{"handoff_id":' + H + "}}"),
    (HandoffAction.CancelDestination(HID), '{"CancelDestination":{"handoff_id":' + H + "}}"),
    (HandoffAction.Complete(HID), '{"Complete":{"handoff_id":' + H + "}}"),
    (
        IssuedHandoffAction(HandoffActionId(3), HandoffAction.ReleaseSource(HID)),
        '{"id":3,"action":{"ReleaseSource":{"handoff_id":' + H + "}}}",
    ),
    (HandoffActionOutcome.SUBMITTED, '"Submitted"'),
    (HandoffActionOutcome.ACCEPTED, '"Accepted"'),
    (HandoffActionOutcome.SCHEDULED, '"Scheduled"'),
    (HandoffActionOutcome.APPLIED, '"Applied"'),
    (HandoffActionOutcome.NOOP, '"Noop"'),
    (HandoffActionOutcome.failed("reason"), '{"Failed":"reason"}'),
    (
        NormalizedStoredTiming(0, 4, 0),
        '{"before_activation":0,"on_activation":4,"repeated_activation_hashes_after_activation":0}',
    ),
    (
        CONFORMANCE,
        '{"engine_type":"sglang","order":"DestinationFirst",'
        '"lifecycle":["SourceHeld","DestinationAccepted"],'
        '"source_output_tokens":1,"destination_output_tokens":2,"completed_requests":1,'
        '"destination_stored":{"before_activation":0,"on_activation":4,'
        '"repeated_activation_hashes_after_activation":0},'
        '"source_drained":true,"destination_drained":false,"driver_drained":true}',
    ),
]


class TestExactBytes:
    @pytest.mark.parametrize(("value", "text"), EXACT)
    def test_writes_spec_bytes(self, value: object, text: str) -> None:
        assert dumps(value) == text

    @pytest.mark.parametrize(("value", "text"), EXACT)
    def test_reads_spec_bytes(self, value: object, text: str) -> None:
        assert loads(text, type(value)) == value

    def test_every_wire_type_has_an_example(self) -> None:
        assert {type(value) for value, _ in EXACT} == set(WIRE_TYPES) - {
            HandoffFact,
            HandoffAction,
        }

    def test_families_read_their_variants(self) -> None:
        assert loads(held(TIMING_JSON), FACTS) == HandoffFact.SourceHeld(HID, TIMING)
        text = '{"Complete":{"handoff_id":' + H + "}}"
        assert loads(text, ACTIONS) == HandoffAction.Complete(HID)

    def test_absent_kv_bytes_per_request_reads_as_zero(self) -> None:
        assert loads(TIMING_JSON, HandoffTransferTiming).kv_bytes_per_request == 0
        explicit = timing_with(kv_bytes_per_request="0")
        assert loads(explicit, HandoffTransferTiming) == TIMING
        written = timing_with(kv_bytes_per_request="5")
        assert loads(written, HandoffTransferTiming).kv_bytes_per_request == 5

    def test_reads_kv_bytes_per_request_in_either_place(self) -> None:
        # Releases before the upstream order wrote it last; upstream writes it before
        # bandwidth_gb_s. Both read to the same timing, which is written the upstream way.
        last = timing_with(kv_bytes_per_request="5")
        assert last.endswith('"bandwidth_gb_s":1.5,"kv_bytes_per_request":5}')
        upstream = (
            '{"mode":"full_prompt","full_prompt_tokens":10,"kv_bytes_per_token":1024,'
            '"kv_bytes_per_request":5,"bandwidth_gb_s":1.5}'
        )
        expected = HandoffTransferTiming(FULL, 10, 1024, 1.5, kv_bytes_per_request=5)
        assert loads(last, HandoffTransferTiming) == expected
        assert loads(upstream, HandoffTransferTiming) == expected
        assert dumps(loads(last, HandoffTransferTiming)) == upstream

    def test_a_zero_kv_bytes_per_request_writes_the_four_field_bytes(self) -> None:
        zero = HandoffTransferTiming(FULL, 10, 1024, 1.5, kv_bytes_per_request=0)
        assert dumps(zero) == (
            '{"mode":"full_prompt","full_prompt_tokens":10,"kv_bytes_per_token":1024,'
            '"bandwidth_gb_s":1.5}'
        )

    def test_reads_whitespace_and_bytes(self) -> None:
        spaced = ' { "Canceled" : {\n\t"handoff_id" : ' + H + " } }\r\n"
        assert loads(spaced, FACTS) == HandoffFact.Canceled(HID)
        assert loads(b"3", HandoffActionId) == HandoffActionId(3)
        assert loads(bytearray(b'"Noop"'), HandoffActionOutcome) == HandoffActionOutcome.NOOP

    def test_reads_uppercase_uuid(self) -> None:
        text = '"6F9619FF-8B86-D011-B42D-00C04FC964FF"'
        assert loads(text, HandoffId) == HandoffId(uuid.UUID(text.strip('"')))

    # serde_json escapes '"', '\\' and U+0000..U+001F only, short forms where JSON has them.
    @pytest.mark.parametrize(
        ("reason", "text"),
        [
            ('say "hi"', r'"say \"hi\""'),
            ("back\\slash", r'"back\\slash"'),
            ("a/b", '"a/b"'),
            ("\b\f\n\r\t", r'"\b\f\n\r\t"'),
            ("\x00\x01\x1f", r'"\u0000\u0001\u001f"'),
            ("\x7f", '"\x7f"'),
            ("é ü 😀 \u2028", '"é ü 😀 \u2028"'),
            ("", '""'),
        ],
    )
    def test_failure_reasons_escape_like_serde_json(self, reason: str, text: str) -> None:
        outcome = HandoffActionOutcome.failed(reason)
        assert dumps(outcome) == '{"Failed":' + text + "}"
        assert loads(dumps(outcome), HandoffActionOutcome) == outcome


def delay_text(delay: float) -> str:
    """The text `dumps` gives a StartTransfer's delay_ms."""
    text = dumps(HandoffAction.StartTransfer(HID, delay))
    prefix = '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":'
    assert text.startswith(prefix)
    assert text.endswith("}}")
    return text[len(prefix) : -2]


def ryu_layout(value: float) -> str:
    """ryu's pretty layout, restated from its five cases, over the shortest round-trip digits."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    minus = "-" if sign else ""
    length, k = len(digits), exponent
    kk = length + k  # 10**(kk-1) <= |value| < 10**kk
    if k >= 0 and kk <= 16:
        return f"{minus}{digits}{'0' * k}.0"
    if 0 < kk <= 16:
        return f"{minus}{digits[:kk]}.{digits[kk:]}"
    if -5 < kk <= 0:
        return f"{minus}0.{'0' * -kk}{digits}"
    if length == 1:
        return f"{minus}{digits}e{kk - 1}"
    return f"{minus}{digits[0]}.{digits[1:]}e{kk - 1}"


class TestFloats:
    # Hand-worked from ryu: positional when the first digit's decimal exponent e is in
    # [-5, 15], else d.ddd e<e> with neither "+" nor leading zeros in the exponent.
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (1.5, "1.5"),
            (2.0, "2.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (12345678.9, "12345678.9"),
            (1e15, "1000000000000000.0"),  # e = 15: last positional exponent
            (9007199254740992.0, "9007199254740992.0"),
            (1e16, "1e16"),  # e = 16: first exponent form; Python says 1e+16
            (1.5e16, "1.5e16"),
            (1e21, "1e21"),
            (123456789012345680.0, "1.2345678901234568e17"),
            (1e100, "1e100"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (0.0001, "0.0001"),
            (0.00001, "0.00001"),  # e = -5: ryu stays positional where Python says 1e-05
            (1.5e-5, "0.000015"),
            (-2.5e-5, "-0.000025"),
            (0.000001, "1e-6"),  # e = -6: first negative exponent form
            (1.5e-6, "1.5e-6"),
            (1e-7, "1e-7"),  # Python says 1e-07
            (-2.5e-7, "-2.5e-7"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
        ],
    )
    def test_serde_json_spelling(self, value: float, text: str) -> None:
        assert delay_text(value) == text
        assert ryu_layout(value) == text

    @given(st.floats(allow_nan=False, allow_infinity=False))
    def test_every_finite_float_follows_ryu_and_reads_back(self, value: float) -> None:
        text = delay_text(value)
        assert text == ryu_layout(value)
        assert "+" not in text
        assert re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?(e-?[1-9][0-9]*)?", text)
        decoded = loads(dumps(HandoffAction.StartTransfer(HID, value)), ACTIONS)
        assert isinstance(decoded, HandoffAction.StartTransfer)
        assert decoded.delay_ms == value
        assert math.copysign(1.0, decoded.delay_ms) == math.copysign(1.0, value)

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
    def test_non_finite_written_as_null(self, value: float) -> None:
        assert delay_text(value) == "null"
        timing = HandoffTransferTiming(FULL, 10, 1024, value)
        assert dumps(timing) == timing_with(bandwidth_gb_s="null")

    def test_null_delay_cannot_be_read_back(self) -> None:
        # So a StartTransfer with a NaN or infinite delay does not round-trip (serde refuses too).
        text = dumps(HandoffAction.StartTransfer(HID, math.nan))
        with pytest.raises(WireError) as caught:
            loads(text, ACTIONS)
        assert str(caught.value) == "$.StartTransfer.delay_ms: expected a number, got null"

    def test_nan_bandwidth_comes_back_absent(self) -> None:
        # A NaN bandwidth (which validate_transfer_timing refuses) reads back as None (which
        # means "no modelled delay"): the documented, serde-compatible loss.
        timing = HandoffTransferTiming(FULL, 10, 1024, math.nan)
        assert loads(dumps(timing), HandoffTransferTiming) == HandoffTransferTiming(
            FULL, 10, 1024, None
        )

    def test_json_integers_read_as_floats(self) -> None:
        text = '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":2}}'
        action = loads(text, ACTIONS)
        assert isinstance(action, HandoffAction.StartTransfer)
        assert type(action.delay_ms) is float
        assert action.delay_ms == 2.0
        timing = loads(timing_with(bandwidth_gb_s="3"), HandoffTransferTiming)
        assert timing.bandwidth_gb_s == 3.0
        assert type(timing.bandwidth_gb_s) is float

    @pytest.mark.parametrize(
        ("text", "value"),
        [("-0", -0.0), ("-0.0", -0.0), ("1E2", 100.0), ("1e+2", 100.0), ("1e-400", 0.0)],
    )
    def test_reads_any_json_number_spelling(self, text: str, value: float) -> None:
        json_text = '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":' + text + "}}"
        action = loads(json_text, HandoffAction.StartTransfer)
        assert action.delay_ms == value
        assert math.copysign(1.0, action.delay_ms) == math.copysign(1.0, value)


# Strategies for every type.

counts = st.integers(min_value=0, max_value=2**64 - 1)
handoff_ids = st.uuids().map(HandoffId)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
timings = st.builds(
    HandoffTransferTiming,
    st.sampled_from(KvTransferTimingMode),
    counts,
    st.none() | counts,
    st.none() | finite_floats,
    counts,
)
facts = st.one_of(
    st.builds(HandoffFact.SourceHeld, handoff_ids, timings),
    st.builds(HandoffFact.DestinationReserved, handoff_ids, counts),
    *(st.builds(variant, handoff_ids) for variant in FACT_VARIANTS[2:]),
)
actions = st.one_of(
    st.builds(HandoffAction.StartTransfer, handoff_ids, finite_floats),
    *(
        st.builds(variant, handoff_ids)
        for variant in ACTION_VARIANTS
        if variant is not HandoffAction.StartTransfer
    ),
)
action_ids = counts.map(HandoffActionId)
outcomes = st.sampled_from(
    [
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
    ]
) | st.text().map(HandoffActionOutcome.failed)
stored_timings = st.builds(NormalizedStoredTiming, counts, counts, counts)
conformances = st.builds(
    NormalizedHandoffConformance,
    st.sampled_from(EngineType),
    st.sampled_from(HandoffOrder),
    st.lists(st.sampled_from(NormalizedHandoffEvent), max_size=8),
    counts,
    counts,
    counts,
    stored_timings,
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "HandoffId": handoff_ids,
    "HandoffOrder": st.sampled_from(HandoffOrder),
    "EngineType": st.sampled_from(EngineType),
    "KvTransferTimingMode": st.sampled_from(KvTransferTimingMode),
    "HandoffTransferTiming": timings,
    "HandoffFact": facts,
    "HandoffAction": actions,
    "HandoffActionId": action_ids,
    "IssuedHandoffAction": st.builds(IssuedHandoffAction, action_ids, actions),
    "HandoffActionOutcome": outcomes,
    "HandoffCompletion": st.sampled_from(HandoffCompletion),
    "NormalizedHandoffEvent": st.sampled_from(NormalizedHandoffEvent),
    "NormalizedStoredTiming": stored_timings,
    "NormalizedHandoffConformance": conformances,
}
wire_values = st.one_of(*STRATEGIES.values())


class TestRoundTrip:
    @pytest.mark.parametrize("name", STRATEGIES)
    @given(data=st.data())
    def test_reads_back_what_it_writes(self, name: str, data: st.DataObject) -> None:
        value = data.draw(STRATEGIES[name])
        text = dumps(value)
        assert loads(text, type(value)) == value
        assert loads(text.encode(), type(value)) == value
        assert dumps(loads(text, type(value))) == text

    @given(st.one_of(facts, actions))
    def test_family_reads_every_variant(self, value: HandoffFact | HandoffAction) -> None:
        family: type = FACTS if isinstance(value, HandoffFact) else ACTIONS
        assert loads(dumps(value), family) == value

    @given(wire_values)
    def test_writes_compact_json(self, value: object) -> None:
        text = dumps(value)
        json.loads(text)
        if not isinstance(value, HandoffActionOutcome):  # only failure reasons hold free text
            assert not re.search(r"\s", text)

    def test_every_type_has_a_strategy(self) -> None:
        named = set(STRATEGIES)
        assert named == {cls.__name__ for cls in WIRE_TYPES if "." not in cls.__qualname__}


# Malformed input: (text, type, the exact message). Paths name the offending value.
UUID_EXPECTED = "a UUID string like 0123abcd-0123-0123-0123-0123456789ab"
COUNT_EXPECTED = "an unsigned 64-bit integer"
FACT_TAGS = ", ".join(f'"{kind.__name__}"' for kind in typing.get_args(handoff.AnyHandoffFact))
ACTION_TAGS = (
    '"SubmitPrefill", "ReserveDestination", "StartTransfer", "ActivateDestination", '
    '"ReleaseSource", "CancelSource", "CancelDestination", "Complete"'
)
OUTCOMES_EXPECTED = (
    'one of "Submitted", "Accepted", "Scheduled", "Applied", "Noop" or {"Failed": reason}'
)
EVENTS = (
    '"SourceHeld", "DestinationAccepted", "DestinationReserved", "DestinationActivated", '
    '"SourceReleased", "Completed"'
)
TT = "$.SourceHeld.transfer_timing"
CONFORMANCE_JSON = dumps(CONFORMANCE)
CANCELED = '{"Canceled":{"handoff_id":' + H + "}}"
LONG = "x" * 100
Malformed = tuple[str, str | bytes, type, str]
"""A case of malformed input: its name, the text, the type it is decoded as, the message."""


def _bad_tokens(name: str, text: str, shown: str) -> Malformed:
    """A SourceHeld whose timing's `full_prompt_tokens` is the JSON `text`, shown as `shown`."""
    return (
        name,
        held(timing_with(full_prompt_tokens=text)),
        HandoffFact,
        f"{TT}.full_prompt_tokens: expected {COUNT_EXPECTED}, got {shown}",
    )


def _bad_action_id(name: str, text: str, shown: str) -> Malformed:
    """An action id of the JSON `text`, which the message shows as `shown`."""
    return (name, text, HandoffActionId, f"$: expected {COUNT_EXPECTED}, got {shown}")


def _bad_conformance(name: str, edit: tuple[str, str], message: str) -> Malformed:
    """The conformance fixture with one piece of its JSON replaced, `edit` = (old, new)."""
    return (name, CONFORMANCE_JSON.replace(*edit), NormalizedHandoffConformance, message)


def _bad_uuid(name: str, text: str) -> Malformed:
    """A handoff id of the JSON string `text`, which the message quotes as it came."""
    return (name, text, HandoffId, f"$: expected {UUID_EXPECTED}, got the string {text}")


MALFORMED: list[Malformed] = [
    # counts
    _bad_tokens("negative count", "-1", "-1"),
    _bad_tokens("float count", "10.0", "10.0"),
    _bad_tokens("exponent count", "1e1", "10.0"),
    _bad_tokens("bool count", "true", "true"),
    _bad_tokens("string count", '"10"', 'the string "10"'),
    _bad_tokens("count of 2**64", "18446744073709551616", "18446744073709551616"),
    _bad_action_id("minus zero count", "-0", "-0.0"),
    _bad_action_id("huge count", "1" * 40, "an integer of 40 characters"),
    (
        "optional count",
        held(timing_with(kv_bytes_per_token="-5")),
        HandoffFact,
        f"{TT}.kv_bytes_per_token: expected {COUNT_EXPECTED} or null, got -5",
    ),
    _bad_action_id("float action id", "3.0", "3.0"),
    _bad_action_id("string action id", '"3"', 'the string "3"'),
    # floats
    (
        "string bandwidth",
        held(timing_with(bandwidth_gb_s='"1.5"')),
        HandoffFact,
        f'{TT}.bandwidth_gb_s: expected a number or null, got the string "1.5"',
    ),
    (
        "null delay",
        '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":null}}',
        HandoffAction,
        "$.StartTransfer.delay_ms: expected a number, got null",
    ),
    (
        "bool delay",
        '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":false}}',
        HandoffAction,
        "$.StartTransfer.delay_ms: expected a number, got false",
    ),
    # enums
    (
        "mode spelled like Python",
        held(timing_with(mode='"FULL_PROMPT"')),
        HandoffFact,
        f'{TT}.mode: expected one of "full_prompt", "destination_missing", '
        'got the string "FULL_PROMPT"',
    ),
    (
        "order in snake case",
        '"source_first"',
        HandoffOrder,
        '$: expected one of "SourceFirst", "DestinationFirst", got the string "source_first"',
    ),
    _bad_conformance(
        "engine type capitalised",
        ('"sglang"', '"SGLang"'),
        '$.engine_type: expected one of "vllm", "sglang", "trtllm", got the string "SGLang"',
    ),
    _bad_conformance(
        "unknown lifecycle event",
        ('"DestinationAccepted"', '"Nope"'),
        f'$.lifecycle[1]: expected one of {EVENTS}, got the string "Nope"',
    ),
    _bad_conformance(
        "lifecycle not an array",
        ('["SourceHeld","DestinationAccepted"]', '"SourceHeld"'),
        '$.lifecycle: expected an array, got the string "SourceHeld"',
    ),
    (
        "completion as object",
        '{"Success":null}',
        HandoffCompletion,
        '$: expected one of "Success", "Canceled", got an object with the single key "Success"',
    ),
    # structs
    (
        "missing field",
        held(timing_with(kv_bytes_per_token="")),
        HandoffFact,
        f"{TT}.kv_bytes_per_token: missing field, expected {COUNT_EXPECTED} or null",
    ),
    (
        "unknown field",
        held(timing_with(extra="1")),
        HandoffFact,
        f"{TT}.extra: unknown field, expected only mode, full_prompt_tokens, "
        "kv_bytes_per_token, kv_bytes_per_request, bandwidth_gb_s",
    ),
    (
        "unknown field with an odd name",
        '{"before_activation":0,"a b":1}',
        NormalizedStoredTiming,
        '$["a b"]: unknown field, expected only before_activation, on_activation, '
        "repeated_activation_hashes_after_activation",
    ),
    (
        "stored timing fields have no wire default",
        '{"before_activation":0,"on_activation":4}',
        NormalizedStoredTiming,
        f"$.repeated_activation_hashes_after_activation: missing field, expected {COUNT_EXPECTED}",
    ),
    (
        "struct as an array",
        '["full_prompt",10,1024,1.5]',
        HandoffTransferTiming,
        "$: expected a HandoffTransferTiming object, got an array of 4 items",
    ),
    (
        "timing as an empty array",
        held("[]"),
        HandoffFact,
        f"{TT}: expected a HandoffTransferTiming object, got an empty array",
    ),
    _bad_conformance(
        "nested struct field",
        ('"on_activation":4', '"on_activation":-4'),
        f"$.destination_stored.on_activation: expected {COUNT_EXPECTED}, got -4",
    ),
    _bad_conformance(
        "number for a flag",
        ('"source_drained":true', '"source_drained":1'),
        "$.source_drained: expected true or false, got 1",
    ),
    (
        "duplicate field",
        held(timing_with(mode='"full_prompt","mode":"full_prompt"')),
        HandoffFact,
        f"{TT}.mode: duplicate key",
    ),
    (
        "issued id negative",
        '{"id":-3,"action":{"Complete":{"handoff_id":' + H + "}}}",
        IssuedHandoffAction,
        f"$.id: expected {COUNT_EXPECTED}, got -3",
    ),
    # UUIDs
    (
        "not a UUID",
        '{"Canceled":{"handoff_id":"nope"}}',
        HandoffFact,
        f'$.Canceled.handoff_id: expected {UUID_EXPECTED}, got the string "nope"',
    ),
    _bad_uuid("UUID without hyphens", '"00000000000000000000000000000001"'),
    _bad_uuid("braced UUID", '"{00000000-0000-0000-0000-000000000001}"'),
    (
        "URN UUID",
        '"urn:uuid:00000000-0000-0000-0000-000000000001"',
        HandoffId,
        f"$: expected {UUID_EXPECTED}, got the string "
        '"urn:uuid:00000000-0000-0000-0000-0000000"… (45 characters)',
    ),
    _bad_uuid("UUID with a non-hex digit", '"0000000g-0000-0000-0000-000000000001"'),
    _bad_uuid("UUID with moved hyphens", '"000000000-000-0000-0000-000000000001"'),
    _bad_uuid("UUID with a trailing newline", '"00000000-0000-0000-0000-000000000001\\n"'),
    (
        "UUID as a number",
        "1",
        HandoffId,
        f"$: expected {UUID_EXPECTED}, got 1",
    ),
    # tagged enums
    (
        "unknown tag",
        '{"Exploded":{"handoff_id":' + H + "}}",
        HandoffFact,
        f"$.Exploded: unknown variant, expected one of {FACT_TAGS}",
    ),
    (
        "action tag for a fact",
        '{"Complete":{"handoff_id":' + H + "}}",
        HandoffFact,
        f"$.Complete: unknown variant, expected one of {FACT_TAGS}",
    ),
    (
        "another variant",
        CANCELED,
        HandoffFact.SourceHeld,
        '$.Canceled: variant not allowed here, expected "SourceHeld"',
    ),
    (
        "two tags",
        '{"Failed":{"handoff_id":' + H + '},"Canceled":{"handoff_id":' + H + "}}",
        HandoffFact,
        f"$: expected an object with a single key, one of {FACT_TAGS}, got an object with 2 keys",
    ),
    (
        "no tag",
        "{}",
        HandoffAction,
        f"$: expected an object with a single key, one of {ACTION_TAGS}, got an empty object",
    ),
    (
        "unit variant spelling",
        '"Canceled"',
        HandoffFact.Canceled,
        '$: expected an object with the single key "Canceled", got the string "Canceled"',
    ),
    (
        "tag over a string",
        '{"Canceled":"x"}',
        HandoffFact,
        '$.Canceled: expected a HandoffFact.Canceled object, got the string "x"',
    ),
    (
        "tag over an empty object",
        '{"Canceled":{}}',
        HandoffFact,
        f"$.Canceled.handoff_id: missing field, expected {UUID_EXPECTED}",
    ),
    (
        "repeated tag",
        '{"Canceled":{"handoff_id":' + H + '},"Canceled":{"handoff_id":' + H + "}}",
        HandoffFact,
        "$.Canceled: duplicate key",
    ),
    (
        "fact as an issued action",
        '{"id":3,"action":' + CANCELED + "}",
        IssuedHandoffAction,
        f"$.action.Canceled: unknown variant, expected one of {ACTION_TAGS}",
    ),
    # outcomes
    (
        "bare Failed",
        '"Failed"',
        HandoffActionOutcome,
        f'$: expected {OUTCOMES_EXPECTED}, got the string "Failed"',
    ),
    (
        "lowercase outcome",
        '"noop"',
        HandoffActionOutcome,
        f'$: expected {OUTCOMES_EXPECTED}, got the string "noop"',
    ),
    (
        "failure reason not a string",
        '{"Failed":3}',
        HandoffActionOutcome,
        "$.Failed: expected a string, got 3",
    ),
    (
        "unit outcome as an object",
        '{"Noop":null}',
        HandoffActionOutcome,
        '$.Noop: unknown variant, expected "Failed" (other outcomes are plain strings)',
    ),
    (
        "two outcome keys",
        '{"Failed":"a","Noop":"b"}',
        HandoffActionOutcome,
        f"$: expected {OUTCOMES_EXPECTED}, got an object with 2 keys",
    ),
    (
        "lone surrogate reason",
        '{"Failed":"\\ud800"}',
        HandoffActionOutcome,
        "$.Failed: malformed JSON: a string with a lone surrogate escape",
    ),
    (
        "long string shown in part",
        json.dumps(LONG),
        HandoffOrder,
        '$: expected one of "SourceFirst", "DestinationFirst", got the string '
        f'"{LONG[:40]}"… (100 characters)',
    ),
    # not JSON at all
    ("empty", "", HandoffId, "$: malformed JSON: Expecting value at line 1 column 1"),
    (
        "truncated",
        '{"Canceled":',
        HandoffFact,
        "$: malformed JSON: Expecting value at line 1 column 13",
    ),
    ("trailing data", "3 4", HandoffActionId, "$: malformed JSON: Extra data at line 1 column 3"),
    (
        "single quotes",
        "'Noop'",
        HandoffActionOutcome,
        "$: malformed JSON: Expecting value at line 1 column 1",
    ),
    ("NaN literal", "NaN", HandoffActionId, "$: malformed JSON: NaN is not JSON"),
    (
        "Infinity literal",
        '{"StartTransfer":{"handoff_id":' + H + ',"delay_ms":-Infinity}}',
        HandoffAction,
        "$: malformed JSON: -Infinity is not JSON",
    ),
    ("float overflow", "1e400", HandoffActionId, "$: malformed JSON: number out of range: 1e400"),
    (
        "integer past any float",
        "1" + "0" * 400,
        HandoffActionId,
        "$: malformed JSON: number out of range: 100000000000000000000000000000…",
    ),
    (
        "integer just past any float",
        "1" + "0" * 310,
        HandoffActionId,
        "$: malformed JSON: number out of range: 100000000000000000000000000000…",
    ),
    _bad_action_id(
        "duplicate key where a count belongs", '{"a":1,"a":2}', 'an object repeating the key "a"'
    ),
    (
        "duplicate key where a struct belongs",
        '{"a":1,"a":2}',
        NormalizedStoredTiming,
        "$.a: duplicate key",
    ),
    (
        "invalid UTF-8",
        b'"\xff"',
        HandoffId,
        "$: malformed JSON: not UTF-8 (invalid start byte at byte 1)",
    ),
    (
        "UTF-8 byte order mark",
        b'\xef\xbb\xbf"Noop"',
        HandoffActionOutcome,
        "$: malformed JSON: Expecting value at line 1 column 1",
    ),
    (
        "UTF-16",
        '"Noop"'.encode("utf-16"),
        HandoffActionOutcome,
        "$: malformed JSON: not UTF-8 (invalid start byte at byte 0)",
    ),
    (
        "deeply nested",
        "[" * 100_000,
        HandoffFact,
        "$: malformed JSON: nested too deeply",
    ),
    (
        "deeply nested objects",
        '{"a":' * 100_000,
        NormalizedHandoffConformance,
        "$: malformed JSON: nested too deeply",
    ),
]


class TestMalformed:
    @pytest.mark.parametrize(
        ("text", "cls", "message"),
        [pytest.param(text, cls, message, id=name) for name, text, cls, message in MALFORMED],
    )
    def test_refused_with_path(self, text: str | bytes, cls: type, message: str) -> None:
        with pytest.raises(WireError) as caught:
            loads(text, cls)
        assert str(caught.value) == message
        assert message.startswith(caught.value.path + ": ")
        assert caught.value.reason == message[len(caught.value.path) + 2 :]

    def test_wire_error_is_a_handoff_error_and_pickles(self) -> None:
        error = WireError("$.id", "expected an unsigned 64-bit integer, got -3")
        assert isinstance(error, HandoffError)
        copied = pickle.loads(pickle.dumps(error))
        assert (copied.path, copied.reason, str(copied)) == (error.path, error.reason, str(error))

    def test_wire_error_is_the_one_the_package_exports(self) -> None:
        assert WireError is handoff.WireError
        with pytest.raises(handoff.WireError, match=r"^\$: expected an unsigned 64-bit integer"):
            handoff.wire.loads("-3", handoff.HandoffActionId)
        assert b"_errors" not in pickle.dumps(WireError("$", "x"))

    def test_constructor_refusals_become_wire_errors(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def refuse(self: object, *args: object, **kwargs: object) -> None:
            raise ValueError("full_prompt_tokens must be even")

        monkeypatch.setattr(HandoffTransferTiming, "__init__", refuse)
        with pytest.raises(WireError) as caught:
            loads(held(TIMING_JSON), FACTS)
        assert str(caught.value) == (
            f"{TT}: invalid HandoffTransferTiming: full_prompt_tokens must be even"
        )

    def test_count_boundaries(self) -> None:
        top = held(timing_with(full_prompt_tokens=str(2**64 - 1)))
        fact = loads(top, HandoffFact.SourceHeld)
        assert fact.transfer_timing.full_prompt_tokens == 2**64 - 1
        assert loads("0", HandoffActionId) == HandoffActionId(0)


class TestMisuse:
    @pytest.mark.parametrize(
        "value", [object(), True, 3, None, "x", HandoffFact, [object()], (HID,)]
    )
    def test_dumps_refuses_other_objects(self, value: object) -> None:
        with pytest.raises(TypeError, match="has no handoff wire form"):
            dumps(value)

    @pytest.mark.parametrize("cls", [int, str, object, bool, type(None)])
    def test_loads_refuses_other_types(self, cls: type) -> None:
        with pytest.raises(TypeError, match="has no handoff wire form"):
            loads("3", cls)

    @pytest.mark.parametrize("text", [3, None, ["3"]])
    def test_loads_refuses_text_of_another_kind(self, text: object) -> None:
        with pytest.raises(TypeError, match="text must be str or bytes"):
            loads(text, HandoffActionId)  # type: ignore[call-overload]

    def test_lone_surrogate_reason_cannot_be_written(self) -> None:
        with pytest.raises(WireError) as caught:
            dumps(HandoffActionOutcome.failed("bad \ud800"))
        assert str(caught.value) == (
            "$.Failed: a string with a lone surrogate cannot be written as UTF-8 JSON"
        )

    def test_import_handoff_stays_light(self) -> None:
        code = "import sys, handoff; print('handoff.wire' in sys.modules)"
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == "False"


# Fuzz: random and mutated JSON only ever decodes or raises WireError.

NAMES = sorted(
    {
        "handoff_id",
        "transfer_timing",
        "delay_ms",
        "transferable_prompt_tokens",
        "mode",
        "full_prompt_tokens",
        "kv_bytes_per_token",
        "bandwidth_gb_s",
        "kv_bytes_per_request",
        "id",
        "action",
        "lifecycle",
        "destination_stored",
        *(cls.__name__ for cls in (*FACT_VARIANTS, *ACTION_VARIANTS)),
        "Submitted",
        "Noop",
        "vllm",
        "full_prompt",
        "SourceFirst",
        "00000000-0000-0000-0000-000000000001",
    }
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(NAMES),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=24,
)
wire_types = st.sampled_from(WIRE_TYPES)


def decodes_or_refuses(text: str | bytes, cls: type) -> None:
    try:
        value: object = loads(text, cls)
    except WireError as error:
        refusal = error
    else:
        assert isinstance(value, cls)
        return
    assert refusal.path.startswith("$")


def locations(data: object, path: str = "$") -> list[tuple[str, list[Any]]]:
    """Every value inside `data` as (JSON path, the keys leading to it)."""
    found: list[tuple[str, list[Any]]] = [(path, [])]
    children: list[tuple[Any, object, str]] = []
    if isinstance(data, dict):
        children = [(key, item, f".{key}") for key, item in data.items()]
    elif isinstance(data, list):
        children = [(index, item, f"[{index}]") for index, item in enumerate(data)]
    for key, item, segment in children:
        found.extend((inner, [key, *keys]) for inner, keys in locations(item, path + segment))
    return found


def replace(data: object, keys: list[Any], new: object) -> object:
    if not keys:
        return new
    data = copy.deepcopy(data)
    parent: Any = data
    for key in keys[:-1]:
        parent = parent[key]
    parent[keys[-1]] = new
    return data


class TestFuzz:
    @given(json_values, wire_types)
    def test_random_json(self, data: object, cls: type) -> None:
        decodes_or_refuses(json.dumps(data), cls)

    @given(st.binary(max_size=64), wire_types)
    def test_random_bytes(self, data: bytes, cls: type) -> None:
        decodes_or_refuses(data, cls)

    @given(st.text(max_size=64), wire_types)
    def test_random_text(self, text: str, cls: type) -> None:
        decodes_or_refuses(text, cls)

    @given(wire_values, st.data())
    def test_structural_mutations(self, value: object, data: st.DataObject) -> None:
        tree = json.loads(dumps(value))
        _, keys = data.draw(st.sampled_from(locations(tree)))
        target: Any = tree
        for key in keys:
            target = target[key]
        kinds = ["replace", "wrap"]
        if isinstance(target, dict):
            kinds += ["add"] + (["delete"] if target else [])
        kind = data.draw(st.sampled_from(kinds))
        if kind == "replace":
            mutated = replace(tree, keys, data.draw(json_values))
        elif kind == "wrap":
            mutated = replace(tree, keys, [target])
        elif kind == "add":
            extra = data.draw(st.sampled_from(NAMES) | st.text(max_size=6))
            mutated = replace(tree, keys, {**target, extra: data.draw(json_values)})
        else:
            gone = data.draw(st.sampled_from(sorted(target)))
            mutated = replace(tree, keys, {k: v for k, v in target.items() if k != gone})
        cls = data.draw(st.sampled_from([type(value), *WIRE_TYPES]))
        decodes_or_refuses(json.dumps(mutated), cls)

    @given(wire_values, st.data())
    def test_text_mutations(self, value: object, data: st.DataObject) -> None:
        text = dumps(value)
        at = data.draw(st.integers(min_value=0, max_value=len(text)))
        kind = data.draw(st.sampled_from(["truncate", "insert", "delete", "bytes"]))
        if kind == "truncate":
            mutated: str | bytes = text[:at]
        elif kind == "insert":
            mutated = text[:at] + data.draw(st.text(min_size=1, max_size=3)) + text[at:]
        elif kind == "delete":
            mutated = text[:at] + text[at + 1 :]
        else:
            raw = text.encode()
            mutated = raw[:at] + data.draw(st.binary(min_size=1, max_size=3)) + raw[at:]
        decodes_or_refuses(mutated, type(value))

    @given(wire_values, st.data())
    def test_a_wrong_leaf_is_named_by_its_path(self, value: object, data: st.DataObject) -> None:
        # No scalar position of any wire type accepts an array.
        tree = json.loads(dumps(value))
        leaves = [(path, keys) for path, keys in locations(tree) if _is_leaf(tree, keys)]
        path, keys = data.draw(st.sampled_from(leaves))
        with pytest.raises(WireError) as caught:
            loads(json.dumps(replace(tree, keys, [])), type(value))
        assert caught.value.path == path


def _is_leaf(tree: object, keys: list[Any]) -> bool:
    target: Any = tree
    for key in keys:
        target = target[key]
    return not isinstance(target, dict | list)
