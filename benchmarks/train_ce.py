"""Can a cross-encoder trained here from the bundled MiniLM (an embedding model: its
relevance head starts untrained) learn to rank, and with which training settings?

A grid of settings of ``rerankit train cross-encoder`` (epochs, step size, hard negatives
per relevant document, the relevant pairs' loss weighted by that count or not, the new
relevance head's own step size) is trained
with the command's own functions on the training queries less a held-out tenth (the
command's own ``--held-out`` choice), and each model reranks the held-out queries' BM25
top 100. The setting best there, and only it, is then scored once on the test split's BM25
top 100: alone, and blended half and half (min-max) with 0.3 first stage + 0.7 MiniLM (what
``tune`` blends learned rankers with). BM25 and that blend are printed beside it.

Labels: the training split's human qrels, or a qrels file ``rerankit label`` wrote
(``--labels FOLDER/qrels/train.tsv``; ``benchmarks/distill.py`` makes them with an oracle
judge). On two CPU cores one epoch over SciFact's pairs takes about 8 minutes; the grid is
meant for a GPU (``python benchmarks/train_ce.py --data DIR/scifact``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learn import DATA

#: epochs, step size, hard negatives per relevant document, weight the relevant pairs (1)
#: or not (0), the relevance head's own step size (0: the rest's); the first is the default
#: before 2026-11-27 (the head at the rest's step size)
GRID = (
    "1,2e-5,3,0,0;4,2e-5,3,0,0;4,5e-5,3,1,0;10,1e-4,3,1,0;"
    "4,2e-5,3,0,1e-3;4,5e-5,3,1,1e-3;10,5e-5,3,1,1e-3;4,5e-5,7,1,1e-3"
)
DEPTH = 100


@dataclasses.dataclass(frozen=True)
class Setting:
    epochs: float
    learning_rate: float
    negatives: int
    weighted: bool
    head_learning_rate: float | None

    def __str__(self) -> str:
        weight = f", relevant weighted x{self.negatives}" if self.weighted else ""
        head = f", head lr {self.head_learning_rate:g}" if self.head_learning_rate else ""
        return (
            f"{self.epochs:g} epochs, lr {self.learning_rate:g}, {self.negatives} negatives"
            f"{weight}{head}"
        )


def parse_grid(text: str) -> list[Setting]:
    settings = []
    for part in text.split(";"):
        epochs, rate, negatives, weighted, head = part.split(",")
        head_rate = float(head) or None
        settings.append(
            Setting(float(epochs), float(rate), int(negatives), weighted == "1", head_rate)
        )
    return settings


def ranked(scorer, data, cands, qids) -> tuple[float, dict[str, np.ndarray]]:
    """Mean nDCG@10 x 100 of ``scorer`` over ``qids``' BM25 top ``DEPTH``, and the scores."""
    from rerankit.eval.metrics import ranked_ndcg

    values, scores = [], {}
    for q in qids:
        ids = [d for d, _ in cands.get(q, [])[:DEPTH]]
        got = scorer.score_texts(data.queries[q], [data.text(d) for d in ids]) if ids else []
        scores[q] = np.asarray(got, dtype=float)
        values.append(ranked_ndcg(ids, scores[q], data.qrels.get(q, {})))
    return 100 * float(np.mean(values)), scores


def blend(data, cands, qids, scores, embedding_model: str) -> tuple[float, float, float]:
    """Test nDCG@10 x 100 of BM25, of 0.3 BM25 + 0.7 MiniLM (min-max), and of that blended
    half and half with ``scores`` (min-max)."""
    from rerankit.eval.metrics import ranked_ndcg
    from rerankit.normalize import normalize_scores
    from rerankit.scorers.embedding import EmbeddingScorer

    embedding = EmbeddingScorer(embedding_model, cache=False)
    first, base, mixed = [], [], []
    for q in qids:
        rows = cands.get(q, [])[:DEPTH]
        ids = [d for d, _ in rows]
        judged = data.qrels.get(q, {})
        if not ids:
            first.append(0.0), base.append(0.0), mixed.append(0.0)
            continue
        bm25 = normalize_scores(np.array([s for _, s in rows], dtype=float), "min_max")
        cosine = embedding.score_texts(data.queries[q], [data.text(d) for d in ids])
        hybrid = 0.3 * bm25 + 0.7 * normalize_scores(np.asarray(cosine, float), "min_max")
        first.append(ranked_ndcg(ids, -np.arange(len(ids), dtype=float), judged))
        base.append(ranked_ndcg(ids, hybrid, judged))
        model = normalize_scores(scores[q], "min_max")
        mixed.append(ranked_ndcg(ids, 0.5 * hybrid + 0.5 * model, judged))
    return tuple(100 * float(np.mean(v)) for v in (first, base, mixed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA / "scifact"), help="BEIR-layout folder")
    parser.add_argument("--labels", default=None, help="qrels file to train on (human qrels)")
    parser.add_argument("--grid", default=GRID, help="epochs,lr,negatives,weighted;...")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="model to start from")
    parser.add_argument(
        "--embedding-model", default="all-MiniLM-L6-v2", help="MiniLM of the test blend"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--limit", type=int, default=None, help="first N training and test queries (a smoke run)"
    )
    parser.add_argument(
        "--also",
        default="",
        help="more qrels files (comma-separated) to train the chosen setting on, each "
        "scored on test too (e.g. a noisier judge's labels)",
    )
    parser.add_argument("--work", default=None, help="folder for the models (a temporary one)")
    args = parser.parse_args()
    from rerankit.cli.train import held_out
    from rerankit.eval import load_beir
    from rerankit.eval.data import load_qrels
    from rerankit.eval.first_stage import first_stage
    from rerankit.scorers.cross_encoder import CrossEncoderScorer
    from rerankit.training.cross_encoder import cross_encoder_rows, fine_tune_cross_encoder

    train = load_beir(Path(args.data), "train")
    if args.labels:
        train = dataclasses.replace(train, qrels=load_qrels(Path(args.labels)))
    test = load_beir(Path(args.data), "test")
    if args.limit:
        train, test = (
            dataclasses.replace(d, qrels=dict(list(d.qrels.items())[: args.limit]))
            for d in (train, test)
        )
    cands = first_stage(train, "bm25", DEPTH)
    checked = held_out([q for q in train.qrels if q in train.queries], 0.1)
    work = Path(args.work or tempfile.mkdtemp(prefix="rerankit-train-ce-"))
    labels = "human qrels" if not args.labels else f"labels from {args.labels}"
    print(
        f"{Path(args.data).name}: {len(train.qrels) - len(checked)} training queries ({labels}), "
        f"{len(checked)} held out, the model started from {args.model}, batch "
        f"{args.batch_size}",
        flush=True,
    )

    def trained(setting: Setting, qrels, out: Path) -> str:
        """Train ``setting`` on ``qrels`` less the held-out queries; a line about the run."""
        data = dataclasses.replace(
            train, qrels={q: j for q, j in qrels.items() if q not in set(checked)}
        )
        rows = cross_encoder_rows(data, cands, negatives=setting.negatives)
        summary = fine_tune_cross_encoder(
            rows,
            out,
            model=args.model,
            epochs=setting.epochs,
            batch_size=args.batch_size,
            learning_rate=setting.learning_rate,
            positive_weight=setting.negatives if setting.weighted else None,
            head_learning_rate=setting.head_learning_rate or setting.learning_rate,
            progress=False,
            log=lambda line: None,
        )
        losses = summary["losses"]
        return (
            f"{len(rows)} pairs, {summary['steps']} steps, {summary['seconds']:.0f} s, "
            f"loss {losses[0]:.3f} -> {losses[-1]:.3f}"
        )

    print("| setting | training | held-out nDCG@10 |\n|---|---|---:|")
    results = []
    for k, setting in enumerate(parse_grid(args.grid)):
        note = trained(setting, train.qrels, work / f"ce-{k}")
        value, _ = ranked(CrossEncoderScorer(str(work / f"ce-{k}")), train, cands, checked)
        results.append((value, k, setting))
        print(f"| {setting} | {note} | {value:.2f} |", flush=True)
    first, _ = ranked(_Position(), train, cands, checked)
    print(f"| (BM25's own order) | | {first:.2f} |")
    best, k, setting = max(results, key=lambda r: (r[0], -r[1]))
    test_cands = first_stage(test, "bm25", DEPTH)
    qids = [q for q in test.qrels if q in test.queries]
    start = time.perf_counter()
    alone, scores = ranked(CrossEncoderScorer(str(work / f"ce-{k}")), test, test_cands, qids)
    took = time.perf_counter() - start
    bm25, base, mixed = blend(test, test_cands, qids, scores, args.embedding_model)
    print(
        f"\nchosen on the held-out queries: {setting} ({best:.2f})\n"
        f"test, {len(qids)} queries, BM25 top {DEPTH}, nDCG@10 x 100 (scored in {took:.0f} s):\n"
        "| ranker | alone | blended half and half with 0.3 BM25 + 0.7 MiniLM |\n|---|---:|---:|\n"
        f"| BM25 | {bm25:.2f} | |\n| 0.3 BM25 + 0.7 MiniLM | {base:.2f} | |\n"
        f"| the cross-encoder trained on {labels} | {alone:.2f} | {mixed:.2f} |",
        flush=True,
    )
    for n, path in enumerate(p for p in args.also.split(",") if p):
        qrels = load_qrels(Path(path))
        qrels = {q: qrels[q] for q in train.qrels if q in qrels}  # the same queries
        note = trained(setting, qrels, work / f"also-{n}")
        value, scores = ranked(CrossEncoderScorer(str(work / f"also-{n}")), test, test_cands, qids)
        _, _, mixed = blend(test, test_cands, qids, scores, args.embedding_model)
        print(f"| the same setting trained on {path} ({note}) | {value:.2f} | {mixed:.2f} |")


class _Position:
    """Scores that keep the first stage's order."""

    def score_texts(self, query: str, texts: list[str]) -> list[float]:
        return [-float(i) for i in range(len(texts))]


if __name__ == "__main__":
    main()
