"""BM25 speed: rerankit's BM25Scorer against rank_bm25 on the same 1,000 candidates.

Two candidate sets: 1,000 synthetic documents of about 200 words from a Zipf-distributed
vocabulary, and (when ``../shared/data`` is present) the first 1,000 SciFact abstracts, real
scientific English with Greek letters and Unicode punctuation (about 210 words each).
Both sides score the same tokens with the same parameters; the scores are checked equal to
rank_bm25's (``idf="okapi"``, its variant) before anything is timed.

Timed, in interleaved rounds (medians, so machine noise hits every side alike):

* rerankit, first call: a fresh analyzer, so every word is new and is stemmed;
* rerankit, later calls: the analyzer has met these words (the steady state of a service);
* rank_bm25 end to end: our tokenizer on each text, then ``BM25Okapi(...).get_scores``;
* rank_bm25 from pre-tokenised lists (tokenising not counted at all).

Run: ``python -m benchmarks.speed.lexical`` (also ``make bench``). Timings are ratios from one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.common import BEIR
from rerankit.scorers import BM25Scorer
from rerankit.scorers.lexical import Analyzer


def make_corpus(n_docs: int, words_per_doc: int, vocab: int, seed: int) -> tuple[str, list[str]]:
    rng = np.random.default_rng(seed)
    words = np.array([f"term{i}" for i in range(vocab)])
    p = 1.0 / np.arange(1, vocab + 1) ** 1.07
    p /= p.sum()
    docs = []
    for _ in range(n_docs):
        length = int(rng.integers(words_per_doc * 3 // 4, words_per_doc * 5 // 4))
        sentence = " ".join(rng.choice(words, size=length, p=p))
        docs.append(sentence.capitalize() + ".")
    query = " ".join(words[[3, 40, 400, 2500]])
    return query, docs


def scifact_corpus(n_docs: int) -> tuple[str, list[str]] | None:
    path = BEIR / "scifact" / "corpus.jsonl"
    if not path.exists():
        return None
    docs = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.append(f"{row['title']} {row['text']}")
            if len(docs) == n_docs:
                break
    return "microRNA expression in breast cancer cell proliferation", docs


def timed_rounds(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each function, the functions interleaved round by round. As in
    ``timeit``, the garbage collector runs between calls, not during them."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
            finally:
                gc.enable()
    return {name: statistics.median(t) for name, t in times.items()}


def compare(label: str, options: dict, query: str, docs: list[str], rounds: int) -> None:
    analyzer = Analyzer(**options)
    tokens = [analyzer.terms(d) for d in docs]
    q_tokens = analyzer.terms(query)
    np.testing.assert_allclose(
        BM25Scorer(idf="okapi", analyzer=Analyzer(**options)).score_texts(query, docs),
        BM25Okapi(tokens).get_scores(q_tokens),
        atol=1e-6,
    )  # identical scores (rank_bm25's idf variant) before timing anything

    warm = BM25Scorer(analyzer=analyzer)  # the default: Lucene idf
    warm.score_texts(query, docs)
    t = timed_rounds(
        {
            "first": lambda: BM25Scorer(**options).score_texts(query, docs),
            "later": lambda: warm.score_texts(query, docs),
            "ref": lambda: BM25Okapi([analyzer.terms(d) for d in docs]).get_scores(
                analyzer.terms(query)
            ),
            "ref_pre": lambda: BM25Okapi(tokens).get_scores(q_tokens),
        },
        rounds,
    )
    print(f"\n{label}")
    print(f"  rank_bm25, our tokenizer + BM25Okapi      {t['ref'] * 1e3:8.2f} ms")
    print(f"  rank_bm25 from pre-tokenised lists        {t['ref_pre'] * 1e3:8.2f} ms")
    for key, name in (("first", "first call (every word new)"), ("later", "later calls")):
        print(
            f"  rerankit BM25Scorer, {name:<20} {t[key] * 1e3:8.2f} ms"
            f"   {t['ref'] / t[key]:5.1f}x faster end to end,"
            f" {t['ref_pre'] / t[key]:4.1f}x faster than pre-tokenised"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()

    corpora = {"synthetic Zipf": make_corpus(args.docs, args.words, args.vocab, seed=0)}
    real = scifact_corpus(args.docs)
    if real is None:
        print("(../shared/data absent: SciFact set skipped)")
    else:
        corpora["SciFact abstracts"] = real
    configs = {
        "default analyzer: Lucene stopwords, Snowball stemming": {},
        "plain analyzer: no stopwords, no stemming": {"stopwords": None, "stemmer": None},
    }
    for corpus, (query, docs) in corpora.items():
        words = sum(len(d.split()) for d in docs) / len(docs)
        print(f"\n== {corpus}: {len(docs)} candidates, {words:.0f} words each ==")
        for label, options in configs.items():
            compare(label, options, query, docs, args.rounds)


if __name__ == "__main__":
    main()
