"""Runs other reranking libraries for benchmarks/speed/cross_encoder.py, in their own virtual
environment (their pins differ from rerankit's): reads one JSON request a line on stdin,
answers one JSON line on stdout. Never imports rerankit.

    {"op": "load", "name": ..., "library": "fastembed" | "flashrank", "folder": ..., ...}
    {"op": "score", "name": ..., "query": ..., "texts": [...]}  -> {"scores": [...], "seconds": s}

``seconds`` is measured here, around the library call only (no pipe, no JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

LOADED: dict[str, Any] = {}


def load(request: dict[str, Any]) -> dict[str, Any]:
    folder = Path(request["folder"])
    threads = request.get("threads")
    batch_size = int(request.get("batch_size", 32))
    if request["library"] == "fastembed":
        from fastembed.common.model_description import ModelSource
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        model_name = f"rerankit-bench/{request['name']}"
        with contextlib.suppress(ValueError):  # registered by an earlier load of that name
            TextCrossEncoder.add_custom_model(
                model=model_name, sources=ModelSource(hf=model_name), model_file="model.onnx"
            )
        model = TextCrossEncoder(model_name, specific_model_path=str(folder), threads=threads)

        def score(query: str, texts: list[str]) -> list[float]:
            return [float(x) for x in model.rerank(query, texts, batch_size=batch_size)]

    elif request["library"] == "flashrank":
        from flashrank import Ranker, RerankRequest

        # FlashRank finds a model by its catalogue name under cache_dir; the folder holds
        # ours under that name, so nothing is downloaded.
        ranker = Ranker(
            model_name=folder.name, cache_dir=str(folder.parent), max_length=512, log_level="ERROR"
        )

        def score(query: str, texts: list[str]) -> list[float]:
            passages = [{"id": i, "text": t} for i, t in enumerate(texts)]
            out = [0.0] * len(texts)
            for row in ranker.rerank(RerankRequest(query=query, passages=passages)):
                out[row["id"]] = float(row["score"])
            return out

    else:
        raise ValueError(f"unknown library {request['library']!r}")
    LOADED[request["name"]] = score
    return {"ok": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    answers = sys.stdout
    sys.stdout = sys.stderr  # whatever the libraries print stays off the answer channel
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "load":
                answer = load(request)
            else:
                score = LOADED[request["name"]]
                start = time.perf_counter()
                values = score(request["query"], request["texts"])
                answer = {"scores": values, "seconds": time.perf_counter() - start}
        except Exception as exc:  # reported to the benchmark, which stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
