"""`rerankit batch --engine ray --address` on a two-node Ray cluster on this machine (`ray
start --head` and a second `ray start --address` on loopback, one CPU each, each node with a
cache directory of its own): both nodes do work, a node removed mid-job loses no row (each
is written exactly once, or reported failed), and the shared Redis cache named in the
driver's environment reaches the workers of every node."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray.data", reason="the ray engine needs the 'ray' extra")
pytestmark = pytest.mark.ray

from redis_server import free_port  # noqa: E402
from rerankit.batch import read_rows  # noqa: E402
from rerankit.cache import JudgmentCache  # noqa: E402
from rerankit.llm.testing import FakeLLMServer, Reply  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"
KEY_ENV = "RERANKIT_CLUSTER_TEST_KEY"


class Node:
    """One `ray start --block` process (the node lives as long as it does)."""

    def __init__(self, args: list[str], env: dict[str, str], cache: Path) -> None:
        ray = Path(sys.executable).with_name("ray")
        command = [str(ray) if ray.exists() else "ray", "start", "--block", *args]
        command += ["--num-cpus", "1", "--node-ip-address", "127.0.0.1"]
        command += ["--dashboard-agent-listen-port", str(free_port())]
        command += ["--metrics-export-port", str(free_port()), "--disable-usage-stats"]
        self.cache = cache
        self.output: list[str] = []
        self.proc = subprocess.Popen(
            command,
            env={**env, "RERANKIT_CACHE_DIR": str(cache)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its raylet and workers: one group to stop
        )
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not any("Ray runtime started" in line for line in self.output):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("ray start failed:\n" + "".join(self.output[-40:]))
            time.sleep(0.1)

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self) -> None:
        """Take the node away at once, as a machine that fails: its `ray start`, raylet and
        workers (one process group) killed."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


class TwoNodes:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(SRC),  # the workers import this rerankit
            KEY_ENV: "test-key",
            "RAY_DEDUP_LOGS": "0",
            # no token authentication on loopback (Ray turns it on when ~/.ray/auth_token
            # exists, and a node started with `ray start --address` then cannot join)
            "RAY_AUTH_MODE": "disabled",
            # a node that stops answering is declared dead after about 3 s, not 15 (the
            # margin stays wide enough for a loaded machine's live nodes)
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "6",
        }
        self.env.pop("RERANKIT_CACHE_URL", None)
        self.head = Node(
            [
                "--head",
                "--port",
                str(self.port),
                "--temp-dir",
                str(root / "ray"),  # its own: no other ray.init() on this machine finds it
                "--include-dashboard",
                "false",
            ],
            self.env,
            root / "cache-head",
        )
        self.worker: Node | None = None
        self.workers_started = 0

    def ensure_worker(self) -> Node:
        if self.worker is None or self.worker.proc.poll() is not None:
            self.workers_started += 1
            self.worker = Node(
                ["--address", self.address],
                self.env,
                self.root / f"cache-node-{self.workers_started}",
            )
        return self.worker

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.head.stop()


@pytest.fixture(scope="module")
def two_nodes():
    root = Path(tempfile.mkdtemp(prefix="rk-ray-", dir="/tmp"))  # short: socket paths
    cluster = TwoNodes(root)
    try:
        cluster.ensure_worker()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def judge_spec(server: FakeLLMServer, path: Path) -> Path:
    scorer = {"type": "llm_pointwise", "provider": "openai", "model": "m"}
    scorer |= {"base_url": server.openai_url, "api_key_env": KEY_ENV}  # cache: the default
    path.write_text(json.dumps({"name": "judge", "stages": [{"scorer": scorer}]}))
    return path


def rows_file(path: Path, n: int) -> Path:
    rows = [
        {"query_id": f"q{i}", "query": f"capital number {i}", "candidates": ["Rome", "Paris"]}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def batch(cluster: TwoNodes, src: Path, out: Path, spec: Path, env=None) -> subprocess.Popen:
    command = [sys.executable, "-m", "rerankit", "batch", "-i", str(src), "-o", str(out)]
    command += ["-r", str(spec), "--engine", "ray", "--address", cluster.address]
    command += ["--workers", "2", "--batch-size", "2"]
    return subprocess.Popen(
        command,
        env={**cluster.env, "RERANKIT_CACHE_DIR": str(out.parent / "driver"), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def judged(request) -> Reply:
    return Reply(text=json.dumps({"score": 8 if "Paris" in request.prompt else 2}), delay=0.1)


def stored(cache_dir: Path) -> int:
    path = cache_dir / "judgments.sqlite"
    return len(JudgmentCache(path)) if path.exists() else 0


@pytest.mark.slow  # 18 s: make test-slow
def test_the_shared_cache_the_driver_names_reaches_every_nodes_workers(
    two_nodes, redis_url, tmp_path
):
    worker = two_nodes.ensure_worker()
    with FakeLLMServer(responder=judged) as server:
        spec = judge_spec(server, tmp_path / "judge.json")
        src = rows_file(tmp_path / "in.jsonl", 10)
        shared = {"RERANKIT_CACHE_URL": redis_url}  # the driver's only; not the nodes'
        proc = batch(two_nodes, src, tmp_path / "out.jsonl", spec, shared)
        try:
            output = proc.communicate(timeout=300)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, output[-3000:]
        got = list(read_rows(tmp_path / "out.jsonl"))
        assert [r["error"] for r in got] == [None] * 10
        assert all(r["results"][0]["index"] == 1 for r in got)  # Paris first
        assert len(server.requests) == 20
    assert len(JudgmentCache(url=redis_url)) == 20
    assert stored(two_nodes.head.cache) == stored(worker.cache) == 0  # none on a node


@pytest.mark.slow  # 23 s: make test-slow (make test runs Ray on one node, test_batch_ray.py)
def test_both_nodes_work_and_a_node_removed_mid_job_loses_no_row(two_nodes, tmp_path):
    worker = two_nodes.ensure_worker()
    n_rows = 40
    with FakeLLMServer(responder=judged) as server:
        spec = judge_spec(server, tmp_path / "judge.json")
        src = rows_file(tmp_path / "in.jsonl", n_rows)
        proc = batch(two_nodes, src, tmp_path / "out.jsonl", spec)
        try:
            deadline = time.monotonic() + 120
            while min(stored(two_nodes.head.cache), stored(worker.cache)) == 0:  # both work
                assert proc.poll() is None, proc.communicate()[0][-3000:]
                assert time.monotonic() < deadline, "one node never did any work"
                time.sleep(0.1)
            done_before = len(server.requests)
            worker.stop()  # the node goes away mid-job, its actor with it
            output = proc.communicate(timeout=300)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
    assert done_before < 2 * n_rows  # removed mid-job indeed
    assert proc.returncode == 0, output[-3000:]
    got = list(read_rows(tmp_path / "out.jsonl"))
    assert sorted(r["query_id"] for r in got) == sorted(f"q{i}" for i in range(n_rows))
    for row in got:  # each row once: reranked, or failed and saying why
        if row["error"] is None:
            assert sorted(x["index"] for x in row["results"]) == [0, 1]
        else:
            assert row["error"]
    assert sum(r["error"] is None for r in got) == n_rows  # here, every row recovered
    assert f"{n_rows} rows" in output


@pytest.mark.slow  # about 40 s: a head of its own, and Ray's 20 s of connection attempts
def test_a_cluster_with_token_authentication_refusing_us_is_one_line_saying_what_to_set(
    tmp_path,
):
    """Ray (2.60) never sends a token to an explicit --address unless RAY_AUTH_MODE=token:
    the refusal is one error line naming the variable and Ray's page, not only Ray's
    'Failed to connect to Ray cluster'."""
    root = Path(tempfile.mkdtemp(prefix="rk-tok-", dir="/tmp"))  # short: socket paths
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": str(root)}  # no ~/.ray token
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "a" * 32}
    args = ["--head", "--port", str(port), "--temp-dir", str(root / "ray")]
    head = Node([*args, "--include-dashboard", "false"], env, root / "cache")
    try:
        src = rows_file(tmp_path / "in.jsonl", 1)
        client = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        command = [sys.executable, "-m", "rerankit", "batch", "-i", str(src), "-r", "bm25"]
        command += ["-o", str(tmp_path / "out.jsonl"), "--engine", "ray"]
        done = subprocess.run(
            [*command, "--address", f"127.0.0.1:{port}"],
            env=client,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        head.stop()
        shutil.rmtree(root, ignore_errors=True)
    errors = [line for line in done.stderr.splitlines() if "rerankit batch: error" in line]
    assert done.returncode != 0 and len(errors) == 1, done.stderr[-3000:]
    assert "uses token authentication" in errors[0]
    assert "export RAY_AUTH_MODE=token" in errors[0] and "RAY_AUTH_TOKEN" in errors[0]
    assert "ray-security/token-auth.html" in errors[0]
