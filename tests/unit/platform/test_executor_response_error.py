"""A failing answer's error body is the run's error as the app sent it, JSON for JSON, as
Inngest keeps it: a null stack and fields of the app's own stay."""

import json

import pytest
from weir.platform.executor.response import AttemptFailed, RawResponse, classify

SDK = {"x-inngest-sdk": "py:v0.5.19"}


@pytest.mark.parametrize(
    "body",
    [
        {"name": "StepError", "message": "timed out", "stack": None, "code": "step_errored"},
        {"name": "E", "message": "m", "stack": "Traceback", "cause": {"n": 1}, "retry": False},
    ],
)
def test_an_error_body_is_kept_as_the_app_sent_it(body: dict[str, object]) -> None:
    raw = RawResponse(500, SDK, json.dumps(body).encode())
    outcome = classify(raw, 0)
    assert isinstance(outcome, AttemptFailed)
    assert outcome.error == body


def test_a_name_is_added_only_where_the_error_has_none() -> None:
    outcome = classify(RawResponse(500, SDK, b'{"message": "m", "stack": null}'), 0)
    assert isinstance(outcome, AttemptFailed)
    assert outcome.error == {"message": "m", "stack": None, "name": "Error"}


def test_an_error_with_a_value_no_run_can_keep_keeps_its_text_fields() -> None:
    body = b'{"name": "E", "message": "m", "n": 123456789012345678901234567890}'
    outcome = classify(RawResponse(500, SDK, body), 0)
    assert isinstance(outcome, AttemptFailed)
    assert outcome.error == {"name": "E", "message": "m"}
