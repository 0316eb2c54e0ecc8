"""`weir capacity`, `weir lanes` and `weir functions` pointed at a server that is not Weir (a
typo in --base-url, another service on the port): one sentence saying so, exit 1, never a
traceback. The server is a real one on loopback answering 200 with bodies of every wrong
shape."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from weir.platform.cli import capacity, functions, lanes
from weir.platform.cli import main as cli

BODIES = {
    "html": (200, b"<html>hello</html>"),
    "list": (200, b"[1, 2, 3]"),
    "object": (200, b'{"status": "ok"}'),
    "rows": (200, b'{"data": [{"name": "x"}]}'),
    "text-error": (404, b"[]"),
}


@pytest.fixture
def other(request: pytest.FixtureRequest) -> Iterator[str]:
    status, body = BODIES[request.param]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("other", sorted(BODIES), indirect=True)
@pytest.mark.parametrize(
    ("argv", "run"),
    [
        (["capacity", "list"], capacity.run),
        (["lanes", "list"], lanes.run),
        (["lanes", "show", "lane-1"], lanes.run),
        (["functions", "list"], functions.run),
        (["functions", "show", "fn"], functions.run),
    ],
)
def test_a_server_that_is_not_weir_gets_a_sentence_not_a_traceback(
    other: str, argv: list[str], run: object, capsys: pytest.CaptureFixture[str]
) -> None:
    args = cli._parser().parse_args([*argv, "--base-url", other])
    assert callable(run)
    assert run(args) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert other in err or "HTTP 404" in err, err
