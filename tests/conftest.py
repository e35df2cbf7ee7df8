"""Fixtures shared by the test packages: scorer test doubles, tiny random-weight models
and tokenizers built locally (no download; torch imported only when one is built), and a
synthetic BEIR collection."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from redis_server import RedisServer, free_port, redis_binary
from rerankit import Document


class FixedScorer:
    """A scorer returning preset values (a test double for *callers* of scorers)."""

    def __init__(self, name: str, values: Sequence[float]) -> None:
        self.name = name
        self.values = np.asarray(values, dtype=float)
        self.calls: list[dict[str, Any]] = []

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        self.calls.append({"query": query, "n": len(docs), "context": context})
        return self.values[: len(docs)]


class FailingScorer:
    def __init__(self, name: str = "broken", exc: Exception | None = None) -> None:
        self.name = name
        self.exc = exc or RuntimeError("provider unavailable")

    async def score(self, query: str, docs: Sequence[Document], **context: Any) -> np.ndarray:
        raise self.exc


@pytest.fixture(scope="session")
def fixed_scorer():
    """``fixed_scorer(name, values)``: a scorer returning preset values (a test double for
    the callers of scorers)."""
    return FixedScorer


@pytest.fixture(scope="session")
def failing_scorer():
    """``failing_scorer(name="broken", exc=None)``: a scorer that raises."""
    return FailingScorer


@pytest.fixture
def run():
    return asyncio.run


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """LLM judgments and other default caches go to a temporary folder, never ~/.cache."""
    monkeypatch.setenv("RERANKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    # restored after each test: `rerankit eval` sets it for the scorers it builds
    monkeypatch.delenv("RERANKIT_EMBEDDING_CACHE", raising=False)
    monkeypatch.delenv("RERANKIT_CACHE_URL", raising=False)  # no shared cache unless a test asks


# --- tiny local models --------------------------------------------------------------------

WORDS = (
    "vaccines train the immune system to recognise pathogens stock market fell sharply on "
    "tuesday solar panels convert light into electricity how do work what is a an of and "
    "in for with cells virus energy price yes no"
).split()


def _vocab_words(*texts: str) -> list[str]:
    seen: dict[str, None] = {}
    for text in texts:
        for w in re.findall(r"\w+|[^\w\s]", text):
            seen.setdefault(w, None)
    return list(seen)


def build_bert_cross_encoder(path: Path, num_labels: int = 1, seed: int = 0) -> Path:
    """A 2-layer BERT sequence classifier with a WordPiece tokenizer of ~60 words."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_vocab_words(" ".join(WORDS), "?.,")]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
        num_labels=num_labels,
    )
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


QWEN_SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]


def build_qwen3_causal_lm(path: Path, seed: int = 0) -> Path:
    """A 2-layer Qwen3 causal LM whose word-level tokenizer knows the reranker template,
    "yes", "no" and the test words."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    from rerankit.scorers.causal_lm import QWEN3_PREFIX, QWEN3_SUFFIX, format_pair

    path.mkdir(parents=True, exist_ok=True)
    plain = [QWEN3_PREFIX, QWEN3_SUFFIX, format_pair("Instruct", "q", "d"), " ".join(WORDS)]
    for s in QWEN_SPECIALS:
        plain = [p.replace(s, " ") for p in plain]
    words = _vocab_words(
        *plain,
        "Given a web search query, retrieve relevant passages that answer the query",
        "Judge whether the Document meets requirements",
    )
    vocab = {"<unk>": 0, "<pad>": 1}
    for w in [*QWEN_SPECIALS, *words, "\n"]:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    # Newlines are tokens (as in Qwen's tokenizer), spaces separate, punctuation stands alone.
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(" ", behavior="removed"),
            pre_tokenizers.Split("\n", behavior="isolated"),
            pre_tokenizers.Punctuation(behavior="isolated"),
        ]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|endoftext|>",
        additional_special_tokens=QWEN_SPECIALS[:2],
        padding_side="left",
    )
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        pad_token_id=vocab["<pad>"],
    )
    model = Qwen3ForCausalLM(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory):
    """A one-label tiny BERT cross-encoder."""
    pytest.importorskip("torch", reason="neural scorers need the 'torch' extra")
    return build_bert_cross_encoder(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def bert2_dir(tmp_path_factory):
    """A two-label tiny BERT cross-encoder."""
    pytest.importorskip("torch", reason="neural scorers need the 'torch' extra")
    return build_bert_cross_encoder(tmp_path_factory.mktemp("bert2"), num_labels=2, seed=1)


@pytest.fixture(scope="session")
def bert3_dir(tmp_path_factory):
    """A three-label tiny BERT sequence classifier (no relevance model)."""
    pytest.importorskip("torch", reason="neural scorers need the 'torch' extra")
    return build_bert_cross_encoder(tmp_path_factory.mktemp("bert3"), num_labels=3, seed=2)


@pytest.fixture(scope="session")
def qwen_dir(tmp_path_factory):
    """A tiny Qwen3 causal LM with a word-level tokenizer."""
    pytest.importorskip("torch", reason="neural scorers need the 'torch' extra")
    return build_qwen3_causal_lm(tmp_path_factory.mktemp("qwen3"))


@pytest.fixture(scope="session")
def tiny_st(tmp_path_factory):
    """A 2-layer sentence-transformers model (mean pooling, normalised) with random weights."""
    pytest.importorskip("sentence_transformers", reason="needs the 'torch' extra")
    import torch
    from sentence_transformers import SentenceTransformer

    try:  # their newer home first
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # pragma: no cover - older sentence-transformers
        from sentence_transformers import models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-st")
    tokenizer = BertTokenizerFast.from_pretrained(build_bert_cross_encoder(root / "bert"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(root / "encoder")
    tokenizer.save_pretrained(root / "encoder")
    model = SentenceTransformer(
        modules=[
            models.Transformer(str(root / "encoder"), max_seq_length=64),
            models.Pooling(32, "mean"),
            models.Normalize(),
        ]
    )
    model.save(str(root / "model"))
    return root / "model"


# --- a synthetic BEIR collection ----------------------------------------------------------

TOPICS = ["solar power", "wind turbines", "vaccines immune", "stock market", "pasta sauce"]
#: a word for the topic that the query does not use
OTHER = {
    "solar power": "photovoltaic",
    "wind turbines": "windmill",
    "vaccines immune": "antibody",
    "stock market": "equities",
    "pasta sauce": "spaghetti",
}


def synthetic_beir(
    folder: Path,
    *,
    queries: int = 40,
    train: int = 30,
    misleading: bool = False,
    obvious: bool = False,
    seed: int = 1,
) -> Path:
    """A collection of 5 topics x 8 documents; query i asks for topic i % 5 and judges one
    document of it relevant (grade 2) and the next one partly (grade 1). A run file ranks
    each query's relevant documents first, then the rest of its topic, then the others.

    With ``misleading``, the judged documents use another word for the topic and the others
    repeat the query's words, so the embedding alone is misled and only the first stage
    knows; with ``obvious``, the judged documents are the only ones that name the topic, so
    every signal ranks them first; otherwise every document of a topic mentions it alike."""
    rng = random.Random(seed)
    corpus, rows, test, run = [], [], [], []
    for t, topic in enumerate(TOPICS):
        for j in range(8):
            noise = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(6))
            doc = {"_id": f"d{t}-{j}", "title": topic.title(), "text": f"{topic} {noise}"}
            if misleading:
                doc = {
                    "_id": doc["_id"],
                    "text": f"{OTHER[topic]} {noise}" if j < 2 else f"{topic} {topic} {topic}",
                }
            elif obvious:
                doc = {"_id": doc["_id"], "text": topic if j < 2 else f"{OTHER[topic]} {noise}"}
            corpus.append(doc)
    queries_out = []
    for i in range(queries):
        t = i % len(TOPICS)
        queries_out.append({"_id": f"q{i}", "text": TOPICS[t]})
        judged = (0, 1) if misleading or obvious else (i % 8, (i + 1) % 8)
        target = rows if i < train else test
        target += [f"q{i}\td{t}-{judged[0]}\t2", f"q{i}\td{t}-{judged[1]}\t1"]
        ranked = [f"d{t}-{j}" for j in judged] + [f"d{t}-{j}" for j in range(8) if j not in judged]
        ranked += [f"d{u}-{j}" for u in range(len(TOPICS)) if u != t for j in range(2)]
        run += [f"q{i} Q0 {d} {r + 1} {100 - r} fs" for r, d in enumerate(ranked)]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries_out))
    head = "query-id\tcorpus-id\tscore\n"
    (folder / "qrels" / "train.tsv").write_text(head + "\n".join(rows) + "\n")
    (folder / "qrels" / "test.tsv").write_text(head + "\n".join(test) + "\n")
    (folder / "first.run.trec").write_text("\n".join(run) + "\n")
    return folder


@pytest.fixture
def synthetic():
    """``synthetic(folder, **options)``: see :func:`synthetic_beir`."""
    return synthetic_beir


@pytest.fixture
def default_ndcg_printed():
    """Reads the training queries' nDCG@10 x 100 of the default from ``rerankit tune``'s
    output."""
    return lambda printed: float(printed.split("the default\n")[0].split("\n")[-1].split()[0])


@pytest.fixture
def hybrid_ndcg():
    """The mean nDCG@10 x 100 of `hybrid` given a BEIR folder's first-stage top ``k`` with
    their scores, measured query by query through ``rerank`` (what ``tune`` must compare
    learned pipelines with)."""

    def measure(data, split: str = "train", k: int = 10) -> float:
        from rerankit import load
        from rerankit.eval import load_beir
        from rerankit.eval.first_stage import candidate_documents, first_stage
        from rerankit.eval.metrics import ndcg_at_k

        train, hybrid = load_beir(data, split), load("hybrid")
        values = []
        for q, ranked in first_stage(train, "auto", k).items():
            if ranked and q in train.qrels:
                result = hybrid.rerank(train.queries[q], candidate_documents(train, ranked))
                values.append(ndcg_at_k([r.id for r in result], train.qrels[q], 10))
        return 100 * sum(values) / len(values)

    return measure


# --- a real Redis server (the shared-cache tests) -----------------------------------------
# Started on a free loopback port in a temporary folder (no persistence) and stopped at the
# end; the tests skip, saying why, where the server or the client is missing (`make test`
# installs Debian's redis-server when it can).


def _needs_redis() -> None:
    pytest.importorskip("redis", reason="the Redis cache needs the 'redis' extra")
    if redis_binary() is None:
        pytest.skip(
            "no redis-server (or valkey-server) on this machine: `make test` installs "
            "Debian's redis-server when run as root with apt-get"
        )


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A Redis server for the whole session (each test gets it emptied: ``redis_url``)."""
    _needs_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    """The session's Redis server, emptied and with default memory settings."""
    client = redis_server.client()
    client.flushall()
    client.config_set("maxmemory", 0)
    client.config_set("maxmemory-policy", "noeviction")
    return redis_server.url


@pytest.fixture
def own_redis(tmp_path):
    """A Redis server of this test's own (to kill and restart)."""
    _needs_redis()
    server = RedisServer(tmp_path / "redis-own").start()
    yield server
    server.stop()


@pytest.fixture
def password_redis(tmp_path):
    """A Redis server of this test's own that wants the password ``s3cret``."""
    _needs_redis()
    server = RedisServer(tmp_path / "redis-auth", password="s3cret").start()
    yield server
    server.stop()


@pytest.fixture
def nothing_listening_url():
    """A Redis URL on a loopback port nobody listens on."""
    pytest.importorskip("redis", reason="the Redis cache needs the 'redis' extra")
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture
def moved_together(tmp_path, monkeypatch):
    """``moved_together(pipeline, model_name, docs)``: the pipeline file names its learned
    model ``model_name`` (beside it, relative); copied with the model and its report to
    another folder, it loads from any working directory and scores ``docs`` as before."""
    import shutil

    import tomllib

    from rerankit import load

    def check(pipeline: Path, model_name: str, docs: Sequence[str]) -> None:
        stage = tomllib.loads(pipeline.read_text())["stages"][0]
        (entry,) = [
            e
            for e in [stage.get("scorer"), *stage.get("scorers", [])]
            if e and e["type"] == "learned"
        ]
        assert entry["model"] == model_name
        moved = tmp_path / "moved"
        moved.mkdir()
        model = pipeline.parent / model_name
        for path in (pipeline, model, model.with_suffix(".json")):
            shutil.copy(path, moved / path.name)
        monkeypatch.chdir(tmp_path)  # neither the old folder nor the new one
        here = load(moved / pipeline.name).rerank("solar power", list(docs))
        there = load(pipeline).rerank("solar power", list(docs))
        assert [r.score for r in here] == pytest.approx([r.score for r in there])

    return check
