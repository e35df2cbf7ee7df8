"""``rerankit serve --workers 2``: each worker process imports the plugins named by
``--plugin`` and ``$RERANKIT_PLUGINS``, so both answer with the plugin's scorer."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="needs httpx (dev extra)")
pytest.importorskip("fastapi", reason="needs the 'server' extra")

REPO = Path(__file__).resolve().parents[2]

#: a scorer by the length of the text, and a reranker of it alone
PLUGIN = """
import numpy as np
import rerankit
from rerankit.registry import register


class Longest:
    name = "longest"

    async def score(self, query, docs, **context):
        return np.array([float(len(d.text)) for d in docs])


register("scorer", "{name}", Longest)
rerankit.register_reranker("{name}", lambda: rerankit.load({{"scorer": {{"type": "{name}"}}}}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two worker processes: make test-slow
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_each_worker_imports_the_plugins(tmp_path, how):
    (tmp_path / "acme_workers.py").write_text(PLUGIN.format(name="acme_long"))
    env = {
        k: v for k, v in os.environ.items() if k not in ("RERANKIT_API_KEYS", "RERANKIT_PLUGINS")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(tmp_path)])
    flags = ["--reranker", "acme_long", "--workers", "2", "--shutdown-delay", "0"]
    if how == "flag":
        flags += ["--plugin", "acme_workers"]
    else:
        env["RERANKIT_PLUGINS"] = "acme_workers"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    code = "import sys; from rerankit.cli import main; sys.exit(main(sys.argv[1:]))"
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", str(port), *flags],
        env=env,
        cwd=tmp_path,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    docs = ["a", "a longer one", "mid size"]
    try:
        pids: set[int] = set()
        deadline = time.time() + 90
        while len(pids) < 2 and time.time() < deadline:  # both workers answer
            assert proc.poll() is None, log.read_text()
            try:
                r = httpx.post(
                    f"{url}/v1/rerank",
                    json={"query": "q", "documents": docs},
                    headers={"Connection": "close"},
                    timeout=5,
                )
                if r.status_code == 200:
                    assert [x["index"] for x in r.json()["results"]] == [1, 2, 0]
                    info = httpx.get(f"{url}/info", headers={"Connection": "close"}, timeout=5)
                    pids.add(info.json()["process"]["pid"])
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert len(pids) == 2, f"workers answering: {pids}; {log.read_text()[-3000:]}"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert "Traceback" not in log.read_text()
