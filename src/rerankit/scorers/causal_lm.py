"""Yes/no LLM rerankers (the Qwen3-Reranker recipe) on a local causal language model.

Each (query, document) pair becomes the chat prompt of the official Qwen3-Reranker recipe::

    <|im_start|>system
    Judge whether the Document meets the requirements based on the Query and the Instruct
    provided. Note that the answer can only be "yes" or "no".<|im_end|>
    <|im_start|>user
    <Instruct>: {instruction}
    <Query>: {query}
    <Document>: {document}<|im_end|>
    <|im_start|>assistant
    <think>

    </think>

(the system line is one line in the prompt). The middle part is tokenised without special
tokens and truncated from the right to ``max_length`` minus the template's prefix and suffix,
so the template is always whole; sequences are left-padded. The score is
``P(yes) = exp(log_softmax([logit_no, logit_yes])[1])`` from the last position's logits, in
[0, 1]. Batches are formed after sorting by length (less padding); a batch that runs out of
device memory is split in two and retried.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optional import require
from .._renamed import one_name
from .._threads import on_model_thread
from .._words import read_in_part
from ..backends.hardware import attention_kernels
from ..backends.hub import cache_only_model_options
from ..backends.local import model_label, run_splitting_on_oom
from ..errors import ConfigError, ModelLoadError
from .base import valid_query, valid_unicode
from .local import LocalModelOptions, LocalModelScorer

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_CAUSAL_LM",
    "DEFAULT_INSTRUCTION",
    "QWEN3_PREFIX",
    "QWEN3_SUFFIX",
    "CausalLMScorer",
    "format_pair",
]

logger = logging.getLogger(__name__)

DEFAULT_CAUSAL_LM = "Qwen/Qwen3-Reranker-0.6B"
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
QWEN3_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".'
    "<|im_end|>\n<|im_start|>user\n"
)
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_MAX_LENGTH = 8192  # the recipe's limit


def format_pair(instruction: str, query: str, document: str) -> str:
    """The user turn of the recipe (between the prefix and the suffix)."""
    return f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"


class _Loaded:
    def __init__(self, model: Any, tokenizer: Any, device: str) -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device


class CausalLMScorer(LocalModelScorer):
    """P("yes") of a causal LM asked whether each document meets the query.

    ``model``: hub id or local directory of a causal LM (default Qwen3-Reranker-0.6B), or a
    ``(model, tokenizer)`` pair already loaded. ``instructions``: the task line (default:
    the recipe's web-search instruction; named as an LLM judge's ``instructions`` are, and
    ``instruction``, its earlier name, still works). ``max_length``: tokens per prompt,
    template included (default 8192, the recipe's). ``yes_token`` / ``no_token``: the answer tokens.
    ``prefix`` / ``suffix``: the template around the user turn (Qwen3's by default).
    """

    score_scale = "unit"

    what = "causal LM reranker"
    torch_packages = ("transformers", "torch")

    def __init__(
        self,
        model: str | tuple[Any, Any] = DEFAULT_CAUSAL_LM,
        *,
        instructions: str | None = None,
        yes_token: str = "yes",
        no_token: str = "no",
        prefix: str = QWEN3_PREFIX,
        suffix: str = QWEN3_SUFFIX,
        sort_by_length: bool = True,
        name: str = "causal_lm",
        instruction: str | None = None,
        **options: Unpack[LocalModelOptions],
    ) -> None:
        super().__init__(model, name=name, **options)
        given = one_name("CausalLMScorer", "instructions", instructions, "instruction", instruction)
        # kept as .instruction: the attribute is part of the scorer's cache identity
        # (rerankit.cache.scorer_identity), which a new name would change
        self.instruction = given or DEFAULT_INSTRUCTION
        self.max_length = self.profile.max_length or DEFAULT_MAX_LENGTH
        self.yes_token, self.no_token = yes_token, no_token
        self.prefix, self.suffix = prefix, suffix
        self.sort_by_length = sort_by_length
        self._template: tuple[list[int], list[int], int, int] | None = None

    @property
    def instructions(self) -> str:
        """The task line each prompt starts with."""
        return self.instruction

    def _adopt(self, model: Any) -> _Loaded:
        model, tokenizer = model
        return _Loaded(model.eval(), tokenizer, str(next(model.parameters()).device))

    def _load(self) -> _Loaded:
        transformers = require("transformers", "CausalLMScorer")
        require("torch", "CausalLMScorer")
        hub = self._hub_options(self.model_id, "causal LM", 'CausalLMScorer("{folder}")')
        device = self.profile.resolve_device()
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            self.model_id, padding_side="left", trust_remote_code=self.trust_remote_code, **hub
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            self.model_id,
            dtype=self.profile.resolve_dtype(device),
            trust_remote_code=self.trust_remote_code,
            **hub,
            **cache_only_model_options(hub),
        )
        return _Loaded(model.to(device).eval(), tokenizer, device)

    def _template_ids(self) -> tuple[list[int], list[int], int, int]:
        """Prefix ids, suffix ids, and the ids of the yes and no tokens."""
        if self._template is None:
            tok = self.model.tokenizer
            yes, no = (self._token_id(tok, t) for t in (self.yes_token, self.no_token))
            prefix = tok.encode(self.prefix, add_special_tokens=False)
            suffix = tok.encode(self.suffix, add_special_tokens=False)
            if len(prefix) + len(suffix) >= self.max_length:
                raise ConfigError(
                    f"max_length={self.max_length} leaves no room for the query and document "
                    f"(the template alone is {len(prefix) + len(suffix)} tokens)"
                )
            self._template = (prefix, suffix, yes, no)
        return self._template

    def _token_id(self, tokenizer: Any, token: str) -> int:
        tid = tokenizer.convert_tokens_to_ids(token)
        if tid is None or (tid == tokenizer.unk_token_id and token != tokenizer.unk_token):
            raise ModelLoadError(
                f"the tokenizer of {model_label(self.model_id or 'the model')!r} has no token "
                f"{token!r}; pass yes_token= / no_token= that it has"
            )
        return int(tid)

    def encode_pairs(self, query: str, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each full prompt (template included), before padding."""
        return self._encode(query, texts)[0]

    def _encode(self, query: str, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """The prompts' ids and the positions of the texts cut to fit: the user turn (the
        instruction, the query, then the document) is cut from its end, so the document
        goes first and the template's prefix and suffix are always whole."""
        prefix, suffix, _, _ = self._template_ids()
        tok = self.model.tokenizer
        room = self.max_length - len(prefix) - len(suffix)
        with self.using_model():
            body = tok(
                [format_pair(self.instruction, query, t) for t in texts],
                padding=False,
                truncation=False,
                add_special_tokens=False,
                return_attention_mask=False,
                verbose=False,
            )["input_ids"]
        cut = [i for i, ids in enumerate(body) if len(ids) > room]
        return [prefix + ids[:room] + suffix for ids in body], cut

    def _forward(self, sequences: list[list[int]]) -> list[float]:
        torch = require("torch", "CausalLMScorer")
        loaded = self.model
        _, _, yes, no = self._template_ids()
        tok = loaded.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad is None:
            pad = 0  # masked out anyway
        width = max(map(len, sequences))
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, seq in enumerate(sequences):  # left padding: the last position is real
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[row, width - len(seq) :] = 1
        inputs = {"input_ids": ids.to(loaded.device), "attention_mask": mask.to(loaded.device)}
        with torch.inference_mode(), attention_kernels(loaded.device):
            try:  # only the last position's logits are needed
                out = loaded.model(**inputs, logits_to_keep=1)
            except TypeError:  # a model class without logits_to_keep
                out = loaded.model(**inputs)
            last = out.logits[:, -1, :].float()
            pair = torch.stack([last[:, no], last[:, yes]], dim=1)
            return torch.log_softmax(pair, dim=1)[:, 1].exp().cpu().tolist()

    def score_texts(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Blocking P(yes) for plain strings (lone surrogates replaced by U+FFFD)."""
        if not texts:
            return np.zeros(0)
        texts, query = valid_unicode(texts, {}, []), valid_query(query, [])
        return on_model_thread(self.score_noted, query, texts, {}, [])

    def score_noted(
        self, query: str, texts: Sequence[str], flags: dict[int, list[str]], warnings: list[str]
    ) -> np.ndarray:
        """P(yes), each document cut to fit the prompt flagged ``truncated:<name>`` (and one
        warning)."""
        if not texts:
            return np.zeros(0)
        with self.using_model():
            sequences, cut = self._encode(query, texts)
            scores = self._score_sequences(sequences)
        for i in cut:
            flags.setdefault(i, []).append(f"truncated:{self.name}")
        if cut:
            longer = f"the model's {self.max_length} tokens with the query"
            warnings.append(f"{self.name}: {read_in_part(len(cut), longer, 'start')}")
        return scores

    def _score_sequences(self, sequences: list[list[int]]) -> np.ndarray:
        order = list(range(len(sequences)))
        if self.sort_by_length:
            order.sort(key=lambda i: len(sequences[i]), reverse=True)  # longest (riskiest) first
        scores = np.zeros(len(sequences))
        size = self.profile.resolve_batch_size("prompts", self.model.device.split(":")[0])
        for lo in range(0, len(order), size):
            batch = order[lo : lo + size]
            values = run_splitting_on_oom(
                batch, lambda idx: self._forward([sequences[i] for i in idx])
            )
            scores[batch] = values
        return scores
