"""A scripted OpenAI-compatible server for LLM-client tests, on 127.0.0.1 only.

The test queues behaviours (``Reply``, ``HttpError``, ``Slow``, ``Garbage``, ``Empty``); each
``POST /v1/chat/completions`` takes the next one. A server started with ``choices=True`` answers a request
for OpenAI's ``n`` with that many choices (a ``Respond`` chooses each); by default it gives one, as many
OpenAI-compatible servers do. The server records every request it receives and
the most requests it had in flight at once, so tests can assert on retries, concurrency and the
``response_format`` the client sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

log = logging.getLogger(__name__)

MODEL_ID = "test-model"


@dataclass(frozen=True)
class Reply:
    """A normal chat completion with a usage block."""

    text: str
    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass(frozen=True)
class HttpError:
    """An error status with an OpenAI-style error body; 429 carries Retry-After."""

    status: int
    message: str = "scripted error"
    retry_after_s: float | None = None


@dataclass(frozen=True)
class Slow:
    """Wait, then behave as ``then``."""

    delay_s: float
    then: Behaviour = field(default_factory=lambda: Reply("slow reply"))


@dataclass(frozen=True)
class Garbage:
    """A 200 whose body is not JSON, or JSON without ``choices``."""

    kind: Literal["not_json", "no_choices"] = "not_json"


@dataclass(frozen=True)
class Empty:
    """A well-formed completion whose message content is empty."""


@dataclass(frozen=True)
class Respond:
    """Answer each request by its content: ``choose(prompt text)`` returns the behaviour to play.

    For runs with concurrent requests, where a queue's order would not say which request gets what."""

    choose: Callable[[str], Behaviour]


Behaviour = Reply | HttpError | Slow | Garbage | Empty | Respond


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at_s: float


class ScriptedLLMServer:
    """Serve scripted behaviours on a free port of 127.0.0.1. Use as a context manager."""

    def __init__(self, default: Behaviour | None = None, choices: bool = False) -> None:
        self.choices = choices
        # After the script runs out: a 500 that says so, so a missing behaviour fails loudly.
        self.default: Behaviour = default or HttpError(500, "script exhausted: no behaviour queued")
        self.requests: list[ReceivedRequest] = []
        self.max_in_flight = 0
        self._script: deque[Behaviour] = deque()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # wakes sleeping Slow handlers on shutdown
        self._connections: set[socket.socket] = (
            set()
        )  # kept alive by clients: closed on stop, as a killed server's
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="llm-server", daemon=True
        )

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def chat_requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> ScriptedLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            open_now, self._connections = list(self._connections), set()
        for conn in open_now:  # else a client's kept-alive connection would still be answered
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self) -> Behaviour:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like a real provider

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                with contextlib.suppress(OSError):
                    super().finish()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                log.debug("llm_server: " + format, *args)

            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802 - stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                with server._lock:
                    server.requests.append(ReceivedRequest(self.path, dict(self.headers), body, time.time()))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                with server._lock:
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    self._behave(server._next(), body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _behave(self, b: Behaviour, body: dict[str, Any]) -> None:
                n = int(body.get("n") or 1) if server.choices else 1
                if isinstance(b, Respond):
                    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                    chosen = [b.choose(text) for _ in range(n)]
                    if n > 1 and all(isinstance(c, Reply) for c in chosen):
                        texts = [c.text for c in chosen if isinstance(c, Reply)]
                        self._json(
                            200,
                            _completion(
                                body, texts, chosen[0].prompt_tokens, sum(c.completion_tokens for c in chosen)
                            ),
                        )  # type: ignore[union-attr]
                        return
                    b = chosen[0]
                if isinstance(b, Slow):
                    if server._stopping.wait(b.delay_s):
                        return
                    self._behave(b.then, body)
                elif isinstance(b, Reply):
                    self._json(200, _completion(body, [b.text] * n, b.prompt_tokens, n * b.completion_tokens))
                elif isinstance(b, Empty):
                    self._json(200, _completion(body, [""], 5, 0))
                elif isinstance(b, HttpError):
                    headers = {} if b.retry_after_s is None else {"Retry-After": f"{b.retry_after_s:g}"}
                    error = {"message": b.message, "type": "scripted", "code": str(b.status)}
                    self._json(b.status, {"error": error}, headers)
                elif isinstance(b, Garbage) and b.kind == "no_choices":
                    self._json(200, {"id": "chatcmpl-garbage", "object": "chat.completion", "oops": True})
                else:
                    self._send(200, b"<html>502 upstream hiccup, definitely not JSON", "text/html")

            def _json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def _send(
                self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _completion(
    request: dict[str, Any], texts: list[str], prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", MODEL_ID),
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            for i, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@contextmanager
def scripted_llm_server(
    *behaviours: Behaviour, default: Behaviour | None = None, choices: bool = False
) -> Iterator[ScriptedLLMServer]:
    """Start a server with ``behaviours`` queued; stop it (and wake sleeping handlers) on exit."""
    with ScriptedLLMServer(default=default, choices=choices) as server:
        server.script(*behaviours)
        yield server
