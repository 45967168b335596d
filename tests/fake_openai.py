"""A real HTTP server on localhost speaking the OpenAI chat-completions protocol, with
injectable faults (429 / 500 / 400 / delays), recording what it saw."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class FakeOpenAI:
    """`answer(text, png_bytes_or_None) -> str` decides the reply; `fault(request_no, text)`
    may return (status, delay_s) to inject a failure or a delay before answering."""

    def __init__(self, answer: Callable[[str, bytes | None], str],
                 fault: Callable[[int, str], tuple[int, float] | None] | None = None, delay: float = 0.0) -> None:
        self.answer, self.fault, self.delay = answer, fault, delay
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.images_seen = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    number = len(server.requests)
                    server.requests.append(body)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._reply(number, body)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _reply(self, number: int, body: dict) -> None:
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                text, png = "", None
                content = body["messages"][-1]["content"]
                if isinstance(content, str):  # plain-text messages (lm_eval's local-chat-completions)
                    content = [{"type": "text", "text": content}]
                for part in content:
                    if part["type"] == "text":
                        text = part["text"]
                    elif part["type"] == "image_url":
                        url = part["image_url"]["url"]
                        assert url.startswith("data:image/png;base64,")
                        png = base64.b64decode(url.split(",", 1)[1])
                        assert png.startswith(b"\x89PNG")
                        with server.lock:
                            server.images_seen += 1
                injected = server.fault(number, text) if server.fault else None
                time.sleep(server.delay if injected is None else injected[1])
                if injected is not None and injected[0] != 200:
                    headers = {"Retry-After": "0"} if injected[0] == 429 else {}
                    return self._send(injected[0], {"error": {"message": "injected"}}, headers)
                content = server.answer(text, png)
                self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}],
                                 "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(content) // 4,
                                           "total_tokens": (len(text) + len(content)) // 4}})

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def oracle(instances) -> Callable[[str, bytes | None], str]:
    """Answers every instance with its heuristic reference, recognising it by its prompt or image."""
    import mmnp

    by_text, by_image = {}, {}
    for inst in instances:
        task = mmnp.get_task(inst.task)
        answer = "Thinking...\n" + task.format_answer(inst.reference["heuristic"]["solution"])
        by_text[inst.prompt] = answer
        by_image[hashlib.sha256(task.render(inst)).hexdigest()] = answer
    return lambda text, png: by_image[hashlib.sha256(png).hexdigest()] if png else by_text[text]
