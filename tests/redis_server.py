"""A real Redis (or Valkey) server for the tests that need one: a ``redis-server`` process on a
free loopback port, in a temporary folder, without persistence (the fixtures in conftest.py
start and stop it)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary() -> str | None:
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name) or next(
            (str(p) for p in (Path("/usr/bin") / name, Path("/usr/sbin") / name) if p.exists()),
            None,
        )
        if found:
            return found
    return None


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1:``port`` (same port across restarts)."""

    def __init__(self, folder: Path, *extra: str, password: str | None = None) -> None:
        self.binary = redis_binary()
        self.folder, self.extra, self.password = folder, extra, password
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        assert self.binary is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self.folder), *self.extra]
        if self.password is not None:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.proc.stderr.read().decode()}")
            try:
                if self.client().ping():
                    return self
            except Exception:  # not up yet
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer within 30 s")

    def client(self):
        import redis

        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=5, password=self.password
        )

    def stop(self) -> None:
        """Terminate the server (as a crash or a restart would take it away)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None
