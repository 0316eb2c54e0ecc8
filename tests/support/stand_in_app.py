"""An SDK stand-in on loopback for sync tests: it answers Weir's sync request (PUT) as the SDKs
do, posting its config to the server its "environment" names and passing the reply back."""

import http.server
import threading
from typing import Any

import httpx

BAD_CEL = "event.data.id ==\n 1 +"  # not CEL: the caret goes under the end of its second line


class StandIn:
    """An SDK stand-in on loopback: asked to sync (PUT), it posts its config to `register_to`
    (as an SDK posts to the server its environment names) and answers with the reply."""

    def __init__(self, expression: str | None = None) -> None:
        self.register_to = ""
        self.expression = expression
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                reply = httpx.post(f"{stand_in.register_to}/fn/register", json=stand_in.config())
                body = reply.content
                self.send_response(200)  # as the SDKs answer: 200, the reply passed through
                self.send_header("content-type", "application/json")
                self.send_header("x-inngest-sdk", "stand-in:v1")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/api/inngest"

    def config(self) -> dict[str, Any]:
        trigger: dict[str, str] = {"event": "t/e"}
        if self.expression is not None:
            trigger["expression"] = self.expression
        step_url = f"{self.url}?fnId=standin-f&stepId=step"
        step = {"id": "step", "name": "step", "runtime": {"type": "http", "url": step_url}}
        function = {"id": "standin-f", "name": "f", "triggers": [trigger], "steps": {"step": step}}
        return {
            "appname": "standin",
            "url": self.url,
            "sdk": "py:v0.1.0",
            "framework": "fast_api",
            "v": "0.1",
            "deploy_type": "ping",
            "functions": [function],
        }

    def __enter__(self) -> "StandIn":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
