"""Install size: a fresh virtual environment with ``rerankit[onnx,server]`` (serving an
exported model, no torch) against one with ``rerankit[torch,server]`` (torch: the pinned CPU
build, as ``make install`` puts it on machines without an NVIDIA GPU).

Each environment is created in a temporary folder, rerankit installed from this checkout,
and the size of everything under the environment measured; the script also checks that the
ONNX environment has no torch, transformers or sentence-transformers. Needs a package index
(or a local mirror) that pip can reach.

Run: ``python -m benchmarks.speed.install_size [--torch-version 2.13.0]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT


def size_of(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            file = Path(dirpath) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def make_env(where: Path, extras: str, first: list[str]) -> tuple[Path, float]:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    if first:
        subprocess.run([*pip, "install", *first], check=True)
    subprocess.run([*pip, "install", f"{ROOT}[{extras}]"], check=True)
    return where, time.perf_counter() - start


def has(env: Path, module: str) -> bool:
    python = env / "bin" / "python"
    code = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({module!r}) else 1)"
    return subprocess.run([str(python), "-c", code]).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-version", default="2.13.0")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        onnx, onnx_s = make_env(Path(tmp) / "onnx", "onnx,server", [])
        torch_env, torch_s = make_env(
            Path(tmp) / "torch", "torch,server", [f"torch=={args.torch_version}"]
        )
        blocked = [m for m in ("torch", "transformers", "sentence_transformers") if has(onnx, m)]
        print("| environment | size | install time | torch |")
        print("|---|---:|---:|---|")
        for label, env, seconds in (
            ("rerankit[onnx,server]", onnx, onnx_s),
            ("rerankit[torch,server]", torch_env, torch_s),
        ):
            mb = size_of(env) / 1e6
            print(
                f"| {label} | {mb:,.0f} MB | {seconds:.0f} s | "
                f"{'yes' if has(env, 'torch') else 'no'} |"
            )
        ratio = size_of(torch_env) / size_of(onnx)
        print(f"\nthe torch environment is {ratio:.1f}x the size of the ONNX one")
        if blocked:
            sys.exit(f"the ONNX environment has {blocked}: it should not")


if __name__ == "__main__":
    main()
