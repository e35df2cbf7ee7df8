"""docs/compatible.md's sections for code moving from sentence-transformers' CrossEncoder,
AnswerDotAI's rerankers and FlashRank: each example runs as written and prints what its
comment shows, the CrossEncoder.rank recipe gives rank's own answer on a model folder, and
what the page says differs (or does not) is what rerankit does."""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rerankit

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "compatible.md").read_text(encoding="utf-8")
QUERY = "how do vaccines train the immune system"


def _section(heading: str) -> str:
    """The page's text under ``heading``, up to the next heading of its level or above
    (a comment line in a code block is no heading)."""
    lines = PAGE[PAGE.index(heading + "\n") + len(heading) + 1 :].splitlines(keepends=True)
    level, fenced, kept = len(heading.split(" ")[0]), False, []
    for line in lines:
        fenced ^= line.lstrip().startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", line):
            break
        kept.append(line)
    return "".join(kept)


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SHOWN = [
    block
    for heading in ("## Coming from rerankers or FlashRank", "## Python APIs of earlier projects")
    for block in _blocks(_section(heading))
]


def test_the_sections_have_their_examples():
    assert len(SHOWN) == 3  # rerankers, FlashRank, the entity reranker
    assert len(_blocks(_section("## Coming from sentence-transformers' CrossEncoder"))) == 1


@pytest.mark.parametrize("block", SHOWN, ids=["rerankers", "flashrank", "entity-reranker"])
def test_an_example_prints_what_its_comment_shows(block):
    last = block.strip().splitlines()[-1]
    assert last.startswith("print(") and "  # " in last, last
    shown = last.split("  # ", 1)[1]
    assert _run(block).strip() == shown


def test_the_cross_encoder_rank_recipe_gives_ranks_answer(bert_dir):
    from sentence_transformers import CrossEncoder

    (block,) = _blocks(_section("## Coming from sentence-transformers' CrossEncoder"))
    assert '"./my-ce"' in block
    space: dict = {}
    exec(block.replace('"./my-ce"', repr(str(bert_dir))), space)  # the page's code
    theirs = CrossEncoder(str(bert_dir)).rank(
        space["query"], space["docs"], top_k=1, return_documents=True
    )
    ours = space["ranks"]
    keys = [["corpus_id", "score", "text"]]
    assert [sorted(r) for r in ours] == [sorted(r) for r in theirs] == keys
    assert ours[0]["corpus_id"] == theirs[0]["corpus_id"]
    assert ours[0]["text"] == theirs[0]["text"] == space["docs"][ours[0]["corpus_id"]]
    assert ours[0]["score"] == pytest.approx(float(theirs[0]["score"]), abs=1e-5)
    predicted = CrossEncoder(str(bert_dir)).predict([(space["query"], d) for d in space["docs"]])
    assert space["scores"].tolist() == pytest.approx(predicted.tolist(), abs=1e-5)


def test_top_k_gives_a_result_to_iterate_index_and_count():
    docs = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells.", "Solar panels."]
    result = rerankit.rerank(QUERY, docs, reranker="bm25")
    best = result.top_k(2)
    assert len(best) == 2 and best[0] is result[0] and list(best) == list(result)[:2]
    assert [r.rank for r in best] == [1, 2]
    with pytest.raises(TypeError):
        best[0]["text"]  # attributes only, as the page says
    assert best[0].id is None and best[0].index == docs.index(best[0].document)


def test_a_pair_scores_the_same_alone_as_among_others():
    """The page's stand-in for rerankers' ``ranker.score(query, doc)``."""
    docs = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells."]
    among = {r.document: r.score for r in rerankit.rerank(QUERY, docs)}
    for doc in docs:
        assert rerankit.rerank(QUERY, [doc])[0].score == pytest.approx(among[doc], abs=1e-6)


def test_flashrank_passages_are_left_as_they_were():
    passages = [
        {"id": 1, "text": "Vaccine storage needs fridges.", "meta": {"source": "who.int"}},
        {"id": 2, "text": "A vaccine trains B and T cells to know a pathogen.", "meta": {}},
    ]
    before = copy.deepcopy(passages)
    out = rerankit.rerank(QUERY, passages, score_field="score").documents()
    assert passages == before
    assert [p["id"] for p in out] == [2, 1]
    assert all(set(p) == {"id", "text", "meta", "score"} for p in out)
    assert out[0]["score"] > out[1]["score"]


def test_a_model_folder_scores_as_rerankers_cross_encoder_does(bert_dir):
    """rerankers' cross-encoder ranker scores a pair with the model's raw logit
    (AutoModelForSequenceClassification on the tokenized pair); ``reranker="FOLDER"`` gives
    the same numbers, as the page says."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    docs = ["vaccines train the immune system", "solar panels convert light", "stock market"]
    query = "how do vaccines work"
    model = AutoModelForSequenceClassification.from_pretrained(str(bert_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dir))
    with torch.no_grad():
        inputs = tokenizer([(query, d) for d in docs], return_tensors="pt", padding=True)
        theirs = model(**inputs).logits.squeeze(-1).tolist()
    result = rerankit.rerank(query, docs, reranker=str(bert_dir))
    assert result.score_scale == "logit"
    ours = {r.index: r.score for r in result}
    assert [ours[i] for i in range(len(docs))] == pytest.approx(theirs, abs=1e-5)


def test_the_langchain_adapter_goes_where_langchains_rerankers_went():
    """docs/integrations.md: ``RerankitCompressor`` takes the place of LangChain's
    ``CohereRerank``, ``FlashrankRerank`` or ``CrossEncoderReranker``: a document compressor,
    as they are, so a ``ContextualCompressionRetriever`` takes it."""
    compressors = pytest.importorskip("langchain_core.documents.compressor")
    from rerankit.integrations.langchain import RerankitCompressor

    assert issubclass(RerankitCompressor, compressors.BaseDocumentCompressor)
    page = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    assert "`CohereRerank`, `FlashrankRerank` or\n`CrossEncoderReranker`" in page


def test_rerankers_keywords_are_refused_naming_where_ids_and_metadata_go():
    """rerankers' ``rank(query, docs, doc_ids=..., metadata=...)`` moved as it is: the
    ``TypeError`` says that ids and metadata go on each ``rerankit.Document``, as the page
    does, and that way keeps them."""
    docs = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells."]
    with pytest.raises(TypeError) as refused:
        rerankit.rerank(QUERY, docs, reranker="bm25", doc_ids=["a", "b"], metadata=[{}, {}])
    said = str(refused.value)
    assert "'doc_ids' (use rerankit.Document(text, id=...)" in said
    assert "'metadata' (use rerankit.Document(text, metadata=...)" in said
    with pytest.raises(TypeError, match=r"'doc_ids' \(use rerankit\.Document\(text, id="):
        rerankit.load("bm25").rerank(QUERY, docs, doc_ids=["a", "b"])
    kept = rerankit.rerank(
        QUERY,
        [rerankit.Document(t, id=i, metadata={"n": i}) for i, t in zip("ab", docs, strict=True)],
    )
    assert {r.id: r.document.metadata for r in kept} == {"a": {"n": "a"}, "b": {"n": "b"}}


def test_the_pages_stand_ins_for_rerankers_docid_lookups():
    """compatible.md's lines for rerankers' ``get_result_by_docid`` and
    ``get_score_by_docid`` give the result and the score of the document with that id."""
    assert "`get_result_by_docid(doc_id)`: `{r.id: r for r in results}[doc_id]`" in PAGE
    assert "`get_score_by_docid(doc_id)`: `{r.id: r.score for r in results}[doc_id]`" in PAGE
    docs = ["Vaccine storage needs fridges.", "A vaccine trains B and T cells.", "Solar panels."]
    results = rerankit.rerank(
        QUERY, [rerankit.Document(t, id=f"d{i}") for i, t in enumerate(docs)], reranker="bm25"
    )
    result = {r.id: r for r in results}["d1"]
    assert result.text == docs[1] and result.index == 1 and result in list(results)
    assert {r.id: r.score for r in results}["d1"] == result.score


def test_the_adapters_take_the_cross_encoder_a_langchain_reranker_held(bert_dir):
    """docs/integrations.md: a model folder as ``reranker=`` scores with its raw logit, and
    ``CrossEncoderScorer(..., output="sigmoid")`` with sentence-transformers' sigmoid."""
    documents = pytest.importorskip("langchain_core.documents")
    from rerankit.integrations.langchain import RerankitCompressor
    from rerankit.scorers import CrossEncoderScorer

    texts = ["vaccines train the immune system", "solar panels convert light", "stock market"]
    docs = [documents.Document(page_content=t, id=f"d{i}") for i, t in enumerate(texts)]
    query = "how do vaccines work"
    logits = {f"d{r.index}": r.score for r in rerankit.rerank(query, texts, reranker=str(bert_dir))}
    for reranker, expect in (
        (str(bert_dir), logits),
        (
            CrossEncoderScorer(str(bert_dir), output="sigmoid"),
            {k: 1 / (1 + math.exp(-v)) for k, v in logits.items()},
        ),
    ):
        got = RerankitCompressor(reranker=reranker, top_n=None).compress_documents(docs, query)
        assert {d.id: d.metadata["relevance_score"] for d in got} == pytest.approx(expect)
