"""A small fake LLM HTTP server on loopback that records every request it gets.

Paths: `/anthropic/...` and `/openai/...` answer 200 with a model-like reply that echoes the
body; `/down/...` always answers 503; `/redirect/...` answers 302 to `/openai/...`.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with fake._lock:
                    fake.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": json.loads(raw or b"null"),
                        }
                    )
                kind = self.path.strip("/").split("/")[0]
                if kind == "down":
                    return self._answer(503, {"error": {"message": "overloaded"}})
                if kind == "redirect":
                    self.send_response(302)
                    self.send_header("location", "/openai/v1/chat/completions")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return None
                reply = {
                    "id": "msg_1",
                    "model": "fake",
                    "content": [{"type": "text", "text": "hi"}],
                }
                return self._answer(200, reply | {"echo": json.loads(raw or b"null")})

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def to(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"].startswith(f"/{kind}/")]
