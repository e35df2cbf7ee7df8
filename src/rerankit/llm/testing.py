"""A local HTTP server that speaks Gemini's ``generateContent`` and OpenAI's
``chat/completions`` protocols: for testing your LLM rerankers offline through the real
SDKs, and as a stand-in judge for trying ``rerankit label`` with no API key
(``examples/learn/local_judge.py``).

Each request gets the next scripted :class:`Reply`, or, when the script is used up, whatever
``responder(request)`` returns (a :class:`RecordedRequest`: the prompt, the system text, the
JSON schema asked for, the model). Replies can carry an HTTP error status, headers
(Retry-After), a delay (to simulate latency or a timeout) and any answer text, which the
server wraps in the provider's own answer format (with token counts)::

    with FakeLLMServer(responder=lambda req: Reply(text='{"id": "0", "score": 7}')) as server:
        client = OpenAIClient(base_url=server.openai_url, model="m")
        ...
    server.requests  # what each call sent: provider, prompt, system, schema

It listens on ``127.0.0.1`` at a free port unless given ``host`` and ``port``. Routes: a
``POST`` to a path ending in ``/chat/completions`` (OpenAI's protocol: give the client
``openai_url``, which is ``url + "/v1"``) or holding ``:generateContent`` (Gemini's
``models/MODEL:generateContent``: give the client ``url``); anything else answers 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply"]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass
class Reply:
    """One scripted answer: ``text`` (what the model says: the server puts it in the
    provider's answer) with HTTP 200, or an error ``status`` whose message is ``text``;
    ``headers`` to send (``{"Retry-After": "2"}``), ``delay`` seconds to wait first, and the
    token counts to report (default: about a token per 4 characters). With a
    ``content_type`` the body is ``text`` itself, sent as that type with ``status``: what a
    proxy's error page or a web app at the wrong address answers
    (``Reply(text="<html>...</html>", content_type="text/html")``)."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    content_type: str | None = None


@dataclass
class RecordedRequest:
    """One call as the server received it: the ``provider`` whose protocol it spoke
    (``"gemini"`` or ``"openai"``), the URL ``path``, the JSON ``body``, and read from it the
    user ``prompt``, the ``system`` text, the JSON ``schema`` the answer must follow (None
    without one) and the ``model`` named."""

    provider: str  # "gemini" or "openai"
    path: str
    body: dict[str, Any]
    prompt: str
    system: str | None
    schema: dict[str, Any] | None
    model: str


def _gemini_fields(body: dict[str, Any], path: str) -> tuple[str, str | None, Any, str]:
    prompt = "".join(
        p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", [])
    )
    sys_parts = (body.get("systemInstruction") or {}).get("parts", [])
    system = "".join(p.get("text", "") for p in sys_parts) or None
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    model = path.split("/models/")[-1].split(":")[0]
    return prompt, system, schema, model


def _openai_fields(body: dict[str, Any]) -> tuple[str, str | None, Any, str]:
    prompt, system = "", None
    for m in body.get("messages", []):
        content = m.get("content")
        text = (
            content
            if isinstance(content, str)
            else "".join(part.get("text", "") for part in content or [])
        )
        if m.get("role") == "system":
            system = text
        else:
            prompt += text
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    return prompt, system, schema, body.get("model", "")


class FakeLLMServer:
    """Serves scripted replies (see the module) on ``host`` (``127.0.0.1``) at ``port``
    (0, the default: a free one; :attr:`url` says which). ``script``: the replies to give
    first, in order (:meth:`add` appends more); ``responder``: called with each
    :class:`RecordedRequest` once the script is used up (without one, such a request
    answers 500); ``latency``: seconds added to every reply. Start it with ``with`` or
    :meth:`start` (then :meth:`stop`); :attr:`requests` lists every call received."""

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        responder: Callable[[RecordedRequest], Reply] | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._script: deque[Reply] = deque(script)
        self.responder = responder
        self.latency = latency
        self.host, self.port = host, port
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------
    def add(self, *replies: Reply) -> None:
        """Append ``replies`` to the script."""
        with self._lock:
            self._script.extend(replies)

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        if self.responder is None:
            return Reply(status=500, text="FakeLLMServer: script exhausted and no responder")
        return self.responder(request)

    # -- serving -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the running server (Gemini's ``base_url``)."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI ``base_url``: :attr:`url` + ``/v1``."""
        return self.url + "/v1"

    def start(self) -> FakeLLMServer:
        """Listen and serve on a background thread; returns the server."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                if ":generateContent" in self.path:
                    provider = "gemini"
                    prompt, system, schema, model = _gemini_fields(body, self.path)
                elif self.path.rstrip("/").endswith("/chat/completions"):
                    provider = "openai"
                    prompt, system, schema, model = _openai_fields(body)
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                request = RecordedRequest(provider, self.path, body, prompt, system, schema, model)
                reply = fake._next(request)
                if reply.delay or fake.latency:
                    time.sleep(reply.delay + fake.latency)
                if reply.content_type is not None:
                    self._send(reply.status, reply.text, reply.headers, reply.content_type)
                elif reply.status != 200:
                    self._send(reply.status, _error_body(provider, reply), reply.headers)
                else:
                    self._send(200, _ok_body(provider, request, reply), reply.headers)

            def _send(
                self,
                status: int,
                payload: dict | str,
                headers: dict | None = None,
                content_type: str = "application/json",
            ) -> None:
                raw = payload if isinstance(payload, str) else json.dumps(payload)
                data = raw.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = _Server((self.host, self.port), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # many concurrent clients connect at once
    daemon_threads = True


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _ok_body(provider: str, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    n_in = reply.input_tokens if reply.input_tokens is not None else _tokens(request.prompt)
    n_out = reply.output_tokens if reply.output_tokens is not None else _tokens(reply.text)
    if provider == "gemini":
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": reply.text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": n_in,
                "candidatesTokenCount": n_out,
                "totalTokenCount": n_in + n_out,
            },
            "modelVersion": request.model,
        }
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
    }


def _error_body(provider: str, reply: Reply) -> dict[str, Any]:
    message = reply.text or f"scripted error {reply.status}"
    if provider == "gemini":
        return {
            "error": {
                "code": reply.status,
                "message": message,
                "status": _STATUS_NAMES.get(reply.status, "UNKNOWN"),
            }
        }
    return {"error": {"message": message, "type": "fake_error", "code": reply.status}}
