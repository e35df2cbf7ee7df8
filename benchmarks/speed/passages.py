"""What reading documents by passages costs: the calibrated ``hybrid`` reads each document
whole and by passages of about 48 words (each after the first starting with the document's
first 20 words), where a plain embedding reads one vector of the whole (truncated) text.

On the first N SciFact abstracts (title + text) and the first N TREC DL19 passages, with
the bundled all-MiniLM-L6-v2 on the CPU and no cache (every text encoded), interleaved round
by round: whole documents against whole documents plus passages of ``--words`` words (the
default's reading). Prints the passages per document, the word pieces the model reads
(each text capped at its 256-piece window) and the documents per second of each, with the
ratio; medians over the rounds.

Run: ``python -m benchmarks.speed.passages [--docs 200] [--rounds 3] [--words 48] [--lead 20]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks.common import DATA
from rerankit.scorers import EmbeddingScorer
from rerankit.text import split_passages

SETS = {
    "SciFact abstracts": DATA / "beir/scifact/corpus.jsonl",
    "DL19 passages": DATA / "msmarco/trec-dl-2019-bm25-top100/corpus.jsonl",
}
QUERY = "how do vaccines train the immune system"


def texts(path: Path, n: int) -> list[str]:
    out = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            title = doc.get("title") or ""
            out.append(f"{title}\n{doc['text']}" if title else doc["text"])
            if len(out) == n:
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--words", type=int, default=48)
    parser.add_argument("--lead", type=int, default=20)
    args = parser.parse_args()
    whole = EmbeddingScorer(cache=False, device="cpu")
    passages = whole.with_passages(args.words, lead=args.lead)
    whole.score_texts(QUERY, ["warm-up"])  # load the model outside the timings
    print(
        f"| documents | passages per document | word pieces read | docs/s whole | "
        f"docs/s whole + {args.words}-word passages | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for label, path in SETS.items():
        if not path.exists():
            print(f"| {label} | not found under {DATA} | | | | |")
            continue
        docs = texts(path, args.docs)
        pieces = [p for d in docs for p in split_passages(d, args.words, lead=args.lead)]
        tokens = (whole.count_tokens(pieces) + whole.count_tokens(docs)) / whole.count_tokens(docs)
        seconds: dict[str, list[float]] = {"whole": [], "passages": []}
        for _ in range(args.rounds):
            for name, scorers in (("whole", [whole]), ("passages", [whole, passages])):
                start = time.perf_counter()
                for scorer in scorers:
                    scorer.score_texts(QUERY, docs)
                seconds[name].append(time.perf_counter() - start)
        rate = {k: len(docs) / statistics.median(v) for k, v in seconds.items()}
        print(
            f"| {len(docs)} {label} | {len(pieces) / len(docs):.2f} | {tokens:.2f}x | "
            f"{rate['whole']:.1f} | {rate['passages']:.1f} | "
            f"{rate['passages'] / rate['whole']:.2f}x |"
        )


if __name__ == "__main__":
    main()
