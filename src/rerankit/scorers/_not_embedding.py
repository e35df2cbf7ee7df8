"""What :class:`~rerankit.scorers.EmbeddingScorer` says when it is given a cross-encoder."""

from __future__ import annotations

from ..backends.onnx import is_exported

__all__ = ["a_cross_encoder"]


def a_cross_encoder(model: str) -> str:
    """Why the cross-encoder ``model`` is no embedding model, and how to use it."""
    said = (
        "an ONNX export of one, as its rerankit_onnx.json says"
        if is_exported(model)
        else "its config.json names a sequence-classification architecture"
    )
    return (
        f"{model!r} is a cross-encoder ({said}), not an embedding model: it reads the query "
        "and the document together, so it cannot be the embedding model of EmbeddingScorer "
        "or of the hybrid (HybridReranker(model=), rerankit serve --model). Rank with it as "
        f'a cross-encoder: CrossEncoderScorer("{model}") in Python, -r {model} on the '
        f'command line; to add BM25, fuse the two: FusionReranker([CrossEncoderScorer("{model}"'
        f'), BM25Scorer()]), in a pipeline file scorers = [{{ type = "cross_encoder", model = '
        f'"{model}" }}, {{ type = "bm25" }}]'
    )
