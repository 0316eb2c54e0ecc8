"""Any JSON at all gives an AppSync or a SyncError: bad input is never an exception."""

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from weir.platform.functions import AppSync, SyncError, parse_sync

_FLOW = json.loads((Path(__file__).parent / "fixtures" / "dev_register_payload.json").read_text())
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_OPTIONS = st.sampled_from(
    [
        "id",
        "name",
        "triggers",
        "steps",
        "concurrency",
        "throttle",
        "rateLimit",
        "debounce",
        "batchEvents",
        "singleton",
        "idempotency",
        "priority",
        "cancel",
        "timeouts",
    ]
)


def _outcome(payload: Any) -> AppSync | SyncError:
    try:
        return parse_sync(payload)
    except SyncError as error:
        outcome = error
    assert outcome.problems
    return outcome


@settings(max_examples=100, deadline=None)
@given(_JSON)
def test_arbitrary_bodies(payload: Any) -> None:
    _outcome(payload)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 25), _OPTIONS, _JSON)
def test_one_option_replaced_by_anything(index: int, option: str, value: Any) -> None:
    payload = copy.deepcopy(_FLOW)
    payload["functions"][index][option] = value
    _outcome(payload)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["throttle", "rateLimit", "debounce", "batchEvents", "timeouts"]),
    st.sampled_from(["limit", "period", "burst", "key", "timeout", "maxSize", "start", "if"]),
    _JSON,
)
def test_one_field_replaced_by_anything(option: str, field: str, value: Any) -> None:
    payload = copy.deepcopy(_FLOW)
    payload["functions"][1][option] = {**payload["functions"][1].get(option, {}), field: value}
    _outcome(payload)
