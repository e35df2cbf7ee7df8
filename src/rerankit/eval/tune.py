"""The 0.1.0 path of the fusion search, which moved to :mod:`rerankit.training.fusion_search`
(``grid``, ``score_matrix``, ``pipeline_spec``, ``FUSIONS``, ``STRATEGIES``; the search
itself is :func:`rerankit.training.tune`). ``rerankit.eval`` may not import
``rerankit.training`` (see docs/layout.md), so importing this says where it went."""

raise ImportError(
    "rerankit.eval.tune moved to rerankit.training.fusion_search (grid, score_matrix, "
    "pipeline_spec, FUSIONS, STRATEGIES); its search is rerankit.training.tune: "
    "import from there",
    name="rerankit.eval.tune",
)
