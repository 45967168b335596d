"""A real HTTP server on localhost speaking the OpenAI chat-completions protocol, with
injectable faults (429 / 500 / 401 / delays), malformed and hostile reply shapes, servers that
drop pictures (all of them, or one replica of a pool) or count their base64 text as tokens,
recording what it saw."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable



def image_tokens(png: bytes) -> int:
    """What a vision model's usage.prompt_tokens grows by per picture: OpenAI's high-detail rule
    (85 plus 170 per 512-px tile), a function of the pixels only, never of the encoded bytes."""
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def replica_pool(replicas: int, dropping: int) -> Callable[[int], bool]:
    """`drop_images` for a pool of `replicas` servers whose number `dropping` ignores pictures; a
    request goes to the replica its number hashes to (as a balancer spreads connections: no
    period that a client's request pattern could fall in step with)."""
    return lambda number: int(hashlib.sha256(str(number).encode()).hexdigest(), 16) % replicas == dropping


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
    # well-formed replies that hold no answer: the engine aborted (vLLM, SGLang), an error, a reason nobody
    # defined, a tool call (mmnp offers no tools)
    "abort": lambda content: _ok("", finish="abort"),
    "finish_error": lambda content: _ok("", finish="error"),
    "unknown_finish": lambda content: _ok(content, finish="paused"),
    "finish_number": lambda content: _ok(content, finish=3),
    "tool_call": lambda content: _ok(None, finish="tool_calls", tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "solve", "arguments": "{}"}}]),
}
# Replies that are the model's own outcome: scored as given, with their finish_reason (or refusal) recorded.
OUTCOMES = {
    "length": lambda content: _ok(content[: len(content) // 2], finish="length"),  # stopped at max_tokens
    "content_filter": lambda content: _ok("", finish="content_filter"),
    "refusal": lambda content: _ok(None, refusal="I can't help with that."),
}


def _ok(content, usage=None, finish="stop", **message) -> bytes:
    usage = {"prompt_tokens": 10, "completion_tokens": 5} if usage is None else usage
    return json.dumps({"id": "x", "object": "chat.completion",
                       "choices": [{"index": 0, "finish_reason": finish,
                                    "message": {"role": "assistant", "content": content, **message}}],
                       "usage": usage}).encode()  # NaN as the bare token NaN, as Python's json writes it


class FakeOpenAI:
    """`answer(text, png_bytes_or_None) -> str` decides the reply; `fault(request_no, text)`
    may return (status, delay_s) to inject a failure or a delay before answering; `shape(request_no,
    text)` may name a reply of `SHAPES` or `OUTCOMES` (or "echo_key": an error echoing the Authorization header,
    or "huge:N": a content of N characters, "echo_key_at:N": an error whose message has the Authorization
    header at character N, "echo_key_upper" / "echo_key_escaped": the key upper-cased / as \\u escapes,
    "content_key_at:N": a reply whose content has the key at character N, "error_message:TEXT": an HTTP 400
    with that message) to send instead.
    `drop_images`: the server ignores pictures, as a text-only model behind an OpenAI-compatible
    server does (True, or a function of the request number: one replica of a pool, `replica_pool`);
    `count_base64`: a text-only server that counts the data URL's text as prompt tokens; `context`:
    prompts counting more tokens are refused (HTTP 400), as a model's context length does.
    usage.prompt_tokens counts every message's text (4 characters a token) plus `image_tokens`
    per picture the model sees."""

    def __init__(self, answer: Callable[[str, bytes | None], str],
                 fault: Callable[[int, str], tuple[int, float] | None] | None = None, delay: float = 0.0,
                 shape: Callable[[int, str], str | None] | None = None,
                 drop_images: bool | Callable[[int], bool] = False, count_base64: bool = False,
                 context: int | None = None, port: int = 0) -> None:
        self.answer, self.fault, self.delay, self.shape = answer, fault, delay, shape
        self.drop_images, self.count_base64, self.context = drop_images, count_base64, context
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.dropped: list[int] = []  # the numbers of the requests whose picture the server ignored
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
                text, png, counted = "", None, 0
                for message in body["messages"]:
                    content = message["content"]
                    if isinstance(content, str):  # plain-text messages (lm_eval's local-chat-completions)
                        content = [{"type": "text", "text": content}]
                    for part in content:
                        if part["type"] == "text":
                            text = part["text"]
                            counted += len(text)
                        elif part["type"] == "image_url":
                            url = part["image_url"]["url"]
                            assert url.startswith("data:image/png;base64,")
                            png = base64.b64decode(url.split(",", 1)[1])
                            assert png.startswith(b"\x89PNG")
                            with server.lock:
                                server.images_seen += 1
                            if server.count_base64:
                                counted += len(url)
                drop = server.drop_images(number) if callable(server.drop_images) else server.drop_images
                if png is not None and (drop or server.count_base64):
                    with server.lock:
                        server.dropped.append(number)
                    png = None
                injected = server.fault(number, text) if server.fault else None
                time.sleep(server.delay if injected is None else injected[1])
                if injected is not None and injected[0] != 200:
                    headers = {"Retry-After": "0"} if injected[0] == 429 else {}
                    return self._send(injected[0], json.dumps({"error": {"message": "injected"}}).encode(), headers)
                shape = server.shape(number, text) if server.shape else None
                seen = self.headers.get("Authorization", "")
                if shape == "echo_key":
                    return self._send(400, json.dumps({"error": {"message": f"bad request with {seen}"}}).encode())
                if shape and shape.startswith("echo_key_at:"):
                    at = int(shape.split(":")[1])
                    message = "x" * at + seen + " was refused"
                    return self._send(400, json.dumps({"error": {"message": message}}).encode())
                if shape and shape.startswith("error_message:"):  # an error whose message is given as is
                    return self._send(400, json.dumps({"error": {"message": shape.split(":", 1)[1]}}).encode())
                if shape == "echo_key_upper":
                    return self._send(400, json.dumps({"error": {"message": f"bad key {seen.upper()}"}}).encode())
                if shape == "echo_key_escaped":
                    escaped = "".join(f"\\u{ord(ch):04x}" for ch in seen)
                    return self._send(400, b'{"error": {"message": "bad key ' + escaped.encode() + b'"}}')
                content = server.answer(text, png)
                if shape and shape.startswith("content_key_at:"):
                    at = int(shape.split(":")[1])
                    return self._send(200, _ok("y" * at + seen.removeprefix("Bearer ") + " " + content))
                if shape and shape.startswith("huge:"):
                    return self._send(200, _ok(content + "x" * int(shape[5:])))
                if shape:
                    return self._send(200, {**SHAPES, **OUTCOMES}[shape](content))
                prompt_tokens = counted // 4 + (image_tokens(png) if png is not None else 0)
                if server.context is not None and prompt_tokens > server.context:
                    message = f"maximum context length is {server.context} tokens, the prompt has {prompt_tokens}"
                    return self._send(400, json.dumps({"error": {"message": message}}).encode())
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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # port: the same endpoint restarted
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def oracle(instances) -> Callable[[str, bytes | None], str]:
    """Answers every instance with its heuristic reference, recognising it by its prompt or image
    (a request it does not know, such as the delivery check's text-only requests and re-encoded
    picture, gets a refusal)."""
    import mmnp

    by_text, by_image = {}, {}
    for inst in instances:
        task = mmnp.get_task(inst.task)
        answer = "Thinking...\n" + task.format_answer(inst.reference["heuristic"]["solution"])
        by_text[inst.prompt] = answer
        by_image[hashlib.sha256(task.render(inst)).hexdigest()] = answer
    return lambda text, png: (by_image.get(hashlib.sha256(png).hexdigest(), "A picture I do not know.") if png
                              else by_text.get(text, "I see no picture."))
