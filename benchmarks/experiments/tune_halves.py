"""Does ``rerankit tune`` ever write a pipeline worse than the default? Every learning path
(fusion weights, ``--calibrate``, ``--method ltr``) on the classic collections split into
halves, trained on one and reported on the other, under three adoption rules.

Decided: ``tune``'s adoption rule, twice the larger of the two noise estimates, for
people's judgments and a judge's labels alike. Reported in docs/measured.md.

For CISI, CACM, MEDLINE and LISA (each with its shipped BM25 top 100): ``rerankit tune
--train-split test:odd --test-split test:even`` and the other way round, for each method,
with ``--keep-learned`` so that the test report shows the learned pipeline beside the
default ``hybrid``. From the verdict ``tune`` prints (the cross-validated gain over the
default on the training half, its standard error over queries and its corrected standard
error over folds) the script decides what each rule would have written:

* ``queries``: adopt when the gain exceeds the per-query standard error (the first rule);
* ``both``: adopt when it exceeds the larger of the two (the rule after it);
* ``twice``: adopt when it exceeds twice the larger of the two (``tune``'s rule now, for
  people's judgments and a judge's labels alike).

Prints one row per collection, direction and method (the test nDCG@10 of the learned
pipeline and of the default, and what each rule writes, minus the default), then per
method and rule: how often it adopted, the mean and the worst of written - default. The
default is the ``hybrid`` row of ``tune``'s test report: given the first-stage scores for
fusion and LTR, texts only (the calibrated hybrid) for ``--calibrate``.

Run: ``python -m benchmarks.experiments.tune_halves [--methods fusion,calibrate,ltr]`` (embeddings
cached in ``.cache/embeddings.sqlite``; about 15 minutes on two CPU cores).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import CLASSIC, use_embedding_cache

SETS = {"CISI": "cisi", "CACM": "cacm", "MEDLINE": "med", "LISA": "lisa"}
METHODS = {"fusion": [], "calibrate": ["--calibrate"], "ltr": ["--method", "ltr"]}
RULES = ("queries_rule", "both_rule", "twice_rule")
VERDICT = re.compile(
    r"gain ([+-][\d.]+) \(noise [\d.]+: standard error ([\d.]+) over queries, "
    r"([\d.]+) over folds"
)


def ndcg_row(printed: str, pipeline: str) -> float:
    """nDCG@10 of ``pipeline`` in the last table ``tune`` printed (the test report)."""
    rows = re.findall(rf"^\| {re.escape(pipeline)} \| ([\d.]+) \|", printed, re.MULTILINE)
    if not rows:
        raise RuntimeError(f"no test row for {pipeline!r} in tune's output")
    return float(rows[-1])


def run(folder: Path, train: str, test: str, method: str, work: Path) -> dict:
    out = work / f"{folder.name}-{train}-{method}.toml"
    cmd = [
        sys.executable,
        "-m",
        "rerankit",
        "tune",
        "--data",
        str(folder),
        "--train-split",
        f"test:{train}",
        "--test-split",
        f"test:{test}",
        *METHODS[method],
        "--keep-learned",
        "--no-progress",
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    found = VERDICT.search(done.stdout)
    if found is None:
        raise RuntimeError(f"no verdict in tune's output:\n{done.stdout[-2000:]}")
    gain, by_query, by_fold = (float(x) for x in found.groups())
    return {
        "gain": gain,
        "by_query": by_query,
        "by_fold": by_fold,
        "learned": ndcg_row(done.stdout, out.stem),
        "default": ndcg_row(done.stdout, "hybrid"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",")]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        sys.exit(f"--methods: unknown {unknown}; choose from {', '.join(METHODS)}")
    missing = [name for name in SETS.values() if not (CLASSIC / name).exists()]
    if missing:
        sys.exit(f"collections not found under {CLASSIC}: {', '.join(missing)}")
    use_embedding_cache()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, name in SETS.items():
            for train, test in (("odd", "even"), ("even", "odd")):
                for method in methods:
                    r = run(CLASSIC / name, train, test, method, Path(tmp))
                    r["queries_rule"] = r["gain"] > r["by_query"]
                    r["both_rule"] = r["gain"] > max(r["by_query"], r["by_fold"])
                    r["twice_rule"] = r["gain"] > 2 * max(r["by_query"], r["by_fold"])
                    rows.append((label, f"{train} -> {test}", method, r))
                    print(f"{label} {train} {method}: done", file=sys.stderr, flush=True)
    print("nDCG@10 x 100 on the test half; gain and standard errors: cross-validated on the")
    print("training half; written - default under each rule (adopted: *)\n")
    print(
        "| collection | train -> test | method | CV gain | SE queries | SE folds | "
        "test: learned | test: default | rule `queries` | rule `both` | rule `twice` |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def written(r: dict, rule: str) -> float:
        return r["learned"] - r["default"] if r[rule] else 0.0

    for label, way, method, r in rows:
        cells = [f"{written(r, rule):+.2f}{'*' if r[rule] else ''}" for rule in RULES]
        print(
            f"| {label} | {way} | {method} | {r['gain']:+.2f} | {r['by_query']:.2f} | "
            f"{r['by_fold']:.2f} | {r['learned']:.2f} | {r['default']:.2f} | "
            f"{' | '.join(cells)} |"
        )
    print("\n| method | rule | adopted | written - default: mean | worst | best |")
    print("|---|---|---:|---:|---:|---:|")
    for method in methods:
        mine = [r for _, _, m, r in rows if m == method]
        for rule in RULES:
            diffs = [written(r, rule) for r in mine]
            print(
                f"| {method} | {rule.split('_')[0]} | {sum(r[rule] for r in mine)} of "
                f"{len(mine)} | {statistics.fmean(diffs):+.2f} | {min(diffs):+.2f} | "
                f"{max(diffs):+.2f} |"
            )


if __name__ == "__main__":
    main()
