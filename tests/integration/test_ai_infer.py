"""step.ai.infer end to end: Weir makes the model request itself (docs/protocol.md §8.1),
for an app on the official SDK and one on weir.sdk, against a local fake LLM."""

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.fake_llm import FakeLLM
from tests.integration.harness import AppServer, WeirServer, wait_until

AI_APPS = {"weir": "tests.integration.apps.weir_ai", "inngest": "tests.integration.apps.inngest_ai"}


@pytest.fixture(scope="module", params=sorted(AI_APPS))
def ai_sdk(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def weir(ai_sdk: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path_factory.mktemp(f"weir-ai-{ai_sdk}"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ai_app(
    ai_sdk: str, weir: WeirServer, llm: FakeLLM, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    tmp = tmp_path_factory.mktemp(f"app-ai-{ai_sdk}")
    server = AppServer(tmp, AI_APPS[ai_sdk], f"{ai_sdk}ai", weir.url)
    server.env = server.env | {"FAKE_LLM_URL": llm.url}
    server.start()
    server.sync()
    yield server
    server.stop()


def _calls(llm: FakeLLM, kind: str, before: int) -> list[dict[str, object]]:
    return llm.to(kind)[before:]


def test_anthropic_format_sends_x_api_key_and_saves_the_answer(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    before = len(llm.to("anthropic"))
    run = weir.finished_run(weir.send("ai/anthropic"))
    assert run["status"] == "Completed", run
    calls = _calls(llm, "anthropic", before)
    assert len(calls) == 1  # made once by Weir; replays read the saved result
    call = calls[0]
    assert call["path"] == "/anthropic/v1/messages"
    headers = call["headers"]
    assert isinstance(headers, dict)
    assert headers["x-api-key"] == "sk-anthropic" and "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert call["body"] == {
        "model": "claude-x",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hello"}],
    }
    output = run["output"]
    assert output["after"] == "ran after"
    assert output["answer"]["content"] == [{"type": "text", "text": "hi"}]
    assert output["answer"]["echo"] == call["body"]


def test_openai_format_sends_a_bearer_token(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    before = len(llm.to("openai"))
    run = weir.finished_run(weir.send("ai/openai"))
    assert run["status"] == "Completed", run
    (call,) = _calls(llm, "openai", before)
    assert call["path"] == "/openai/v1/chat/completions"
    headers = call["headers"]
    assert isinstance(headers, dict)
    assert headers["authorization"] == "Bearer sk-openai" and "x-api-key" not in headers
    assert run["output"]["echo"]["model"] == "gpt-x"


def test_a_non_2xx_answer_is_retried_then_the_error_is_saved(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    before = len(llm.to("down"))
    run = weir.finished_run(weir.send("ai/down"), timeout=30)
    assert run["status"] == "Completed", run  # the function caught the step's error
    assert len(_calls(llm, "down", before)) == 2  # retries=1: two attempts
    assert run["output"]["error"] == "AIRequestFailed"
    assert "HTTP 503" in run["output"]["message"] and "overloaded" in run["output"]["message"]


def test_a_redirect_is_not_followed_and_not_retried(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    before_redirect, before_target = len(llm.to("redirect")), len(llm.to("openai"))
    run = weir.finished_run(weir.send("ai/redirect"), timeout=30)
    assert run["status"] == "Completed", run
    assert run["output"]["error"] == "Redirected"
    assert "does not follow redirects" in run["output"]["message"]
    assert len(_calls(llm, "redirect", before_redirect)) == 1
    assert _calls(llm, "openai", before_target) == []


def test_the_ai_step_is_a_timeline_span_and_a_saved_step(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    run = weir.finished_run(weir.send("ai/openai"))
    (span,) = [h for h in run["history"] if h["kind"] == "ai"]
    assert span["status"] == "COMPLETED" and span["ended_at"] >= span["started_at"]
    # the request body is kept as the step's input (what a rerun from this step may replace)
    assert span["detail"] == {
        "url": f"{llm.url}/openai/v1/chat/completions",
        "format": "openai-chat",
        "input": [
            {"model": "gpt-x", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
        ],
    }
    assert "sk-openai" not in str(run)  # the key is never shown
    (step,) = [s for s in run["steps"] if s["name"] == "ask"]
    assert step["op"] == "AIGateway", step


def test_a_rerun_from_the_ai_step_sends_the_new_request_body(
    weir: WeirServer, ai_app: AppServer, llm: FakeLLM
) -> None:
    # The step's input is the body Weir sends: a rerun from it may replace it, on both SDKs
    run = weir.finished_run(weir.send("ai/anthropic"))
    assert run["status"] == "Completed", run
    body = {"model": "claude-y", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    before = len(llm.to("anthropic"))
    answer = httpx.post(
        f"{weir.url}/v1/runs/{run['run_id']}/rerun", json={"from_step": "ask", "input": [body]}
    )
    assert answer.status_code == 200, answer.text
    new_id = answer.json()["data"]["run_id"]
    again = wait_until(lambda: weir.run(new_id)["status"] == "Completed" and weir.run(new_id))
    [call] = _calls(llm, "anthropic", before)
    assert call["body"] == body
    assert again["output"]["answer"]["echo"] == body and again["output"]["after"] == "ran after"
