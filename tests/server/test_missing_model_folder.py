"""A model folder that is not there (a volume not mounted, a wrong path in the settings
file) is said as "no such folder" by ``rerankit check`` and ``rerankit serve``, on the
torch-free install too: there it blamed a missing 'torch' (check, exit 1, where the
service page says a missing folder is a warning) or 'sentence_transformers' (serve)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="needs httpx (dev extra)")

SRC = str(Path(__file__).resolve().parents[2] / "src")  # this checkout, that install's packages


def _torch_free() -> str:
    python = os.environ.get("RERANKIT_TORCH_FREE_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("needs the torch-free install named in RERANKIT_TORCH_FREE_PYTHON")
    return python


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
    return env | {
        "HOME": str(tmp_path),
        "RERANKIT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": SRC,
    }


def test_check_on_the_torch_free_install_warns_of_the_folder_as_the_full_one_does(tmp_path):
    python = _torch_free()
    settings = tmp_path / "service.toml"
    settings.write_text(
        '[server]\ndefault = "hybrid"\nmodel = "/models/minilm-onnx"\n'
        '[pipelines.hybrid]\nreranker = "hybrid"\n'
    )
    done = subprocess.run(
        [python, "-m", "rerankit", "check", str(settings)],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, as service.md says
    said = (
        f"{settings}: warning: pipeline 'hybrid': model '/models/minilm-onnx': no such folder here"
    )
    assert said in done.stdout, done.stdout
    assert "optional package" not in done.stdout, done.stdout  # a mount to fix, not a package


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_on_the_torch_free_install_says_the_folder_is_not_there(tmp_path):
    """The settings file names the folder (``serve --model /nope`` is refused at once, as a
    usage error): /ready (no keys, so the cause is shown) and the log say what is wrong."""
    python = _torch_free()
    port = _free_port()
    log = tmp_path / "serve.log"
    settings = tmp_path / "service.toml"
    settings.write_text(
        '[server]\nmodel = "/nope/minilm"\n[pipelines.hybrid]\nreranker = "hybrid"\n'
    )
    code = "import sys; from rerankit.cli import main; sys.exit(main(sys.argv[1:]))"
    flags = ["--settings", str(settings), "--shutdown-delay", "0"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [python, "-c", code, "serve", "--port", str(port), *flags],
            env=_env(tmp_path),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        body: dict = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and body.get("status") != "failed":
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                body = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).json()
            time.sleep(0.2)
        assert body.get("status") == "failed", log.read_text()
        error = body["pipelines"]["hybrid"]["error"]
        assert "/nope/minilm: no such folder" in error, error
        assert "sentence_transformers" not in error and "torch" not in error, error
    finally:
        proc.terminate()
        proc.wait(30)
    text = log.read_text()
    assert "/nope/minilm: no such folder" in text, text
    assert "sentence_transformers" not in text, text
