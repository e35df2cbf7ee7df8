"""Evaluation on your own data: BEIR-layout loading, a BM25 first stage, ranking metrics."""

from .data import Dataset, load_beir, load_qrels, load_run
from .metrics import mean_ndcg, ndcg_at_k

__all__ = ["Dataset", "load_beir", "load_qrels", "load_run", "mean_ndcg", "ndcg_at_k"]
