"""Can a cross-encoder trained here from the bundled MiniLM (an embedding model: its
relevance head starts untrained) learn to rank, and with which training settings?

Decided: the defaults of ``rerankit train cross-encoder`` (epochs, step sizes, hard
negatives; ``training/cross_encoder.py``). Reported in docs/evaluation.md.

A grid of settings of ``rerankit train cross-encoder`` (epochs, step size, hard negatives
per relevant document, the relevant pairs' loss weighted by that count or not, the new
relevance head's own step size) is trained
with the command's own functions on the training queries less a held-out tenth (the
command's own ``--held-out`` choice), and each model reranks the held-out queries' BM25
top 100. The setting best there, and only it, is then scored once on the test split's BM25
top 100: alone, and blended half and half (min-max) with 0.3 first stage + 0.7 MiniLM (what
``tune`` blends learned rankers with). BM25 and that blend are printed beside it.

Labels: the training split's human qrels, or a qrels file ``rerankit label`` wrote
(``--labels FOLDER/qrels/train.tsv``; ``benchmarks/quality/distill.py`` makes them with an oracle
judge). On two CPU cores one epoch over SciFact's pairs takes about 8 minutes; the grid is
meant for a GPU (``python -m benchmarks.experiments.train_ce --data DIR/scifact``).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import BEIR as DATA
from benchmarks.common import mean_ndcg_of

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
    head_learning_rate: float  # 0: the rest's

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
        settings.append(
            Setting(float(epochs), float(rate), int(negatives), weighted == "1", float(head))
        )
    return settings


def scores_of(scorer, data, cands, qids) -> dict[str, np.ndarray]:
    """``scorer`` on each of ``qids``' BM25 top ``DEPTH``."""
    texts = {q: [data.text(d) for d, _ in cands.get(q, [])[:DEPTH]] for q in qids}
    return {
        q: np.asarray(scorer.score_texts(data.queries[q], texts[q]) if texts[q] else [], float)
        for q in qids
    }


def hybrid_of(data, cands, qids, embedding_model: str) -> dict[str, np.ndarray]:
    """0.3 BM25 + 0.7 MiniLM (each min-max) over each query's BM25 top ``DEPTH``."""
    from rerankit.normalize import normalize_scores
    from rerankit.scorers.embedding import EmbeddingScorer

    cosine = scores_of(EmbeddingScorer(embedding_model, cache=False), data, cands, qids)
    hybrid = {}
    for q in qids:
        bm25 = np.array([s for _, s in cands.get(q, [])[:DEPTH]], dtype=float)
        hybrid[q] = 0.3 * normalize_scores(bm25, "min_max") + 0.7 * normalize_scores(
            cosine[q], "min_max"
        )
    return hybrid


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
    from rerankit.eval import load_beir
    from rerankit.eval.data import load_qrels
    from rerankit.eval.first_stage import first_stage
    from rerankit.normalize import normalize_scores
    from rerankit.scorers.cross_encoder import CrossEncoderScorer
    from rerankit.training.cross_encoder import cross_encoder_rows, fine_tune_cross_encoder
    from rerankit.training.fine_tuning import check_on_held_out, held_out

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
    kept_out = set(checked)
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
            train, qrels={q: j for q, j in qrels.items() if q not in kept_out}
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
        scorer = CrossEncoderScorer(str(work / f"ce-{k}"))
        first, value = (100 * v for v in check_on_held_out(scorer, train, cands, checked, DEPTH))
        results.append((value, k, setting))
        print(f"| {setting} | {note} | {value:.2f} |", flush=True)
    print(f"| (BM25's own order) | | {first:.2f} |")
    best, k, setting = max(results, key=lambda r: (r[0], -r[1]))
    test_cands = first_stage(test, "bm25", DEPTH)
    qids = [q for q in test.qrels if q in test.queries]
    rows = {q: ([d for d, _ in test_cands.get(q, [])[:DEPTH]], None) for q in qids}
    qrels = {q: test.qrels[q] for q in qids}

    def on_test(model: Path) -> tuple[float, float]:
        """The trained model's test nDCG@10 x 100, alone and blended with the hybrid."""
        scores = scores_of(CrossEncoderScorer(str(model)), test, test_cands, qids)
        mixed = {q: 0.5 * hybrid[q] + 0.5 * normalize_scores(scores[q], "min_max") for q in qids}
        return mean_ndcg_of(rows, scores, qrels), mean_ndcg_of(rows, mixed, qrels)

    hybrid = hybrid_of(test, test_cands, qids, args.embedding_model)
    order = {q: -np.arange(len(ids), dtype=float) for q, (ids, _) in rows.items()}
    bm25, base = mean_ndcg_of(rows, order, qrels), mean_ndcg_of(rows, hybrid, qrels)
    start = time.perf_counter()
    alone, mixed = on_test(work / f"ce-{k}")
    took = time.perf_counter() - start
    print(
        f"\nchosen on the held-out queries: {setting} ({best:.2f})\n"
        f"test, {len(qids)} queries, BM25 top {DEPTH}, nDCG@10 x 100 (scored in {took:.0f} s):\n"
        "| ranker | alone | blended half and half with 0.3 BM25 + 0.7 MiniLM |\n|---|---:|---:|\n"
        f"| BM25 | {bm25:.2f} | |\n| 0.3 BM25 + 0.7 MiniLM | {base:.2f} | |\n"
        f"| the cross-encoder trained on {labels} | {alone:.2f} | {mixed:.2f} |",
        flush=True,
    )
    for n, path in enumerate(p for p in args.also.split(",") if p):
        also = load_qrels(Path(path))
        also = {q: also[q] for q in train.qrels if q in also}  # the same queries
        note = trained(setting, also, work / f"also-{n}")
        value, mixed = on_test(work / f"also-{n}")
        print(f"| the same setting trained on {path} ({note}) | {value:.2f} | {mixed:.2f} |")


if __name__ == "__main__":
    main()
