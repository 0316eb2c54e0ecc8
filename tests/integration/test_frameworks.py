"""The official SDK served by Flask, Django, Tornado and DigitalOcean (not FastAPI) works with
Weir unchanged: steps, a sleep, a wait for an event and a retry, each through a real server."""

import sys
from collections.abc import Callable, Iterator

import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until


def _uvicorn(interface: str, path: str = "/api/inngest") -> Callable[[AppServer], None]:
    def launch(server: AppServer) -> None:
        server.args = [*server.args, "--interface", interface]
        server.url = f"http://127.0.0.1:{server.port}{path}"

    return launch


def _tornado(server: AppServer) -> None:
    # Tornado serves itself: the app module runs its own server on the port.
    server.args = [sys.executable, "-m", "tests.integration.apps.inngest_tornado", str(server.port)]


FRAMEWORKS: dict[str, tuple[str, Callable[[AppServer], None]]] = {
    # module, how it is served: Flask is WSGI, Django's app here is ASGI, the DigitalOcean
    # function sits behind an ASGI stand-in for DigitalOcean's web-function runtime.
    "flask": ("tests.integration.apps.inngest_flask", _uvicorn("wsgi")),
    "django": ("tests.integration.apps.inngest_django", _uvicorn("asgi3")),
    "tornado": ("tests.integration.apps.inngest_tornado", _tornado),
    "digital_ocean": (
        "tests.integration.apps.inngest_digital_ocean",
        _uvicorn("asgi3", "/api/v1/web/fn-weir/inngest/serve"),  # its SERVE_PATH
    ),
}


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def weir(framework: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path_factory.mktemp(f"weir-{framework}"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def framework_app(
    framework: str, weir: WeirServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    module, launch = FRAMEWORKS[framework]
    app_id = f"{framework.replace('_', '')}app"
    server = AppServer(tmp_path_factory.mktemp(framework), module, app_id, weir.url)
    launch(server)
    server.start()
    body = server.sync()
    assert body.get("ok"), body
    yield server
    server.stop()


def test_steps_run_once_each_and_the_result_is_returned(
    weir: WeirServer, framework_app: AppServer
) -> None:
    run = weir.finished_run(weir.send("t/steps", {"x": 1}))
    assert run["status"] == "Completed" and run["output"] == {"a": 2, "b": 20}, run
    assert [s["name"] for s in run["steps"]] == ["a", "b"]


def test_a_sleep_resumes_the_function(weir: WeirServer, framework_app: AppServer) -> None:
    run = weir.finished_run(weir.send("t/sleep"))
    assert run["status"] == "Completed" and run["output"] == "woke", run
    assert [h["status"] for h in run["history"] if h["kind"] == "sleep"] == ["COMPLETED"]


def test_a_wait_is_matched_by_a_later_event(weir: WeirServer, framework_app: AppServer) -> None:
    event_id = weir.send("t/wait", {"k": "blue"})

    def waiting() -> bool:
        runs = weir.runs(event_id)
        history = weir.run(runs[0]["run_id"])["history"] if runs else []
        return any(h["kind"] == "wait" for h in history)

    wait_until(waiting)
    weir.send("t/go", {"k": "red"})
    weir.send("t/go", {"k": "blue", "n": 7})
    run = weir.finished_run(event_id)
    assert run["output"] == {"k": "blue", "n": 7}, run


def test_a_failed_attempt_is_retried(weir: WeirServer, framework_app: AppServer) -> None:
    run = weir.finished_run(weir.send("t/flaky"))
    assert run["status"] == "Completed" and run["output"] == 1, run
