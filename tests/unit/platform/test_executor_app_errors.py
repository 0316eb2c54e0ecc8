"""Failures to reach an app, and non-SDK answers, become sentences: no client exception
names, no HTML, the URL the user gave."""

import socket

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey
from weir.platform.executor import app_errors
from weir.platform.executor.http.client import TransportError
from weir.platform.executor.response import RawResponse

URL = "http://127.0.0.1:8000/api/inngest"
KEY = ConnectionKey("127.0.0.1", 8000, False, True, None, None, None)


def wrapped(cause: BaseException) -> TransportError:
    try:
        raise TransportError(f"{type(cause).__name__}: {cause}") from cause
    except TransportError as exc:
        return exc


def test_a_refused_connection_asks_whether_the_app_runs() -> None:
    refused = aiohttp.ClientConnectorError(KEY, ConnectionRefusedError(111, "refused"))
    said = app_errors.unreachable(URL + "?fnId=a-b&stepId=step", wrapped(refused))
    assert said == f"no app answered at {URL}; is it running?"


def test_other_failures_say_what_happened() -> None:
    dns = aiohttp.ClientConnectorError(KEY, socket.gaierror(-2, "Name or service not known"))
    cases = {
        TimeoutError(): "Timeout waiting for the app at",
        aiohttp.ServerDisconnectedError(): "closed the connection before answering",
        aiohttp.ClientOSError(104, "Connection reset by peer"): "closed the connection",
        dns: "could not be found",
    }
    for cause, expected in cases.items():
        said = app_errors.unreachable(URL, wrapped(cause))
        assert expected in said and "Error" not in said, said


def test_our_own_sentence_is_kept() -> None:
    too_big = TransportError("the response exceeded 8388608 bytes (8 MiB), the most allowed")
    assert app_errors.unreachable(URL, too_big) == str(too_big)


def test_a_non_sdk_answer_quotes_no_html() -> None:
    page = b"<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>"
    said = app_errors.not_an_sdk(URL, 404, "text/html", page)
    assert said == f"{URL} answered HTTP 404 (nothing there); " + app_errors.NOT_SDK_HINT
    said = app_errors.not_an_sdk(URL, 502, "text/html; charset=utf-8", page)
    assert "<" not in said and "HTTP 502, but not as an SDK" in said


def test_a_short_plain_text_answer_is_quoted() -> None:
    said = app_errors.not_an_sdk(URL, 500, "text/plain", b"Internal Server Error\n")
    assert said.startswith(f'{URL} answered HTTP 500 ("Internal Server Error"), but not as')


def test_only_non_sdk_failures_are_judged_here() -> None:
    sdk = RawResponse(500, {"x-inngest-sdk": "py:v1"}, b"{}")
    assert app_errors.non_sdk_failure(URL, sdk) is None
    assert app_errors.non_sdk_failure(URL, RawResponse(401, {}, b"")) is None
    failed = app_errors.non_sdk_failure(URL, RawResponse(502, {}, b"<html>bad</html>"))
    assert failed is not None and failed.error["name"] == "NotAnSdkResponse"
    assert not failed.no_retry  # a proxy's 502 may pass


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("localhost:3000/api/inngest", "has no scheme: write it as http://localhost:3000/api"),
        ("127.0.0.1:3000/api/inngest", "has no scheme: write it as http://127.0.0.1:3000/api"),
        ("ftp://h/api/inngest", "is not an http:// or https:// URL"),
        ("http:///api/inngest", "names no host"),
        ("http://h:port/api/inngest", "is not a valid URL"),
    ],
)
def test_a_url_weir_cannot_call_says_what_is_wrong_with_it(url: str, said: str) -> None:
    problem = app_errors.url_problem(url)
    assert problem is not None and said in problem


def test_a_url_weir_can_call_has_no_problem() -> None:
    assert app_errors.url_problem("http://127.0.0.1:3000/api/inngest") is None
    assert app_errors.url_problem("HTTPS://[::1]:3000/api/inngest") is None
