"""Choosing the texts-only default (the calibrated ``hybrid``) on a development pool across
domains, with a rule that protects the worst collection.

Decided: the default ``hybrid``'s texts-only recipe (its signals, readings, weights and
calibrations: the ``HYBRID_*`` constants the hybrid reads). Reported in
docs/documents.md (the default hybrid) and docs/measured.md.

The pool: SciFact train and NFCorpus dev (biomedical claims and questions; first stage
BM25 over the corpus, k1=0.9, b=0.4, top 100) and the four classic collections CISI,
CACM, MEDLINE and LISA (library science, computer science, medicine; first stage their
shipped BM25 top 100). Test splits are never read.

Signals, each depending on the (query, document) pair alone:

* ``passage``: the bundled all-MiniLM-L6-v2's cosine of the document's best passage of
  about 48 words, each passage after the first starting with the document's first K
  words (K in LEADS);
* ``embedding``: its cosine of the whole document (as the model truncates it);
* ``bm25_background``: BM25 (k1=0.9, b=0.4) with idf from a general word-frequency table,
  a fixed average length (AVGDL) and the score divided by the most any document could score
  for the query raised to a power (QUERY_NORMALIZATION; 1: fully query-normalised).
* ``proximity``: how often the query's adjacent terms stand next to each other in the
  document (either order, stopwords skipped), scored like that BM25 (the same average
  length and query normalisation; the smaller idf of a pair's two terms), for the three
  best BM25 readings (SHORT_LEXICAL) in candidates of four signals.

Each signal gets a logistic calibration fitted on the pooled judged pairs of the six
collections (relevant: judged >= 1; each collection weighted equally), and a candidate
default is a choice of signals, readings and logit-space weights (a 0.025 grid; every
weight above 0). A candidate's *regret* on a collection is how far it falls short of the
targets there: at least the first stage, at least ``embedding``, and within 0.5 of
``hybrid-relative`` (min-max fusion with the candidates' own idf, whose scores are relative
to the request). The rule: among candidates with no regret anywhere, the best mean nDCG@10;
if there are none, among those whose largest regret is within 0.1 of the smallest largest
regret (closer than that is noise), the best mean nDCG@10. The output
calibration is then fitted on the pooled pairs (equal weight per collection), and the
expected calibration error is printed per collection.

Prints the references and the best candidates per collection, the best candidate of each
family side by side, the targets, and the constants for ``rerankit/rerankers/hybrid.py``;
then scores the library's own ``hybrid`` on the pool (it should equal the chosen row once
the constants are in).

With ``--leave-one-out`` it then applies the rule (and other rules for choosing) to every
five of the six collections, the calibrations refitted on the five, and scores each choice
on the sixth: what the rule is worth on a collection it never saw.

``--short 16,32`` adds candidates whose MiniLM weight moves to the background BM25 on
documents shorter than that many words, in proportion (a document of n < L words keeps
n / L of it).

Run: ``python -m benchmarks.experiments.default_pool [--leads 20] [--leave-one-out] [--short
16,32]`` (embeddings cached in ``.cache/embeddings.sqlite``; from an empty cache, encoding
the pool's documents and passages takes about two hours on two CPU cores; with them cached,
a run with ``--leave-one-out`` took 12 minutes, 5 of them reading the pool).
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time

import numpy as np

from benchmarks.common import DATA as SHARED
from benchmarks.common import use_embedding_cache

POOL = {
    "SciFact train": (SHARED / "beir" / "scifact", "train"),
    "NFCorpus dev": (SHARED / "beir" / "nfcorpus", "dev"),
    "CISI": (SHARED / "classic" / "cisi", "test"),
    "CACM": (SHARED / "classic" / "cacm", "test"),
    "MEDLINE": (SHARED / "classic" / "med", "test"),
    "LISA": (SHARED / "classic" / "lisa", "test"),
}
PASSAGE_WORDS = 48
LEADS = (10, 20)
AVGDL = (100.0, 400.0)
QUERY_NORMALIZATION = (0.25, 0.5, 0.75, 1.0)
STEP = 0.025
REFERENCES = ("bm25", "embedding", "hybrid-relative")
TOLERANCE = 0.5  # nDCG@10 x 100 below hybrid-relative that still meets the target
#: the lexical readings ``--short`` candidates and the proximity candidates combine (the
#: best ones; the grid of four weights stays small)
SHORT_LEXICAL = (
    "bm25_background/avgdl 100, qn 0.75",
    "bm25_background/avgdl 400, qn 0.5",
    "bm25_background/avgdl 400, qn 0.75",
)
TIE = 0.1  # largest regrets this close count as equal (differences below noise)


class Collection:
    """One pool collection's candidates as padded (queries x 100) arrays: labels, gains,
    the ideal DCG@10 of each judged query, and every signal's raw scores."""

    def __init__(self, name: str, data, cands) -> None:
        self.name, self.data = name, data
        judged = [q for q, j in data.qrels.items() if q in data.queries and max(j.values()) > 0]
        self.qids = judged
        width = max((len(cands.get(q, [])) for q in judged), default=1)
        self.ids = [[d for d, _ in cands.get(q, [])] for q in judged]
        self.mask = np.zeros((len(judged), width), dtype=bool)
        self.gains = np.zeros((len(judged), width))
        for i, (q, ids) in enumerate(zip(judged, self.ids, strict=True)):
            self.mask[i, : len(ids)] = True
            self.gains[i, : len(ids)] = [max(0, data.qrels[q].get(d, 0)) for d in ids]
        ideal = [sorted((g for g in data.qrels[q].values() if g > 0), reverse=True) for q in judged]
        discount = 1.0 / np.log2(np.arange(2, 12))
        self.idcg = np.array([sum(g * discount[k] for k, g in enumerate(i[:10])) for i in ideal])
        self.discount = discount
        self.raw: dict[str, np.ndarray] = {}  # each signal's scores
        self.reference: dict[str, np.ndarray] = {}  # each reference reranker's scores

    def add(self, key: str, rows: dict[str, np.ndarray]) -> None:
        matrix = np.zeros(self.mask.shape)
        for i, q in enumerate(self.qids):
            if q in rows:
                matrix[i, : len(rows[q])] = rows[q]
        self.raw[key] = matrix

    def run_scores(self, run: dict[str, dict[str, float]]) -> np.ndarray:
        """A reranker's run (query -> document -> score) as a padded array."""
        out = np.zeros(self.mask.shape)
        for i, (q, ids) in enumerate(zip(self.qids, self.ids, strict=True)):
            out[i, : len(ids)] = [run.get(q, {}).get(d, 0.0) for d in ids]
        return out

    def labels(self) -> np.ndarray:
        return (self.gains[self.mask] >= 1).astype(float)

    def per_query(self, scores: np.ndarray) -> np.ndarray:
        """Each query's nDCG@10 x 100 when its candidates are ordered by ``scores`` (ties
        keep the first stage's order)."""
        masked = np.where(self.mask, scores, -np.inf)
        order = np.argsort(-masked, axis=1, kind="stable")[:, :10]
        gains = np.take_along_axis(self.gains, order, axis=1)
        dcg = gains @ self.discount[: gains.shape[1]]
        return 100 * np.divide(dcg, self.idcg, out=np.zeros_like(dcg), where=self.idcg > 0)

    def ndcg(self, scores: np.ndarray) -> float:
        """Mean nDCG@10 x 100 of ordering each query's candidates by ``scores``."""
        return float(np.mean(self.per_query(scores)))


def standard_error(diffs: np.ndarray) -> float:
    """The standard error of the mean of paired per-query differences (rerankit's own, as
    ``rerankit eval --baseline`` and ``tune`` compute it)."""
    from rerankit.eval.metrics import paired_standard_error

    return paired_standard_error(diffs)


def pooled_labels(pool: list[Collection]) -> tuple[np.ndarray, np.ndarray]:
    """The labels of every judged pair of ``pool`` and their weights (each collection
    weighting equally), in the order of ``c.raw[k][c.mask]`` over the collections."""
    y = np.concatenate([c.labels() for c in pool])
    weight = np.concatenate([np.full(c.mask.sum(), 1.0 / c.mask.sum()) for c in pool])
    return y, weight


def calibrations(pool: list[Collection], keys) -> dict:
    """Each signal's logistic calibration, fitted on the pooled judged pairs of ``pool``
    (each collection weighted equally)."""
    from rerankit.calibration import fit_calibration

    y, weight = pooled_labels(pool)
    return {
        k: fit_calibration(
            np.concatenate([c.raw[k][c.mask] for c in pool]), y, sample_weight=weight
        )
        for k in keys
    }


def fuse(coll: Collection, cal: dict, roles: dict[str, str], weights) -> np.ndarray:
    """A candidate's fused logit on every candidate document of ``coll``."""
    logits = [cal[k].logit(coll.raw[k]) for k in roles.values()]
    return combine(coll, roles, weights, logits)


def combine(coll: Collection, roles: dict[str, str], weights, logits) -> np.ndarray:
    """The weighted sum of the signals' logits; when ``roles.short`` is a length L (a
    ``--short`` candidate), a document of n < L words moves the share 1 - n/L of MiniLM's
    weight to BM25."""
    total = sum(x * m for x, m in zip(weights, logits, strict=True))
    short = getattr(roles, "short", None)
    if not short:
        return total
    f = np.minimum(1.0, coll.raw["words"] / short)
    names = list(roles)
    bm25 = logits[names.index("bm25_background")]
    model = sum(
        x * m for r, x, m in zip(names, weights, logits, strict=True) if r != "bm25_background"
    )
    share = sum(x for r, x in zip(names, weights, strict=True) if r != "bm25_background")
    return total - (1 - f) * model + (1 - f) * share * bm25


class Roles(dict):
    """Role -> signal key, and the length in words below which MiniLM's weight moves to
    BM25 (0: never; ``--short``)."""

    short: float = 0.0


def weight_grid(n: int) -> list[tuple[float, ...]]:
    """Every way to split weight 1 among ``n`` signals in steps of STEP, each above 0."""
    units = round(1 / STEP)
    return [
        tuple(c / units for c in combo)
        for combo in itertools.product(range(1, units + 1), repeat=n)
        if sum(combo) == units
    ]


def candidate_families(lexical, leads, shorts=()) -> list[tuple[str, dict[str, str]]]:
    """(family label, role -> signal key) for every combination of signals and readings;
    ``shorts``: lengths for the candidates that move MiniLM's weight to BM25 on shorter
    documents."""
    families = []
    for lex in lexical:
        families.append(("whole + bm25", {"embedding": "embedding", "bm25_background": lex}))
        for lead in leads:
            p = f"passage/lead {lead}"
            families.append(
                (f"passage (lead {lead}) + bm25", {"passage": p, "bm25_background": lex})
            )
            families.append(
                (
                    f"passage (lead {lead}) + whole + bm25",
                    {"passage": p, "embedding": "embedding", "bm25_background": lex},
                )
            )
    for lex in lexical:
        if lex not in SHORT_LEXICAL:
            continue
        for lead in leads:
            families.append(
                (
                    f"passage (lead {lead}) + whole + bm25 + proximity",
                    {
                        "passage": f"passage/lead {lead}",
                        "embedding": "embedding",
                        "bm25_background": lex,
                        "proximity": proximity_of(lex),
                    },
                )
            )
    for short in shorts:
        for lex in lexical:
            if lex not in SHORT_LEXICAL:
                continue
            for lead in leads:
                roles = Roles(
                    {
                        "passage": f"passage/lead {lead}",
                        "embedding": "embedding",
                        "bm25_background": lex,
                    }
                )
                roles.short = short
                families.append((f"passage (lead {lead}) + whole + bm25, short < {short:g}", roles))
    return families


def proximity_of(lexical: str) -> str:
    """The key of the proximity signal read like the ``lexical`` BM25 reading (the same
    average length and query normalisation)."""
    return "proximity/" + lexical.split("/", 1)[1]


def score_candidates(pool: list[Collection], families, cal: dict) -> list[tuple]:
    """(label, roles, weights, collection -> nDCG@10) for every candidate default."""
    out = []
    for label, roles in families:
        logits = {c.name: [cal[k].logit(c.raw[k]) for k in roles.values()] for c in pool}
        for w in weight_grid(len(roles)):
            cells = {c.name: c.ndcg(combine(c, roles, w, logits[c.name])) for c in pool}
            out.append((label, roles, w, cells))
    return out


def regret(cells: dict[str, float], refs: dict, names=None) -> list[float]:
    """How far a candidate falls short of the targets on each collection of ``names``
    (every collection in ``cells`` when None): at least the first stage, at least
    ``embedding``, within TOLERANCE of ``hybrid-relative``."""
    out = []
    for name in cells if names is None else names:
        r = refs[name]
        need = max(r["first stage"], r["embedding"], r["hybrid-relative"] - TOLERANCE)
        out.append(max(0.0, need - cells[name]))
    return out


def rule_key(candidates: list[tuple], refs: dict, names=None):
    """The sort key of the rule on the collections ``names`` (every one when None): no
    regret anywhere if any candidate manages it; else every candidate whose largest regret
    is within TIE of the smallest; then the best mean nDCG@10."""
    names = list(candidates[0][3]) if names is None else names
    least = min(max(regret(c[3], refs, names)) for c in candidates)
    bound = 0.0 if least == 0 else least + TIE

    def key(c):
        worst = max(regret(c[3], refs, names))
        mean = statistics.fmean(c[3][n] for n in names)
        return (worst > bound, worst if worst > bound else 0.0, -mean)

    return key


def describe(c: tuple) -> str:
    """A candidate's family, weights and readings in words."""
    lab, rl, ws, _ = c
    parts = [
        f"{r} {x:.2f} ({rl[r].split('/', 1)[1] if '/' in rl[r] else 'whole'})"
        for r, x in zip(rl, ws, strict=True)
    ]
    return f"{lab}: " + ", ".join(parts)


def rules(candidates: list[tuple], refs: dict, names: list[str]) -> dict:
    """Selection rules compared by :func:`leave_one_out`: each one's sort key (smallest
    first) over the collections ``names``."""

    def mean(c) -> float:
        return statistics.fmean(c[3][n] for n in names)

    return {
        "worst collection (the default's rule)": rule_key(candidates, refs, names),
        "best mean": lambda c: -mean(c),
        "least mean regret": lambda c: (statistics.fmean(regret(c[3], refs, names)), -mean(c)),
        "least largest regret": lambda c: (max(regret(c[3], refs, names)), -mean(c)),
        "maximin against hybrid-relative": lambda c: (
            -min(c[3][n] - refs[n]["hybrid-relative"] for n in names)
        ),
    }


def leave_one_out(pool: list[Collection], refs: dict, keys, families) -> None:
    """Each selection rule applied to every five of the six collections (calibrations
    fitted on those five too), and what its choice scores on the sixth: how a rule's
    choice fares on a collection it never saw."""
    rows: dict[str, list[tuple[str, float, float, str]]] = {}
    against: list[str] = []  # the default's rule's choice against hybrid-relative, per query
    for held in pool:
        names = [c.name for c in pool if c is not held]
        cal = calibrations([c for c in pool if c is not held], keys)
        candidates = score_candidates(pool, families, cal)
        for i, (rule, key) in enumerate(rules(candidates, refs, names).items()):
            pick = min(candidates, key=key)
            if i == 0:  # the default's rule
                diff = held.per_query(fuse(held, cal, pick[1], pick[2])) - held.per_query(
                    held.reference["hybrid-relative"]
                )
                against.append(
                    f"  {held.name}: {diff.mean():+.2f} +- {standard_error(diff):.2f} "
                    f"({len(diff)} queries)"
                )
            value = pick[3][held.name]
            rows.setdefault(rule, []).append(
                (held.name, value, regret(pick[3], refs, [held.name])[0], describe(pick))
            )
        print(f"left out {held.name}: done", file=sys.stderr, flush=True)
    print(
        "\nLeave one collection out: each rule chooses on the other five collections "
        "(calibrations fitted there too); nDCG@10 x 100 of its choice on the one left out "
        "(regret: short of its targets):\n"
    )
    print("| left out | first stage | embedding | hybrid-relative | " + " | ".join(rows) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(rows))
    for i, held in enumerate(pool):
        r = refs[held.name]
        cells = " | ".join(
            f"{rows[rule][i][1]:.2f}" + (f" ({rows[rule][i][2]:.2f})" if rows[rule][i][2] else "")
            for rule in rows
        )
        print(
            f"| {held.name} | {r['first stage']:.2f} | {r['embedding']:.2f} | "
            f"{r['hybrid-relative']:.2f} | {cells} |"
        )
    means = " | ".join(f"{statistics.fmean(x[1] for x in rows[rule]):.2f}" for rule in rows)
    print(f"| mean | | | | {means} |")
    regrets = " | ".join(f"{statistics.fmean(x[2] for x in rows[rule]):.2f}" for rule in rows)
    print(f"| mean regret | | | | {regrets} |")
    worst = " | ".join(f"{max(x[2] for x in rows[rule]):.2f}" for rule in rows)
    print(f"| largest regret | | | | {worst} |")
    print(
        "\nthe default's rule's choice on the collection left out, minus hybrid-relative "
        "(+- the standard error over queries of the paired difference):"
    )
    print("\n".join(against))
    print("\nchoices:")
    for rule in rows:
        for name, _, _, text in rows[rule]:
            print(f"  {rule}, without {name}: {text}")


def signals(coll: Collection, cands, readers, lexical) -> None:
    """Every signal's raw scores for every candidate of ``coll``."""
    rows: dict[str, dict[str, np.ndarray]] = {key: {} for key in [*readers, *lexical]}
    for q in coll.qids:
        ranked = cands.get(q, [])
        if not ranked:
            continue
        texts = [coll.data.text(d) for d, _ in ranked]
        query = coll.data.queries[q]
        for key, scorer in [*readers.items(), *lexical.items()]:
            rows[key][q] = scorer.score_texts(query, texts)
    for key, value in rows.items():
        coll.add(key, value)


def prepare(only: list[str] | None) -> None:
    """Keep the ``only`` collections of the pool (every one when None), cache embeddings in
    ``.cache/embeddings.sqlite``, and exit naming any collection that is not found."""
    if only:
        for name in set(POOL) - set(only):
            del POOL[name]
    use_embedding_cache()
    missing = [name for name, (path, _) in POOL.items() if not path.exists()]
    if missing:
        sys.exit(f"collections not found under {SHARED}: {', '.join(missing)}")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", help="a pool collection by its label (repeatable; a quick look)"
    )
    parser.add_argument(
        "--leads",
        default=",".join(map(str, LEADS)),
        help=f"passage lead lengths to compare (default {','.join(map(str, LEADS))})",
    )
    parser.add_argument(
        "--leave-one-out",
        action="store_true",
        help="also apply each selection rule to every five collections and score its choice "
        "on the sixth",
    )
    parser.add_argument(
        "--short",
        default="",
        help="lengths in words (comma-separated): also try candidates that move MiniLM's weight "
        "to BM25 on documents shorter than that, in proportion",
    )
    args = parser.parse_args()
    shorts = tuple(float(x) for x in args.short.split(",") if x)
    leads = tuple(int(x) for x in args.leads.split(","))
    prepare(args.only)
    from rerankit import load
    from rerankit.calibration import expected_calibration_error, fit_calibration, sigmoid
    from rerankit.eval import load_beir
    from rerankit.eval.first_stage import first_stage
    from rerankit.eval.runner import run_pipeline
    from rerankit.rerankers.hybrid import background_bm25
    from rerankit.scorers import EmbeddingScorer
    from rerankit.scorers.lexical import Analyzer
    from rerankit.scorers.proximity import ProximityScorer

    embedding = EmbeddingScorer()
    readers = {"embedding": embedding}
    for lead in leads:
        readers[f"passage/lead {lead}"] = embedding.with_passages(PASSAGE_WORDS, lead=lead)
    analyzer = Analyzer(language="en")
    lexical = {
        f"bm25_background/avgdl {a:g}, qn {p:g}": background_bm25(
            analyzer, avgdl=a, query_normalization=p
        )
        for a, p in itertools.product(AVGDL, QUERY_NORMALIZATION)
    }
    proximity = {
        proximity_of(lex): ProximityScorer(
            analyzer=analyzer,
            avgdl=float(lex.split("avgdl ")[1].split(",")[0]),
            query_normalized=float(lex.split("qn ")[1]),
        )
        for lex in SHORT_LEXICAL
    }
    pool, refs = [], {}
    for name, (path, split) in POOL.items():
        start = time.perf_counter()
        data = load_beir(path, split)
        cands = first_stage(data, "auto", 100)
        coll = Collection(name, data, cands)
        signals(coll, cands, readers, {**lexical, **proximity})
        coll.add("first stage", {q: np.array([s for _, s in c]) for q, c in cands.items()})
        if shorts:  # each candidate's length in words, for the --short candidates
            coll.add(
                "words",
                {q: np.array([len(data.text(d).split()) for d, _ in c]) for q, c in cands.items()},
            )
        coll.reference["first stage"] = coll.raw["first stage"]
        refs[name] = {"first stage": coll.ndcg(coll.raw["first stage"])}
        for ref in REFERENCES:
            run = run_pipeline(ref, load(ref), data, cands, first_stage_scores=False)
            coll.reference[ref] = coll.run_scores(run.run)
            refs[name][ref] = coll.ndcg(coll.reference[ref])
        pool.append(coll)
        bare = sum(len(doc.get("text", "").split()) < 5 for doc in data.corpus.values())
        print(
            f"{name}: {len(coll.qids)} queries in {time.perf_counter() - start:.0f} s; "
            f"{bare} of {len(data.corpus)} documents have under 5 words besides the title",
            file=sys.stderr,
            flush=True,
        )

    keys = [*readers, *lexical, *proximity]
    cal = calibrations(pool, keys)
    families = candidate_families(lexical, leads, shorts)
    candidates = score_candidates(pool, families, cal)
    least = min(max(regret(c[3], refs)) for c in candidates)
    candidates.sort(key=rule_key(candidates, refs))
    chosen = candidates[0]
    _, roles, w, cells = chosen

    names = [c.name for c in pool]
    best_of: dict[str, tuple] = {}  # the best candidate of each family, in rule order
    for c in candidates:
        best_of.setdefault(c[0], c)
    best_by_lexical: dict[str, tuple] = {}
    for c in candidates:
        best_by_lexical.setdefault(c[1]["bm25_background"], c)
    print(
        f"{len(candidates)} candidates considered; rule: no regret anywhere, else a largest "
        f"regret within {TIE} of the smallest ({least:.2f}), then the best mean (targets: "
        ">= first stage, >= embedding, >= hybrid-relative - 0.5)\n"
    )
    for coll in pool:
        r = refs[coll.name]
        print(f"{coll.name} ({len(coll.qids)} queries), nDCG@10 x 100:\n")
        print("| reranker | nDCG@10 |")
        print("|---|---:|")
        for key in ("first stage", *REFERENCES):
            print(f"| {key} | {r[key]:.2f} |")
        print(f"| **chosen**: {describe(chosen)} | **{cells[coll.name]:.2f}** |")
        for c in best_of.values():
            if c is not chosen:
                print(f"| best {describe(c)} | {c[3][coll.name]:.2f} |")
        print()
    for title, table in (
        ("family", best_of.values()),
        ("lexical signal (its best candidate)", best_by_lexical.values()),
    ):
        print(
            f"The best candidate of each {title}, nDCG@10 x 100 (regret: short of the targets):\n"
        )
        print("| candidate | " + " | ".join(names) + " | mean | largest regret |")
        print("|---|" + "---:|" * (len(names) + 2))
        for c in table:
            row = " | ".join(f"{c[3][n]:.2f}" for n in names)
            mean, worst = statistics.fmean(c[3].values()), max(regret(c[3], refs))
            print(f"| {describe(c)} | {row} | {mean:.2f} | {worst:.2f} |")
    row = " | ".join(f"{refs[n]['hybrid-relative']:.2f}" for n in names)
    mean_hr = statistics.fmean(refs[n]["hybrid-relative"] for n in names)
    print(f"| hybrid-relative (reference) | {row} | {mean_hr:.2f} | |")
    print(
        "\ntargets of the chosen default per collection (+- the standard error over queries "
        "of the paired difference):"
    )
    for coll in pool:
        n, r, v = coll.name, refs[coll.name], cells[coll.name]
        mine = coll.per_query(fuse(coll, cal, roles, w))
        se = {
            ref: standard_error(mine - coll.per_query(coll.reference[ref]))
            for ref in ("first stage", *REFERENCES)
        }
        fs_ok = "ok" if v >= r["first stage"] else "BELOW"
        print(
            f"  {n}: {v:.2f}; first stage {r['first stage']:.2f} "
            f"({v - r['first stage']:+.2f} +- {se['first stage']:.2f}, {fs_ok}), "
            f"embedding {r['embedding']:.2f} ({v - r['embedding']:+.2f} +- "
            f"{se['embedding']:.2f}, {'ok' if v >= r['embedding'] else 'BELOW'}), "
            f"hybrid-relative {r['hybrid-relative']:.2f} ({v - r['hybrid-relative']:+.2f} +- "
            f"{se['hybrid-relative']:.2f}: "
            f"{'ok' if v >= r['hybrid-relative'] - TOLERANCE else 'MISSED'})"
        )

    # the output calibration of the chosen fusion, pooled pairs weighted per collection
    logit = np.concatenate([fuse(c, cal, roles, w)[c.mask] for c in pool])
    y, weight = pooled_labels(pool)
    out = fit_calibration(logit, y, sample_weight=weight)
    source = next(iter(roles.values()))
    lead = int(source.split()[-1]) if source.startswith("passage") else 0
    lex = roles["bm25_background"]
    avgdl = float(lex.split("avgdl ")[1].split(",")[0])
    qn = float(lex.split("qn ")[1])
    print("\nconstants (rerankit/rerankers/hybrid.py, HYBRID_CALIBRATION):")
    print(f'  "avgdl": {avgdl:g}, "query_normalization": {qn:g},')
    print(f'  "passage_words": {PASSAGE_WORDS}, "passage_lead": {lead},')
    print("  weights: " + ", ".join(f'"{r}": {x:g}' for r, x in zip(roles, w, strict=True)))
    for r, k in roles.items():
        print(f"  calibration {r}: {cal[k].as_dict()}")
    print(f"  output calibration: {out.as_dict()}")
    print("\nexpected calibration error (10 bins) of the chosen default, per collection:")
    for coll in pool:
        p = sigmoid(out.logit(fuse(coll, cal, roles, w)[coll.mask]))
        print(
            f"  {coll.name}: ECE {expected_calibration_error(p, coll.labels()):.4f} over "
            f"{coll.mask.sum()} pairs ({int(coll.labels().sum())} relevant)"
        )

    print("\nthe library's `hybrid` (texts only) on the pool, as installed:")
    for coll in pool:
        cands = first_stage(coll.data, "auto", 100)
        run = run_pipeline("hybrid", load("hybrid"), coll.data, cands, first_stage_scores=False)
        value = coll.ndcg(coll.run_scores(run.run))
        print(f"  {coll.name}: {value:.2f} (chosen row: {cells[coll.name]:.2f})")
    if args.leave_one_out:
        leave_one_out(pool, refs, keys, families)


if __name__ == "__main__":
    main()
