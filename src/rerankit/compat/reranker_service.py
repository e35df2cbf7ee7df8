"""Compatible local reranker service, thin over the local-model scorers.

``RerankerService(profile, reranker_model=...)`` runs a Qwen3-Reranker-style causal LM with
the yes/no recipe (:class:`~rerankit.scorers.CausalLMScorer`) or, for a sequence-classification
model, a cross-encoder (:class:`~rerankit.scorers.CrossEncoderScorer`); the model's config decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._optional import require
from ..backends.hardware import HardwareProfile
from ..backends.manifest import is_exported, read_manifest
from ..errors import ModelLoadError
from ..rerankers import ScorerReranker, run_sync
from ..scorers.causal_lm import DEFAULT_CAUSAL_LM, CausalLMScorer
from ..scorers.cross_encoder import CrossEncoderScorer

__all__ = ["MemoryProfile", "RerankerService", "is_causal_lm"]

#: the compatible service calls its hardware settings a memory profile
MemoryProfile = HardwareProfile


def is_causal_lm(model: str, *, trust_remote_code: bool = False) -> bool:
    """Whether ``model``'s config declares a causal-LM architecture (``...ForCausalLM``). A
    folder written by ``rerankit export`` says its kind in its manifest (an embedding model or
    a cross-encoder: never a causal LM), read without transformers, which a torch-free
    install lacks."""
    if is_exported(model):
        return read_manifest(model).get("kind") == "causal_lm"
    transformers = require("transformers", "RerankerService")
    try:
        config = transformers.AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(f"could not read the config of {model!r}: {exc}") from exc
    return any(a.endswith("ForCausalLM") for a in (config.architectures or ()))


class RerankerService:
    """Reorders candidate dicts by a local reranker model.

    ``profile``: a :class:`~rerankit.backends.HardwareProfile` (or any object with ``device``,
    ``batch_size``, ``dtype``, ``max_length`` attributes). ``reranker_model``: hub id,
    local path, or a folder ``rerankit export`` wrote (runs on ONNX Runtime, without
    torch). ``instruction`` is passed to a causal-LM reranker. The model loads on the first
    call.
    """

    def __init__(
        self,
        profile: Any = None,
        reranker_model: str = DEFAULT_CAUSAL_LM,
        *,
        instruction: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.profile = HardwareProfile.from_object(profile)
        self.reranker_model = reranker_model
        self.instruction = instruction
        self.trust_remote_code = trust_remote_code
        self._reranker: ScorerReranker | None = None

    @property
    def reranker(self) -> ScorerReranker:
        if self._reranker is None:
            options = {"profile": self.profile, "trust_remote_code": self.trust_remote_code}
            if is_causal_lm(self.reranker_model, trust_remote_code=self.trust_remote_code):
                scorer: Any = CausalLMScorer(
                    self.reranker_model, instructions=self.instruction, **options
                )
            else:
                scorer = CrossEncoderScorer(self.reranker_model, **options)
            self._reranker = ScorerReranker(scorer)
        return self._reranker

    async def arerank_results(
        self,
        query: str,
        candidates: Sequence[dict[str, Any]],
        score_field: str = "content",
        top_k: int | None = None,
    ) -> list[dict[str, Any]]:
        """Async :meth:`rerank_results`."""
        if not candidates:
            return []
        result = await self.reranker.arerank(
            query, candidates, top_k=top_k, text_field=score_field, score_field="rerank_score"
        )
        return [r.document for r in result]

    def rerank_results(
        self,
        query: str,
        candidates: Sequence[dict[str, Any]],
        score_field: str = "content",
        top_k: int | None = None,
    ) -> list[dict[str, Any]]:
        """New dicts (every original field plus ``rerank_score``), best first.

        ``score_field`` names the key holding each candidate's text (the compatible
        service's name for it).
        """
        return run_sync(self.arerank_results(query, candidates, score_field, top_k))
