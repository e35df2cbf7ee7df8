"""BM25 speed: rerankit's BM25Scorer against rank_bm25 on the same 1,000 candidates.

Each candidate has about 200 words drawn from a Zipf-distributed vocabulary (real text has
the same shape); the query has four terms of varied frequency. Both sides score the same
tokens with the same parameters. Two comparisons, best of ``--repeat`` runs each:

* end to end: raw strings in, scores out (rank_bm25 gets our tokenizer, timed with it);
* scoring only: rank_bm25 from pre-tokenised lists vs our scorer from raw strings.

The scores are first checked equal to rank_bm25's (``idf="okapi"``, rank_bm25's variant); the
timed scorer is the default (``idf="lucene"``), whose idf needs only the query's terms.

Run: ``python benchmarks/lexical.py`` (also ``make bench``). Timings are ratios from one run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from rank_bm25 import BM25Okapi

from rerankit import BM25Scorer
from rerankit.scorers.lexical import Analyzer, bm25_from_batch


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


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def compare(label: str, options: dict, query: str, docs: list[str], repeat: int) -> None:
    analyzer = Analyzer(**options)
    okapi = BM25Scorer(idf="okapi", analyzer=analyzer)
    ours = BM25Scorer(analyzer=analyzer)  # the default: Lucene idf
    tokens = [analyzer.terms(d) for d in docs]
    q_tokens = analyzer.terms(query)
    np.testing.assert_allclose(
        okapi.score_texts(query, docs), BM25Okapi(tokens).get_scores(q_tokens), atol=1e-6
    )  # identical scores (rank_bm25's idf variant) before timing anything
    t_okapi = best_of(lambda: okapi.score_texts(query, docs), repeat)

    t_ours = best_of(lambda: ours.score_texts(query, docs), repeat)
    t_ref_e2e = best_of(
        lambda: BM25Okapi([analyzer.terms(d) for d in docs]).get_scores(analyzer.terms(query)),
        repeat,
    )
    t_ref_scoring = best_of(lambda: BM25Okapi(tokens).get_scores(q_tokens), repeat)
    t_analyze = best_of(lambda: analyzer.analyze(docs), repeat)
    batch = analyzer.analyze(docs)
    t_math = best_of(lambda: bm25_from_batch(batch, q_tokens), repeat)
    print(f"\n{label}")
    print(f"  rerankit BM25Scorer, raw strings in   {t_ours * 1e3:8.2f} ms")
    print(f"    of which tokenising + term ids      {t_analyze * 1e3:8.2f} ms")
    print(f"    of which BM25 arithmetic            {t_math * 1e3:8.2f} ms")
    print(f"  rerankit, idf='okapi' (same scores)   {t_okapi * 1e3:8.2f} ms")
    print(
        f"  rank_bm25 incl. tokenising            {t_ref_e2e * 1e3:8.2f} ms"
        f"   -> rerankit {t_ref_e2e / t_ours:5.1f}x faster"
    )
    print(
        f"  rank_bm25 from pre-tokenised lists    {t_ref_scoring * 1e3:8.2f} ms"
        f"   -> rerankit {t_ref_scoring / t_ours:5.1f}x faster"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--vocab", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    query, docs = make_corpus(args.docs, args.words, args.vocab, seed=0)
    configs = {
        "plain (no stopwords, no stemming)": {"stopwords": None, "stemmer": None},
        "default (Lucene stopwords, Snowball stemming)": {},
    }
    print(f"{len(docs)} candidates, {sum(len(d.split()) for d in docs) / len(docs):.0f} words each")
    for label, options in configs.items():
        compare(label, options, query, docs, args.repeat)


if __name__ == "__main__":
    main()
