"""Apps that answer badly: each fails (or retries) only its own run, with an error that says
what was wrong; the platform stays up and other runs complete. Weir runs in-process
(TestClient); the apps are the raw loopback server of evil_app.py."""

import asyncio
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.executor.http.client import AppClient
from weir.platform.executor.sync_request import request_sync
from weir.platform.settings import Settings

from tests.api.evil_app import EvilApp
from tests.api.evil_weir import SIGNING_KEY, Weir, failed_with
from tests.api.helpers import LOCAL


def _settings(database_url: str, *, dev: bool) -> Settings:
    return Settings(
        database_url=database_url,
        sqlite_synchronous="OFF",
        dev=dev,
        event_keys=("key",),
        signing_keys=(SIGNING_KEY,),
        admin_token="admin",
        retry_delay_ms=20,
        app_timeout_s=1.0,
    )


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    with (
        EvilApp(SIGNING_KEY).running() as evil,
        TestClient(create_app(_settings(database_url, dev=True)), LOCAL) as client,
    ):
        yield Weir(client, evil)


@pytest.fixture
def signed_weir(database_url: str) -> Iterator[Weir]:
    with (
        EvilApp(SIGNING_KEY).running() as evil,
        TestClient(create_app(_settings(database_url, dev=False)), LOCAL) as client,
    ):
        yield Weir(client, evil)


# -- malformed answers -------------------------------------------------------------------------


def test_a_body_that_is_not_json_is_retried_then_fails_the_run(weir: Weir) -> None:
    weir.sync("not_json", "completed_not_json", retries=1)
    assert "invalid step ops" in failed_with(weir.run_of("not_json"), "InvalidResponse")
    assert weir.evil.calls["not_json"] == 2  # retried once


def test_a_finished_body_that_is_not_json_is_the_runs_text_output(weir: Weir) -> None:
    """As Inngest reads it (docs/protocol.md): hosts such as DigitalOcean functions send a
    returned string as raw text."""
    weir.sync("completed_not_json")
    run = weir.run_of("completed_not_json")
    assert run["status"] == "Completed" and run["output"] == "{oops", run


def test_an_unknown_opcode_fails_the_run_naming_it(weir: Weir) -> None:
    weir.sync("unknown_op")
    message = failed_with(weir.run_of("unknown_op"), "UnknownOpcode")
    assert "Explode" in message and "StepRun" in message


def test_wrongly_typed_ops_fail_the_run_saying_which_field(weir: Weir) -> None:
    weir.sync("wrong_types")
    assert "'id'" in failed_with(weir.run_of("wrong_types"), "InvalidResponse")


def test_a_reset_connection_is_a_failed_attempt(weir: Weir) -> None:
    weir.sync("reset", retries=1)
    message = failed_with(weir.run_of("reset"), "ConnectionError")
    assert weir.evil.url("reset") in message
    assert weir.evil.calls["reset"] == 2


def test_a_response_that_never_ends_times_out(weir: Weir) -> None:
    weir.sync("never_ends")
    started = time.monotonic()
    message = failed_with(weir.run_of("never_ends"), "ConnectionError")
    assert "Timeout" in message
    assert time.monotonic() - started < 10  # the 1 s app timeout, not the default 2 h


def test_numbers_that_cannot_be_sent_back_fail_the_run_instead_of_looping(weir: Weir) -> None:
    weir.sync("huge_int", retries=3)
    message = failed_with(weir.run_of("huge_int"), "InvalidOp")
    assert "'n': data is 1152921504606846976" in message and "±(2^53-1)" in message
    assert weir.evil.calls["huge_int"] == 1  # not retried: it would fail the same way


def test_an_output_of_1e400_fails_the_run_and_the_run_stays_readable(weir: Weir) -> None:
    weir.sync("output_1e400", retries=2)
    run = weir.run_of("output_1e400")  # reads /v1/runs/{id}: once a 500, forever
    message = failed_with(run, "InvalidOutput")
    assert "output.total is Infinity" in message and "finite" in message
    assert weir.evil.calls["output_1e400"] == 1


BAD_OP_ERRORS = {
    "bad_sleep_duration": "'opts.duration': 'forever' is not a duration",
    "bad_sleep_time": "'name' must be the ISO-8601 time to wake at",
    "huge_sleep": "longer than 100 years",
    "bad_wait_timeout": "'opts.timeout': '1 fortnight' is not a duration",
    "bad_wait_if": "'opts.if' is not a valid expression",
    "bad_wait_event": "must be at most 512 printable characters",
    "wait_if_nul": "'opts.if' must be a CEL expression string (no NUL)",
    "invoke_list_payload": "'opts.payload' must be an object",
    "invoke_text_data": "'opts.payload.data' must be an object",
    "invoke_bad_timeout": "'opts.timeout': a duration must be a string",
    "ai_no_url": "'opts.url' must be the http(s) URL to POST to",
    "ai_bad_url": "'opts.url' 'ftp://llm/v1' must be an http(s) URL with a host",
    "ai_list_body": "'opts.body' must be a JSON object",
    "ai_number_header": "'opts.headers' must be an object of string header values",
    "signal_missing": "'opts.signal' must be the name of the signal to wait for",
    "signal_bad_conflict": "'opts.conflict' must be 'fail' or 'replace', got 'never'",
    "signal_bad_if": "'opts.if' is not a valid expression",
    "long_step_id": "must be at most 64 printable characters",
    "nul_step_name": "'displayName' holds a NUL character",
}


@pytest.mark.parametrize("mode", sorted(BAD_OP_ERRORS))
def test_an_op_with_a_field_weir_cannot_act_on_fails_the_run_once(weir: Weir, mode: str) -> None:
    weir.sync(mode, retries=2)
    message = failed_with(weir.run_of(mode, timeout=15), "InvalidOp")
    assert BAD_OP_ERRORS[mode] in message, message
    assert weir.evil.calls[mode] == 1  # neither retried nor looping at every lease


def test_a_deeply_nested_answer_to_a_sync_request_is_an_error_not_a_crash(weir: Weir) -> None:
    settings = weir.client.app.state.platform.settings  # type: ignore[attr-defined]

    async def sync() -> str | None:
        client = AppClient(timeout_s=5.0)
        try:
            return await request_sync(client, weir.evil.url("deep_json"), settings)
        finally:
            await client.close()

    assert asyncio.run(sync()) is None  # not JSON Weir can read: no error passed through
    assert weir.evil.calls["deep_json"] == 1


# -- limits ------------------------------------------------------------------------------------


def test_a_response_over_8_mib_fails_the_attempt(weir: Weir) -> None:
    weir.sync("huge_response")
    assert "8 MiB" in failed_with(weir.run_of("huge_response"), "ConnectionError")


def test_a_step_output_over_4_mib_fails_only_that_run(weir: Weir) -> None:
    weir.sync("big_step", "good", retries=2)
    bad, fine = weir.start("big_step"), weir.start("good")
    message = failed_with(weir.finished(bad), "StepOutputTooLarge")
    assert "'big'" in message and "4 MiB" in message
    assert weir.evil.calls["big_step"] == 1  # no retry: the same step would answer the same
    assert weir.finished(fine)["status"] == "Completed"


def test_run_state_over_32_mib_fails_the_run(weir: Weir) -> None:
    weir.sync("fat_state")
    run = weir.run_of("fat_state", timeout=60)
    assert "32 MiB" in failed_with(run, "RunStateTooLarge")
    assert len(run["steps"]) == 8  # eight steps fit, the ninth would not


def test_a_run_stops_at_1000_steps(weir: Weir) -> None:
    weir.sync("many_steps")
    run = weir.run_of("many_steps", timeout=60)
    assert "1000 steps" in failed_with(run, "StepLimitExceeded")
    assert len(run["steps"]) == 1000


def test_the_platform_stays_up_after_every_misbehaviour(weir: Weir) -> None:
    modes = ("not_json", "unknown_op", "wrong_types", "reset", "huge_int", "good")
    weir.sync(*modes)
    runs = {mode: weir.start(mode) for mode in modes}
    for mode in modes[:-1]:
        assert weir.finished(runs[mode])["status"] == "Failed", mode
    assert weir.finished(runs["good"])["status"] == "Completed"
    assert weir.client.get("/health").status_code == 200


# -- start mode: answers must be signed ------------------------------------------------------


def test_start_mode_accepts_signed_answers(signed_weir: Weir) -> None:
    signed_weir.sync("good")
    run = signed_weir.run_of("good")
    assert run["status"] == "Completed"
    assert run["output"] == {"ok": True}


@pytest.mark.parametrize(("mode", "why"), [("unsigned", "no X-Inngest"), ("wrong_key", "no key")])
def test_start_mode_refuses_unsigned_or_wrongly_signed_answers(
    signed_weir: Weir, mode: str, why: str
) -> None:
    signed_weir.sync(mode)
    message = failed_with(signed_weir.run_of(mode), "InvalidSignature")
    assert why in message and "cloud mode" in message


@pytest.mark.parametrize("mode", ["unicode_digit_t", "unicode_s", "long_t"])
def test_a_signature_in_unicode_or_absurdly_long_is_refused_once(
    signed_weir: Weir, mode: str
) -> None:
    signed_weir.sync(mode)
    message = failed_with(signed_weir.run_of(mode, timeout=15), "InvalidSignature")
    assert "no key matches" in message
    assert signed_weir.evil.calls[mode] == 1


def test_dev_mode_does_not_ask_for_signatures(weir: Weir) -> None:
    weir.sync("unsigned")
    assert weir.run_of("unsigned")["status"] == "Completed"
