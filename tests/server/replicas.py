"""Replicas of the service for tests/server/test_replicas.py: ``rerankit serve`` processes on
loopback ports sharing one Redis, each with a cache directory of its own (as separate
machines have), an LLM pipeline whose provider is a fake one in the test's process, and
what their /metrics say."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
KEYS = ("key-a", "key-b")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric_in(text: str, name: str, **labels: str) -> float:
    """The sum of metric ``name`` over the series with ``labels`` in /metrics' ``text``."""
    total = 0.0
    for line in text.splitlines():
        named = line.startswith((name + "{", name + " "))
        if named and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def normal(body: bytes) -> bytes:
    """An answer's ``body`` with its per-request id and its cache mark made alike."""
    body = re.sub(rb'^\{"id":"[0-9a-f-]{36}"', b'{"id":"ID"', body)
    return re.sub(rb'"cache":"(hit|miss|shared|unavailable)"\}\}\}$', b'"cache":"X"}}}', body)


def settings_toml(redis_url: str, provider_url: str, *, embedding: bool = False) -> str:
    """Two pipelines (``llm``: an LLM judge at ``provider_url``; ``embedding``, the bundled
    MiniLM, when asked for), the answer cache on, two API keys, the shared cache at
    ``redis_url``."""
    judge = {
        "type": "llm_pointwise",
        "provider": "openai",
        "model": "m",
        "base_url": provider_url,
        "api_key_env": "RERANKIT_TEST_KEY",
    }
    lines = [
        "[server]",
        'default = "llm"',
        "answer_cache = true",
        f"api_keys = {json.dumps(list(KEYS))}",
        "max_concurrency = 8",
        "max_queue = 256",
        "timeout = 30",
        "[pipelines.llm]",
        f"scorer = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in judge.items())} }}",
    ]
    if embedding:
        lines += ["[pipelines.embedding]", 'scorer = { type = "embedding" }']
    lines += ["[cache]", f'url = "{redis_url}"']
    return "\n".join(lines) + "\n"


class Replica:
    """``rerankit serve --settings CONFIG --port PORT`` in a process of its own, with a cache
    directory of its own under ``folder``."""

    def __init__(self, config: Path, folder: Path, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home = folder / name
        home.mkdir(parents=True, exist_ok=True)
        self.log = home / "serve.log"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RERANKIT_")},
            "PYTHONPATH": str(SRC),
            "RERANKIT_CACHE_DIR": str(home / "cache"),
            "RERANKIT_TEST_KEY": "k",
            "HF_HUB_OFFLINE": "1",
        }
        command = [sys.executable, "-m", "rerankit", "serve", "--settings", str(config)]
        self.proc = subprocess.Popen(
            [*command, "--port", str(self.port)],
            env=env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, seconds: float = 300) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rerankit serve exited: {self.output()}")
            try:
                if httpx.get(self.url + "/ready", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"rerankit serve was not ready in {seconds:g} s: {self.output()}")

    def metric(self, name: str, **labels: str) -> float:
        """The sum of metric ``name`` over the series with ``labels``."""
        return metric_in(httpx.get(self.url + "/metrics", timeout=10).text, name, **labels)

    def output(self) -> str:
        return self.log.read_text()[-4000:]

    def warnings_of(self, words: str) -> int:
        """Lines of its log holding ``words``."""
        return sum(words in line for line in self.log.read_text().splitlines())

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # at once: SIGTERM waits out shutdown_delay
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def start_pair(config: Path, folder: Path, exports: Path | None = None) -> tuple[Replica, Replica]:
    """Replicas ``a`` and ``b`` of ``config``, started together, once both are ready; with
    ``exports`` (a cache's ``onnx/`` folder), each starts with a copy of it in its cache, as
    a deployment ships its model exports (``rerankit export``), so neither makes its own."""
    for name in ("a", "b"):
        if exports is not None and exports.is_dir():
            shutil.copytree(exports, folder / name / "cache" / "onnx")
    a, b = Replica(config, folder, "a"), Replica(config, folder, "b")
    try:
        a.wait_ready()
        b.wait_ready()
    except BaseException:
        a.stop()
        b.stop()
        raise
    return a, b


def bundled_exports(cache: Path) -> Path:
    """The ``onnx/`` folder of the cache directory ``cache`` holding the bundled model's
    export (made there now unless this process's tests made it already)."""
    from rerankit.cli.main import main

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RERANKIT_CACHE_DIR", str(cache))
        assert main(["export", "all-MiniLM-L6-v2"]) == 0
    return cache / "onnx"


def auth(key: str = KEYS[0]) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def nginx_binary() -> str | None:
    for candidate in ("/usr/sbin/nginx", "/usr/bin/nginx"):
        if Path(candidate).exists():
            return candidate
    return None


def nginx_conf(port: int, replicas: list[int], prefix: Path) -> str:
    """The load balancer of docs/scale-out.md in front of ``replicas`` (loopback ports),
    listening on ``port``, with its files under ``prefix``."""
    servers = "".join(
        f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;\n" for p in replicas
    )
    return f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream rerankit {{
{servers}        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://rerankit;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries 2;
            proxy_next_upstream_timeout 10s;
            proxy_read_timeout 60s;
            client_max_body_size 6m;
        }}
    }}
}}
"""


class Nginx:
    """Debian's nginx in the foreground with :func:`nginx_conf`, on a free loopback port."""

    def __init__(self, replicas: list[int], folder: Path) -> None:
        binary = nginx_binary()
        assert binary is not None
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = folder / "nginx.conf"
        config.write_text(nginx_conf(self.port, replicas, folder))
        self.proc = subprocess.Popen(
            [binary, "-p", str(folder), "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode()}")
            try:
                httpx.get(self.url + "/health", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("nginx did not answer within 30 s")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
