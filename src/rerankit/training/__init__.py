"""Fitting rerankit to your judgments: a fusion (:mod:`.fusion_search`) or the calibrated
hybrid (:mod:`.calibrated`) for ``rerankit tune``, a LightGBM ranker (:mod:`.ltr`, for
``tune --method ltr``), the embedding model (:mod:`.embedding`, ``rerankit train``), and
the cross-validation that keeps a learned model only when it beats the default
(:mod:`.crossval`)."""
