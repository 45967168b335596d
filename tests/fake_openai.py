"""A real HTTP server on localhost speaking the OpenAI chat-completions protocol, with
injectable faults (429 / 500 / 401 / delays), malformed and hostile reply shapes, and an
image-dropping mode, recording what it saw."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

IMAGE_TOKENS = 85  # what a vision model's usage.prompt_tokens grows by per picture (OpenAI's low detail)

# Replies no well-behaved server sends; each must become a failed sample with its reason.
SHAPES = {
    "usage_list": lambda content: _ok(content, usage=[1, 2]),
    "usage_string": lambda content: _ok(content, usage="12 tokens"),
    "string_tokens": lambda content: _ok(content, usage={"prompt_tokens": "12", "completion_tokens": "3"}),
    "nan_tokens": lambda content: _ok(content, usage={"prompt_tokens": 12, "completion_tokens": float("nan")}),
    "content_number": lambda content: _ok(42),
    "content_list": lambda content: _ok([{"type": "text", "text": content}]),
    "no_choices": lambda content: json.dumps({"choices": []}).encode(),
    "not_json": lambda content: b"<html>502 Bad Gateway</html>",
    "non_utf8": lambda content: _ok("caf\u00e9 " + content).replace("caf\\u00e9".encode(), b"caf\xe9"),
    "lone_surrogate": lambda content: _ok("\ud800" + content),
    "deep_json": lambda content: b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
}


def _ok(content, usage=None) -> bytes:
    usage = {"prompt_tokens": 10, "completion_tokens": 5} if usage is None else usage
    return json.dumps({"id": "x", "object": "chat.completion",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": usage}).encode()  # NaN as the bare token NaN, as Python's json writes it


class FakeOpenAI:
    """`answer(text, png_bytes_or_None) -> str` decides the reply; `fault(request_no, text)`
    may return (status, delay_s) to inject a failure or a delay before answering; `shape(request_no,
    text)` may name a reply of `SHAPES` (or "echo_key": an error echoing the Authorization header,
    or "huge:N": a content of N characters) to send instead. `drop_images`: the server ignores
    pictures, as a text-only model behind an OpenAI-compatible server does."""

    def __init__(self, answer: Callable[[str, bytes | None], str],
                 fault: Callable[[int, str], tuple[int, float] | None] | None = None, delay: float = 0.0,
                 shape: Callable[[int, str], str | None] | None = None, drop_images: bool = False) -> None:
        self.answer, self.fault, self.delay, self.shape = answer, fault, delay, shape
        self.drop_images = drop_images
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
                    return self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
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
                if server.drop_images:
                    png = None
                injected = server.fault(number, text) if server.fault else None
                time.sleep(server.delay if injected is None else injected[1])
                if injected is not None and injected[0] != 200:
                    headers = {"Retry-After": "0"} if injected[0] == 429 else {}
                    return self._send(injected[0], json.dumps({"error": {"message": "injected"}}).encode(), headers)
                shape = server.shape(number, text) if server.shape else None
                if shape == "echo_key":
                    seen = self.headers.get("Authorization", "")
                    return self._send(400, json.dumps({"error": {"message": f"bad request with {seen}"}}).encode())
                content = server.answer(text, png)
                if shape and shape.startswith("huge:"):
                    return self._send(200, _ok(content + "x" * int(shape[5:])))
                if shape:
                    return self._send(200, SHAPES[shape](content))
                prompt_tokens = len(text) // 4 + (IMAGE_TOKENS if png is not None else 0)
                self._send(200, _ok(content, {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4,
                                              "total_tokens": prompt_tokens + len(content) // 4}))

            def _send(self, status: int, raw: bytes, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (a capped body)
                    pass

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
    """Answers every instance with its heuristic reference, recognising it by its prompt or image
    (a request it does not know, such as the image probe's text-only half, gets a refusal)."""
    import mmnp

    by_text, by_image = {}, {}
    for inst in instances:
        task = mmnp.get_task(inst.task)
        answer = "Thinking...\n" + task.format_answer(inst.reference["heuristic"]["solution"])
        by_text[inst.prompt] = answer
        by_image[hashlib.sha256(task.render(inst)).hexdigest()] = answer
    return lambda text, png: (by_image[hashlib.sha256(png).hexdigest()] if png
                              else by_text.get(text, "I see no picture."))
