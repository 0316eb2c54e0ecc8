"""step.ai.infer's opts (docs/protocol.md §8.1): the request Weir makes, and what it refuses."""

import pytest
from weir.platform.executor.ai_options import AIOptsError, auth_headers, parse_ai_opts, shown_url
from weir.platform.executor.opchecks import OpError, check_op

GOOD = {
    "url": "http://llm.local:9000/v1/messages",
    "body": {"model": "m", "messages": []},
    "headers": {"Anthropic-Version": "2023-06-01"},
    "auth_key": "sk-1",
    "format": "anthropic",
    "type": "step.ai.infer",
}


@pytest.mark.parametrize(
    ("fmt", "header", "value"),
    [
        ("anthropic", "x-api-key", "sk-1"),
        ("openai-chat", "authorization", "Bearer sk-1"),
        ("grok", "authorization", "Bearer sk-1"),
        ("azure-openai", "api-key", "sk-1"),
    ],
)
def test_the_key_goes_where_the_format_expects_it(fmt: str, header: str, value: str) -> None:
    assert auth_headers(fmt, "sk-1") == {header: value}


def test_gemini_and_an_empty_key_add_no_header() -> None:
    assert auth_headers("gemini", "k") == {}  # the adapter put it in the URL
    assert auth_headers("openai-chat", "") == {}


def test_the_request_keeps_the_sdk_headers_and_adds_auth_and_content_type() -> None:
    req = parse_ai_opts(GOOD)
    assert req.url == GOOD["url"] and req.body == GOOD["body"]
    assert req.headers == {
        "Anthropic-Version": "2023-06-01",  # as the app spelled it
        "x-api-key": "sk-1",
        "content-type": "application/json",
    }


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"url": None}, "'opts.url' must be the http(s) URL"),
        ({"url": "llm/v1"}, "must be an http(s) URL with a host"),
        ({"url": "http://llm:99999/"}, "is not a valid URL"),
        ({"url": "http://llm/\n"}, "printable"),
        ({"body": "hi"}, "'opts.body' must be a JSON object"),
        ({"body": None}, "'opts.body' must be a JSON object"),
        ({"headers": ["a"]}, "'opts.headers' must be an object"),
        ({"auth_key": 5}, "'opts.auth_key' must be a string"),
        ({"format": 1}, "'opts.format' must be a string"),
    ],
)
def test_a_bad_field_is_named(change: dict[str, object], words: str) -> None:
    with pytest.raises(AIOptsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_ai_opts(GOOD | change)


def test_check_op_refuses_a_bad_ai_op_as_an_op_error() -> None:
    item = {"op": "AIGateway", "id": "a" * 40, "opts": GOOD | {"body": [1]}}
    with pytest.raises(OpError, match="op AIGateway 'aaaa"):
        check_op(item)
    check_op(item | {"opts": GOOD})  # a good one passes


def test_the_shown_url_drops_the_query_that_may_hold_a_key() -> None:
    assert (
        shown_url("https://g.example/v1/m:generate?key=secret") == "https://g.example/v1/m:generate"
    )


def test_the_shown_url_drops_user_info_too() -> None:
    assert shown_url("https://u:sk-1@llm.example:8443/v1?key=k") == "https://llm.example:8443/v1"
    assert shown_url("https://u:p@ss@llm.example/v1") == "https://llm.example/v1"


def test_user_info_becomes_basic_unless_the_app_sent_its_own_authorization() -> None:
    req = parse_ai_opts(GOOD | {"url": "http://u:p%40ss@llm.local/v1", "auth_key": ""})
    assert req.url == "http://llm.local/v1"
    assert req.headers["authorization"] == "Basic dTpwQHNz"  # u:p@ss
    own = {"Authorization": "Bearer mine"}
    req = parse_ai_opts(GOOD | {"url": "http://u:p@llm.local/v1", "headers": own, "auth_key": ""})
    assert req.headers == {"Authorization": "Bearer mine", "content-type": "application/json"}


def test_a_header_weir_sets_replaces_the_apps_in_any_case() -> None:
    headers = {"X-API-KEY": "old", "Content-Type": "text/plain", "x-api-key": "older"}
    req = parse_ai_opts(GOOD | {"headers": headers})
    assert req.headers == {"x-api-key": "sk-1", "Content-Type": "application/json"}
