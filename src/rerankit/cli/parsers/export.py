"""``export``'s parser: its flags, their help and checks, and nothing the
command runs (:mod:`rerankit.cli.export`, imported when it runs)."""

from __future__ import annotations

from typing import Any

from ..args import (
    MODEL_KINDS_SHOWN,
    examples,
    model_kind_name,
    positive_int,
    remember_defaults,
)

__all__ = ["add_command"]


def add_command(sub: Any) -> None:
    exp = sub.add_parser(
        "export",
        help="export a local model to ONNX (to run without torch)",
        description="Export an embedding model (sentence-transformers) or a cross-encoder to a "
        "folder that EmbeddingScorer / CrossEncoderScorer load with backend='onnx' on ONNX "
        "Runtime alone (extra onnx). Exporting needs the torch and onnx extras.",
        **examples(
            "rerankit export all-MiniLM-L6-v2 --quantize int8 --out minilm-onnx",
            "rerankit export cross-encoder/ms-marco-MiniLM-L6-v2 --out ce-onnx",
            "rerankit serve --model minilm-onnx  # no torch",
        ),
    )
    exp.add_argument(
        "model",
        metavar="MODEL",
        help="hub id or model directory (all-MiniLM-L6-v2: the bundled copy)",
    )
    exp.add_argument(
        "--out",
        default=None,
        help="folder to write; without it, the export goes into the rerankit cache, where "
        "--backend onnx and auto find it (for the bundled model: what the default pipeline "
        "runs; made there on first use anyway where torch is installed)",
    )
    exp.add_argument(
        "--kind",
        type=model_kind_name,
        metavar=MODEL_KINDS_SHOWN,
        default=None,
        help="what the model is (default: what its files say, as -r MODEL tells it: a "
        "sequence-classification architecture in config.json is a cross-encoder, "
        "sentence-transformers files an embedding model; cross_encoder works too)",
    )
    exp.add_argument("--quantize", choices=("int8",), default=None, help="also write int8 weights")
    exp.add_argument(
        "--max-length", type=positive_int, default=None, help="tokens per input (model's own)"
    )
    exp.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the Python code a hub model ships (its own architecture); only for models "
        "you trust (trust_remote_code = true on a pipeline file's scorer)",
    )
    exp.add_argument(
        "--revision",
        default=None,
        metavar="REV",
        help='a hub id\'s branch, tag or commit (default main; revision = "REV" on a pipeline '
        "file's scorer); a model folder is read as it is",
    )
    exp.add_argument(
        "--no-smoothing",
        action="store_true",
        help="cross-encoders: do not smooth before int8 (by default each MatMul's input range "
        "is smoothed into its weights first, which keeps the order closer to float32's)",
    )
    exp.add_argument(
        "--int8-scales",
        choices=("per-token", "per-tensor"),
        default="per-token",
        help="cross-encoders: one int8 scale per token of each MatMul input (default; keeps "
        "the order closer to float32's) or ONNX Runtime's one per tensor; "
        "--no-smoothing --int8-scales per-tensor is plain dynamic int8",
    )
    exp.add_argument(
        "--no-check",
        action="store_true",
        help="with --out: do not score a few fixed pairs on torch and on the export to say "
        "the largest difference (loads the model once more)",
    )
    remember_defaults(exp)
