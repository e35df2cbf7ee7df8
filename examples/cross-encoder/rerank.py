"""Rerank with a cross-encoder from the Hugging Face hub, scores as the sigmoid of its logit
(in (0, 1); ``score_scale`` "unit"): ``python examples/cross-encoder/rerank.py [MODEL]`` (a
hub id, by default cross-encoder/ms-marco-MiniLM-L6-v2, or the folder of a saved model)."""

import sys

import rerankit
from rerankit.scorers import CrossEncoderScorer

model = sys.argv[1] if len(sys.argv) > 1 else "cross-encoder/ms-marco-MiniLM-L6-v2"
docs = [
    "Vaccine storage needs fridges between 2 and 8 degrees.",
    "A vaccine trains the immune system: B and T cells learn to recognise the pathogen.",
    "Smallpox was declared eradicated in 1980.",
]
scorer = CrossEncoderScorer(model, output="sigmoid")  # the default, "logit", orders alike
result = rerankit.rerank("how do vaccines train the immune system", docs, reranker=scorer)
for doc in result:
    print(f"{doc.score:.3f}  {doc.text}")
