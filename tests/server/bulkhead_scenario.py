"""The slow failures of tests/server/test_bulkheads.py: an endpoint that accepts connections
and never answers (or refuses slowly), clients hammering a service, and what of rerankit
still runs in a process. Run as a script (:func:`main`), it is a service whose
cross-encoder's hub (``$HF_ENDPOINT``, set before anything read it, as a deployment sets
it) or LLM provider does not answer, in a process of its own (as deployed) for a test in
another to hammer."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

import rerankit

PACKAGE = os.path.dirname(os.path.abspath(rerankit.__file__))
ASK = {"query": "solar power", "documents": ["solar panels", "wind at sea"]}
CLIENTS = 32  # concurrent requests to the broken pipelines


class SilentEndpoint:
    """A TCP server on 127.0.0.1 that reads what it is sent and never answers
    (``mode="stall"``), or closes each connection ``delay`` seconds after accepting it
    without a word (``mode="drop"``: a slow refusal). ``answer(body)`` may answer an HTTP
    request after all (JSON bytes for a 200, or None for silence). ``unanswered`` counts
    the connections that sent a request, got no answer, and are still open."""

    def __init__(self, mode: str = "stall", delay: float = 0.5, answer=None) -> None:
        self.mode, self.delay, self.answer = mode, delay, answer
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(512)
        self._listener.setblocking(False)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._open: dict[socket.socket, list] = {}  # connection -> [received, accepted at]
        self._lock = threading.Lock()
        self.accepted = 0
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SilentEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        self._thread.join(5)
        for conn in list(self._open):
            conn.close()
        self._listener.close()

    @property
    def unanswered(self) -> int:
        with self._lock:
            return sum(1 for received, _ in self._open.values() if received)

    def _serve(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(0.02):
                if key.fileobj is self._listener:
                    try:
                        conn, _ = self._listener.accept()
                    except BlockingIOError:
                        continue
                    self._selector.register(conn, selectors.EVENT_READ)
                    with self._lock:
                        self._open[conn] = [b"", time.monotonic()]
                        self.accepted += 1
                    continue
                conn = key.fileobj
                try:
                    data = conn.recv(65536)
                except OSError:
                    data = b""
                if not data:  # the client closed it
                    self._close(conn)
                    continue
                with self._lock:
                    self._open[conn][0] += data
                    received = self._open[conn][0]
                reply = self._reply(received)
                if reply is not None:
                    conn.sendall(reply)
                    with self._lock:
                        self._open[conn][0] = b""
            if self.mode == "drop":
                now = time.monotonic()
                for conn, (_, since) in list(self._open.items()):
                    if now - since >= self.delay:
                        self._close(conn)

    def _reply(self, received: bytes) -> bytes | None:
        if self.answer is None or b"\r\n\r\n" not in received:
            return None
        head, body = received.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if len(body) < length:
            return None
        payload = self.answer(body[:length])
        if payload is None:
            return None
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        )

    def _close(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.pop(conn, None)
        self._selector.unregister(conn)
        conn.close()


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def hammer(url: str, broken: list[str], seconds: float, after: float = 1.0) -> dict:
    """``CLIENTS`` clients send requests to the ``broken`` pipelines (in turn) for
    ``seconds``, each as soon as its last was answered, while one more asks ``bm25`` every
    50 ms, then for ``after`` seconds more. Returns each answer (status, Retry-After, the
    seconds it took and the start of its body) by phase: ``broken``, and ``bm25``'s
    ``during`` and ``after``."""
    limits = httpx.Limits(max_connections=CLIENTS + 8, max_keepalive_connections=CLIENTS + 8)
    out: dict[str, list] = {"broken": [], "during": [], "after": []}
    hammering = threading.Event()
    hammering.set()
    with httpx.Client(base_url=url, timeout=60, limits=limits) as client:

        def ask(model: str) -> tuple[int, str | None, float, str]:
            start = time.monotonic()
            r = client.post("/v2/rerank", json={**ASK, "model": model})
            took = time.monotonic() - start
            return r.status_code, r.headers.get("retry-after"), took, r.text[:300]

        def worker(i: int) -> None:
            end = time.monotonic() + seconds
            n = i
            while time.monotonic() < end:
                out["broken"].append(ask(broken[n % len(broken)]))
                n += 1

        def probe() -> None:
            end = None
            while end is None or time.monotonic() < end:
                key = "during" if hammering.is_set() else "after"
                out[key].append(ask("bm25"))
                if end is None and not hammering.is_set():
                    end = time.monotonic() + after
                time.sleep(0.05)

        prober = threading.Thread(target=probe)
        prober.start()
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(worker, range(CLIENTS)))
        hammering.clear()
        prober.join()
    return out


def working_threads() -> dict[str, str]:
    """Threads in rerankit's code now (name -> innermost rerankit function), but for the
    service's event loop (which runs it only between the awaits of a request)."""
    busy = {}
    for ident, frame in sys._current_frames().items():
        thread = next((t for t in threading.enumerate() if t.ident == ident), None)
        if thread is None or thread is threading.current_thread():
            continue
        where = None
        stack = frame
        while stack is not None:
            if stack.f_code.co_filename.startswith(PACKAGE) and where is None:
                where = f"{stack.f_code.co_filename[len(PACKAGE) :]}:{stack.f_code.co_name}"
            if stack.f_code.co_name == "run_forever":  # an event loop's thread
                where = None
                break
            stack = stack.f_back
        if where is not None:
            busy[thread.name] = where
    return busy


def working_tasks(server) -> list[str]:
    """The server loop's tasks that run rerankit code now, by name (and coroutine), but
    for uvicorn's lifespan task (which holds the app's lifespan until shutdown)."""
    loop = server.app.state.service.loop

    async def tasks() -> list[str]:
        found = []
        for task in asyncio.all_tasks():
            if task is asyncio.current_task() or "Lifespan" in task.get_coro().__qualname__:
                continue
            coro, in_package = task.get_coro(), False
            while coro is not None:
                code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
                if code is not None and code.co_filename.startswith(PACKAGE):
                    in_package = True
                coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
            if in_package:
                found.append(f"{task.get_name()} ({task.get_coro().__qualname__})")
        return found

    return asyncio.run_coroutine_threadsafe(tasks(), loop).result(10)


def _warm_up_only(body: bytes) -> bytes | None:
    """An OpenAI-compatible provider that answers the service's warm-up batch only."""
    if b"warm up" not in body:
        return None  # accepted, read, and never answered
    answer = {
        "id": "fake",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": '{"id": "0", "score": 7}'},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return json.dumps(answer).encode()


def _llm(provider: SilentEndpoint) -> dict:
    options = {"provider": "openai", "base_url": provider.url + "/v1", "model": "m"}
    return {"scorer": {"type": "llm_pointwise", **options, "cache": False}}


def main(scenario: str) -> None:
    """Serve ``bm25`` and broken pipelines, and print ``{"url", "bm25_ready", "under_way",
    "tasks", "attempts", "provider_calls"}`` once bm25 answers and the broken ones are as the
    scenario wants them (``tasks`` and ``attempts``: what runs then; ``provider_calls``: the
    connections the provider accepted so far); on a line on stdin, print what runs now
    (``threads``, ``tasks``, ``info``, ``unanswered``, ``provider_calls``) and exit. Scenarios:

    - ``hub-stall``, ``hub-drop``: ``ce``, a cross-encoder from a hub that never answers
      (or drops each connection after 0.5 s), and ``llm``, whose provider never answers
      (its warm-up batch does not come back), ``timeout = 10``; under way once the hub
      was reached and the warm-up batch's two calls wait at the provider;
    - ``provider-stall``: ``llm``, whose provider answers the warm-up batch only,
      ``timeout = 1``; under way once it is ready.
    """
    from conftest import LiveServer  # this folder's, on the path when run as a script

    hub = SilentEndpoint("drop" if scenario == "hub-drop" else "stall").__enter__()
    answer = _warm_up_only if scenario == "provider-stall" else None
    provider = SilentEndpoint("stall", answer=answer).__enter__()
    assert "huggingface_hub" not in sys.modules  # it reads HF_ENDPOINT when imported
    os.environ["HF_ENDPOINT"] = hub.url
    for offline in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(offline, None)
    from rerankit.server import ServerSettings

    if scenario == "provider-stall":
        pipelines, timeout = {"llm": _llm(provider), "bm25": "bm25"}, 1.0
        under_way = lambda: httpx.get(f"{server.url}/ready").status_code == 200  # noqa: E731
    else:  # the broken ones first: the healthy one must not wait for them
        model = "no-such-org/no-such-reranker"
        ce = {"scorer": {"type": "cross_encoder", "model": model}}
        pipelines, timeout = {"ce": ce, "llm": _llm(provider), "bm25": "bm25"}, 10.0
        under_way = lambda: hub.accepted > 0 and provider.unanswered >= 2  # noqa: E731
    settings = ServerSettings(pipelines=pipelines, default="bm25", timeout=timeout)
    server = LiveServer(settings, warm=False)
    ask = {**ASK, "model": "bm25"}
    info = lambda: httpx.get(f"{server.url}/info").json()["pipelines"]  # noqa: E731
    start = {
        "url": server.url,
        "bm25_ready": wait_for(
            lambda: httpx.post(server.url + "/v2/rerank", json=ask).is_success, 5
        ),
        "under_way": wait_for(under_way, 120.0),
        "tasks": working_tasks(server),
        "attempts": {name: entry.get("attempts", 0) for name, entry in info().items()},
        "provider_calls": provider.accepted,
    }
    print(json.dumps(start), flush=True)
    sys.stdin.readline()
    time.sleep(0.2)  # the answers' own clean-up (a slot released, a task finishing)
    wait_for(lambda: provider.unanswered == 0, 1.0)  # (a stalled request's calls closing)
    report = {
        "threads": working_threads(),
        "tasks": working_tasks(server),
        "info": info(),
        "unanswered": provider.unanswered,
        "provider_calls": provider.accepted,
    }
    print(json.dumps(report), flush=True)
    os._exit(0)  # a load attempt may hang on the hub: its thread is not waited for


if __name__ == "__main__":
    main(sys.argv[1])
