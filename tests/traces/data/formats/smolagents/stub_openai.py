"""A local stub of the OpenAI chat completions API for the fixture generators: `POST .../chat/completions`
answers each request with the next scripted assistant message (content and/or `tool_calls`), in
OpenAI's response shape; every request body is kept in `requests` for the generator to check."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubOpenAI:
    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                stub.requests.append(body)
                n = len(stub.requests)
                message = stub.script.pop(0)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = {
                    "id": f"chatcmpl-stub-{n}",
                    "object": "chat.completion",
                    "created": 1700000000 + n,
                    "model": body.get("model", "stub"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
                    ],
                    "usage": {"prompt_tokens": 10 * n, "completion_tokens": 5, "total_tokens": 10 * n + 5},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
