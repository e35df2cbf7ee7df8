"""Local neural scorers on tiny random-weight models, checked against direct computations."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="neural scorers need the 'torch' extra")
transformers = pytest.importorskip("transformers", reason="needs the 'torch' extra")

from rerankit import Document  # noqa: E402
from rerankit.backends import HardwareProfile  # noqa: E402
from rerankit.backends.pairs import PairEncoder  # noqa: E402
from rerankit.cache import scorer_identity  # noqa: E402
from rerankit.errors import ModelLoadError  # noqa: E402
from rerankit.rerankers import ScorerReranker  # noqa: E402
from rerankit.scorers import CausalLMScorer, CrossEncoderScorer  # noqa: E402
from rerankit.scorers.causal_lm import QWEN3_PREFIX, QWEN3_SUFFIX, format_pair  # noqa: E402

QUERY = "how do vaccines work"
DOCS = [
    "vaccines train the immune system to recognise pathogens",
    "the stock market fell sharply on tuesday",
    "solar panels convert light into electricity",
    "a virus",
    "what is the price of energy in the market and how do solar cells work with light",
    "immune cells",
]


# --- cross-encoder -----------------------------------------------------------------------


def test_without_torch_a_model_that_is_not_exported_says_both_ways_out(
    bert_dir, tiny_st, tmp_path, monkeypatch
):
    """Without sentence-transformers (a torch-free install), a cross-encoder or embedding
    model folder that was never exported cannot load: the error names the extra to install
    and the export that runs it without torch, with the command (as the scorers page
    promises)."""
    import shutil
    import sys

    from rerankit.errors import MissingDependencyError
    from rerankit.scorers import EmbeddingScorer

    # folders of their own: no model loaded earlier is reused
    ce, st = shutil.copytree(bert_dir, tmp_path / "ce"), shutil.copytree(tiny_st, tmp_path / "st")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    for scorer, folder in (
        (CrossEncoderScorer(str(ce), backend="torch"), ce),
        (EmbeddingScorer(str(st)), st),
    ):
        with pytest.raises(MissingDependencyError) as info:
            _ = scorer.model
        message = str(info.value)
        assert "pip install 'rerankit[torch]'" in message
        assert f"load FOLDER on ONNX Runtime after `rerankit export {folder} --out FOLDER`" in (
            message
        )


def direct_cross_encoder_logits(path, query, docs, max_length=128):
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    enc = tok(
        [query] * len(docs),
        docs,
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )
    with torch.no_grad():
        return model(**enc).logits.numpy()


def test_cross_encoder_equals_a_direct_forward(bert_dir):
    reference = direct_cross_encoder_logits(bert_dir, QUERY, DOCS)[:, 0]
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu")
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), reference, atol=1e-5)
    for spelling in ("sigmoid", "probability"):  # the older name still works
        prob = CrossEncoderScorer(str(bert_dir), device="cpu", output=spelling)
        assert prob.output == "sigmoid" and prob.score_scale == "unit"
        np.testing.assert_allclose(
            prob.score_texts(QUERY, DOCS), 1 / (1 + np.exp(-reference)), atol=1e-6
        )
    with pytest.raises(ValueError, match="output must be one of logit, sigmoid") as info:
        CrossEncoderScorer(str(bert_dir), device="cpu", output="softmax")
    said = str(info.value)  # what the two are, and that a two-label softmax is sigmoid
    assert "sigmoid in (0, 1), which for a two-label model is exactly the softmax" in said
    assert said.endswith("for 'softmax', use sigmoid")
    assert len(set(np.round(reference, 6))) > 1  # the tiny model does tell documents apart


def test_cross_encoder_batch_size_does_not_change_scores(bert_dir):
    one = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=1).score_texts(QUERY, DOCS)
    many = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=4).score_texts(QUERY, DOCS)
    np.testing.assert_allclose(one, many, atol=1e-5)


def test_cross_encoder_two_labels_scores_the_relevant_label(bert2_dir):
    logits = direct_cross_encoder_logits(bert2_dir, QUERY, DOCS)
    scorer = CrossEncoderScorer(str(bert2_dir), device="cpu", output="sigmoid")
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), softmax[:, 1], atol=1e-5)


def test_cross_encoder_truncates_long_documents(bert_dir):
    long_doc = " ".join(["vaccines immune"] * 400)
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu", max_length=32)
    got = scorer.score_texts(QUERY, [long_doc, DOCS[0]])
    reference = direct_cross_encoder_logits(bert_dir, QUERY, [long_doc, DOCS[0]], 32)[:, 0]
    np.testing.assert_allclose(got, reference, atol=1e-5)
    # the cut is said: a flag on the long document only, and a warning
    result = ScorerReranker(scorer).rerank(QUERY, [long_doc, "vaccines"])
    by_index = {r.index: r for r in result}
    assert by_index[0].flags == ("truncated:cross_encoder",)
    assert by_index[1].flags == ()
    said = "cross_encoder: {} longer than the model's 32 tokens with the query {} start"
    assert said.format("1 document", "was read on its") in result.warnings
    two = ScorerReranker(scorer).rerank(QUERY, [long_doc, long_doc + " more"])
    assert said.format("2 documents", "were read on their") in two.warnings
    # exactly at the limit is not cut: [CLS] query [SEP] document [SEP]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(bert_dir))
    q = len(tok(QUERY, add_special_tokens=False)["input_ids"])
    words = " ".join(["vaccines"] * 60)
    spans = tok(words, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    fits = words[: spans[32 - q - 3 - 1][1]]
    over = words[: spans[32 - q - 3][1]]
    assert scorer.too_long(QUERY, [fits, over]) == [1]


def only_second_logits(path, query, docs, max_length):
    """The pairs as a direct call reads them when told to cut the document only."""
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    enc = tok(
        [query] * len(docs),
        docs,
        padding=True,
        truncation="only_second",
        max_length=max_length,
        return_tensors="pt",
    )
    with torch.no_grad():
        return model(**enc).logits.numpy()[:, 0]


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_cross_encoder_keeps_the_query_whole_and_cuts_the_document(bert_dir, backend, tmp_path):
    query = "how do vaccines train the immune system to recognise a virus"  # 11 tokens
    long_doc = " ".join(["solar panels convert light"] * 40)
    docs = [long_doc, DOCS[0]]
    model = str(bert_dir)
    if backend == "onnx":
        from rerankit.backends.onnx import export

        model = str(export(model, tmp_path / "ce", kind="cross_encoder"))
    scorer = CrossEncoderScorer(model, device="cpu", max_length=24, backend=backend)
    got = scorer.score_texts(query, docs)
    np.testing.assert_allclose(got, only_second_logits(bert_dir, query, docs, 24), atol=1e-4)
    # the model read exactly the pairs a document-only cut gives, the query whole; "longest
    # first" (a plain tokenizer call's default) would have cut the query too
    tok = transformers.AutoTokenizer.from_pretrained(str(bert_dir))
    read = PairEncoder(tok.backend_tokenizer, 24).encode(query, docs).encodings[0].ids
    assert read == tok(query, long_doc, truncation="only_second", max_length=24)["input_ids"]
    assert read != tok(query, long_doc, truncation="longest_first", max_length=24)["input_ids"]
    q_ids = tok(query, add_special_tokens=False)["input_ids"]
    assert read[1 : 1 + len(q_ids)] == q_ids
    assert scorer.too_long(query, docs) == [0]


def test_cross_encoder_cuts_only_a_query_that_would_crowd_out_the_documents(bert_dir):
    query = " ".join(["vaccines immune"] * 20)  # 40 tokens, a 24-token model
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu", max_length=24)
    result = ScorerReranker(scorer).rerank(query, DOCS[:2])
    assert any("its last" in w and "tokens were not read" in w for w in result.warnings)
    # the documents still get their quarter of the input: 21 - 16 = 5 tokens each
    tok = transformers.AutoTokenizer.from_pretrained(str(bert_dir))
    q = tok.decode(tok(query, add_special_tokens=False)["input_ids"][:16])
    np.testing.assert_allclose(
        scorer.score_texts(query, DOCS[:2]),
        only_second_logits(bert_dir, q, DOCS[:2], 24),
        atol=1e-5,
    )


def test_cross_encoder_equals_sentence_transformers_predict_on_pairs_that_fit(bert2_dir):
    from sentence_transformers import CrossEncoder

    st = CrossEncoder(str(bert2_dir), device="cpu")
    reference = st.predict(
        [(QUERY, d) for d in DOCS], activation_fn=torch.nn.Identity(), convert_to_numpy=True
    )
    got = CrossEncoderScorer(str(bert2_dir), device="cpu", batch_size=2).logits(QUERY, DOCS)
    np.testing.assert_allclose(got, reference, atol=1e-5)


def test_cross_encoder_in_a_reranker(bert_dir):
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu")
    result = ScorerReranker(scorer).rerank(QUERY, DOCS)
    expected = np.argsort(-scorer.score_texts(QUERY, DOCS), kind="stable")
    assert [r.index for r in result] == expected.tolist()
    assert result[0].scores["cross_encoder"] == pytest.approx(result[0].score)


def test_unknown_model_is_a_load_error_naming_it(tmp_path):
    scorer = CrossEncoderScorer(str(tmp_path / "no-such-model"), device="cpu")
    with pytest.raises(ModelLoadError, match="no-such-model"):
        scorer.score_texts(QUERY, DOCS)
    # in a reranker it propagates instead of degrading: it is the caller's set-up
    with pytest.raises(ModelLoadError):
        ScorerReranker(scorer).rerank(QUERY, DOCS)


# --- causal LM (Qwen3-Reranker recipe) -----------------------------------------------------


def recipe_by_hand(path, query, docs, instruction=None, max_length=8192):
    """The official recipe, one document at a time (no padding at all)."""
    tok = transformers.AutoTokenizer.from_pretrained(path, padding_side="left")
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    prefix = tok.encode(QWEN3_PREFIX, add_special_tokens=False)
    suffix = tok.encode(QWEN3_SUFFIX, add_special_tokens=False)
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    instruction = instruction or (
        "Given a web search query, retrieve relevant passages that answer the query"
    )
    scores = []
    for d in docs:
        body = tok(
            [format_pair(instruction, query, d)],
            padding=False,
            truncation="longest_first",
            max_length=max_length - len(prefix) - len(suffix),
            add_special_tokens=False,
        )["input_ids"][0]
        ids = torch.tensor([prefix + body + suffix])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, -1]
        pair = torch.stack([logits[no], logits[yes]])
        scores.append(torch.log_softmax(pair, dim=0)[1].exp().item())
    return np.array(scores)


def test_causal_lm_equals_the_recipe_by_hand(qwen_dir):
    scorer = CausalLMScorer(str(qwen_dir), device="cpu", batch_size=4)
    reference = recipe_by_hand(qwen_dir, QUERY, DOCS)
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), reference, atol=1e-5)
    assert ((reference > 0) & (reference < 1)).all()
    assert len(set(np.round(reference, 6))) > 1


def test_causal_lm_custom_instructions(qwen_dir):
    instruction = "Judge whether the Document meets the requirements"
    scorer = CausalLMScorer(str(qwen_dir), device="cpu", instructions=instruction)
    assert scorer.instructions == instruction
    reference = recipe_by_hand(qwen_dir, QUERY, DOCS, instruction=instruction)
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), reference, atol=1e-5)
    default = recipe_by_hand(qwen_dir, QUERY, DOCS)
    assert not np.allclose(reference, default)  # the instruction is really in the prompt
    # instructions=, as an LLM judge's are named; instruction=, its earlier name, still works
    earlier = CausalLMScorer(str(qwen_dir), device="cpu", instruction=instruction)
    np.testing.assert_allclose(earlier.score_texts(QUERY, DOCS), reference, atol=1e-5)
    assert scorer_identity(earlier) == scorer_identity(scorer)  # one cache key for both
    with pytest.raises(TypeError, match="got instructions= and its earlier name instruction="):
        CausalLMScorer(str(qwen_dir), instructions=instruction, instruction=instruction)


@pytest.mark.parametrize(("batch_size", "sort_by_length"), [(1, True), (2, False), (6, True)])
def test_causal_lm_scores_do_not_depend_on_batching(qwen_dir, batch_size, sort_by_length):
    reference = CausalLMScorer(str(qwen_dir), device="cpu", batch_size=3).score_texts(QUERY, DOCS)
    scorer = CausalLMScorer(
        str(qwen_dir), device="cpu", batch_size=batch_size, sort_by_length=sort_by_length
    )
    np.testing.assert_allclose(scorer.score_texts(QUERY, DOCS), reference, atol=1e-5)


def test_causal_lm_truncation_keeps_the_template(qwen_dir):
    max_length = 96
    scorer = CausalLMScorer(str(qwen_dir), device="cpu", max_length=max_length)
    tok = transformers.AutoTokenizer.from_pretrained(qwen_dir)
    prefix = tok.encode(QWEN3_PREFIX, add_special_tokens=False)
    suffix = tok.encode(QWEN3_SUFFIX, add_special_tokens=False)
    long_doc = " ".join(["vaccines train the immune system"] * 100)
    long_ids, short_ids = scorer.encode_pairs(QUERY, [long_doc, "a virus"])
    assert len(long_ids) == max_length
    assert long_ids[: len(prefix)] == prefix
    assert long_ids[-len(suffix) :] == suffix
    assert len(short_ids) < max_length and short_ids[-len(suffix) :] == suffix
    got = scorer.score_texts(QUERY, [long_doc, "a virus"])
    np.testing.assert_allclose(
        got,
        recipe_by_hand(qwen_dir, QUERY, [long_doc, "a virus"], max_length=max_length),
        atol=1e-5,
    )
    # the cut is said: a flag on the long document only, and a warning
    result = ScorerReranker(scorer).rerank(QUERY, [long_doc, "a virus"])
    flags = {r.index: r.flags for r in result}
    assert flags == {0: ("truncated:causal_lm",), 1: ()}
    said = "causal_lm: {} longer than the model's 96 tokens with the query {} start"
    assert said.format("1 document", "was read on its") in result.warnings
    two = ScorerReranker(scorer).rerank(QUERY, [long_doc, long_doc + " more"])
    assert said.format("2 documents", "were read on their") in two.warnings
    with pytest.raises(ValueError, match="no room"):
        CausalLMScorer(str(qwen_dir), device="cpu", max_length=len(prefix)).score_texts(QUERY, DOCS)


class OutOfMemoryAbove(torch.nn.Module):
    """The tiny model, but a forward on more than ``limit`` sequences fails the way CUDA
    does when memory runs out."""

    def __init__(self, model, limit):
        super().__init__()
        self.inner, self.limit, self.batches = model, limit, []

    def forward(self, input_ids, **kwargs):
        self.batches.append(input_ids.shape[0])
        if input_ids.shape[0] > self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner(input_ids=input_ids, **kwargs)


def test_causal_lm_splits_a_batch_that_runs_out_of_memory(qwen_dir):
    tok = transformers.AutoTokenizer.from_pretrained(qwen_dir, padding_side="left")
    model = transformers.AutoModelForCausalLM.from_pretrained(qwen_dir).eval()
    flaky = OutOfMemoryAbove(model, limit=2)
    scorer = CausalLMScorer((flaky, tok), batch_size=6)
    got = scorer.score_texts(QUERY, DOCS)
    np.testing.assert_allclose(got, recipe_by_hand(qwen_dir, QUERY, DOCS), atol=1e-5)
    assert flaky.batches[0] == 6 and max(flaky.batches[1:]) <= 3
    assert sum(b for b in flaky.batches if b <= 2) == len(DOCS)  # each document scored once
    flaky_single = OutOfMemoryAbove(model, limit=0)
    with pytest.raises(torch.OutOfMemoryError):
        CausalLMScorer((flaky_single, tok), batch_size=2).score_texts(QUERY, DOCS[:2])


def test_cross_encoder_splits_a_batch_that_runs_out_of_memory(bert_dir):
    reference = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=1)
    expected = reference.score_texts(QUERY, DOCS * 3)
    scorer = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=6)
    hf = scorer.model.model
    inner, batches, limit = hf.forward, [], [2]

    def forward(input_ids, **kwargs):  # fails the way CUDA does above the limit
        batches.append(input_ids.shape[0])
        if input_ids.shape[0] > limit[0]:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return inner(input_ids=input_ids, **kwargs)

    hf.forward = forward  # on the loaded model, which scorers of this folder share
    try:
        got = scorer.score_texts(QUERY, DOCS * 3)
        limit[0] = 0
        with pytest.raises(torch.OutOfMemoryError):  # one pair that does not fit: the error
            scorer.score_texts(QUERY, DOCS[:1])
    finally:
        del hf.forward
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert batches[0] == 6 and sum(b for b in batches[:-1] if b <= 2) == len(DOCS) * 3


def test_attention_kernels_leave_out_cudnn_on_cuda_only():
    from rerankit.backends.hardware import attention_kernels

    assert torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels("cpu"):
        assert torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(torch.device("cuda", 0)):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.mem_efficient_sdp_enabled()
        q = torch.randn(2, 4, 8, 16)  # attention still runs (here the plain kernel)
        torch.testing.assert_close(
            torch.nn.functional.scaled_dot_product_attention(q, q, q),
            torch.softmax(q @ q.transpose(-1, -2) / 4, dim=-1) @ q,
        )
    assert torch.backends.cuda.cudnn_sdp_enabled()  # restored


def test_causal_lm_needs_yes_and_no_tokens(qwen_dir):
    scorer = CausalLMScorer(str(qwen_dir), device="cpu", yes_token="oui")
    with pytest.raises(ModelLoadError, match="'oui'"):
        scorer.score_texts(QUERY, DOCS)


def test_causal_lm_async_score_in_fusion(qwen_dir, bert_dir):
    from rerankit.rerankers import FusionReranker

    reranker = FusionReranker(
        [CausalLMScorer(str(qwen_dir), device="cpu"), CrossEncoderScorer(str(bert_dir))],
        combination_method="rrf",
    )
    result = asyncio.run(reranker.arerank(QUERY, [Document(d) for d in DOCS]))
    assert sorted(r.index for r in result) == list(range(len(DOCS)))
    assert set(result[0].scores) == {"causal_lm", "cross_encoder"}
    assert not result.degraded


# --- hardware profile ----------------------------------------------------------------------


def test_hardware_profile_auto_and_validation():
    profile = HardwareProfile()
    expected = "cuda" if torch.cuda.is_available() else None
    device = profile.resolve_device()
    if expected:
        assert device == "cuda"
        assert profile.resolve_dtype() in (torch.float16, torch.bfloat16)
    elif device == "cpu":
        assert profile.resolve_dtype() == torch.float32
    assert HardwareProfile(device="cpu", dtype="float16").resolve_dtype() == torch.float16
    assert HardwareProfile(device="cuda:1").resolve_device() == "cuda:1"
    for bad in ({"device": "tpu"}, {"batch_size": 0}, {"dtype": "int8"}, {"max_length": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            HardwareProfile(**bad)


def test_batch_size_is_chosen_for_the_device_unless_given(bert_dir, monkeypatch):
    from rerankit.backends.pairs import padded_batches as real
    from rerankit.scorers import cross_encoder

    cpu, gpu = HardwareProfile(device="cpu"), HardwareProfile(device="cuda")
    assert cpu.resolve_batch_size("pairs") == 8 and gpu.resolve_batch_size("pairs") == 128
    assert cpu.resolve_batch_size("prompts") == 8 and gpu.resolve_batch_size("prompts") == 32
    assert HardwareProfile(device="cuda:1").resolve_batch_size("pairs") == 128
    assert cpu.resolve_batch_size("embedding") == gpu.resolve_batch_size("embedding") == 32
    assert HardwareProfile(device="cpu", batch_size=5).resolve_batch_size("pairs") == 5
    # the scorers use it: a cross-encoder on the CPU forwards 20 pairs in batches of 8
    seen = []

    def spy(encodings, batch_size, pad_id):
        seen.append(batch_size)
        return real(encodings, batch_size, pad_id)

    monkeypatch.setattr(cross_encoder, "padded_batches", spy)
    default = CrossEncoderScorer(str(bert_dir), device="cpu")
    given = CrossEncoderScorer(str(bert_dir), device="cpu", batch_size=3)
    np.testing.assert_allclose(
        default.score_texts(QUERY, DOCS * 3), given.score_texts(QUERY, DOCS * 3), atol=1e-5
    )
    assert seen == [8, 3] and default.batch_size == 8


def test_hardware_profile_from_other_objects():
    class MemoryProfile:  # the shape of spec 5's profile
        device = "cpu"
        batch_size = 4
        other = "ignored"

    assert HardwareProfile.from_object(MemoryProfile()) == HardwareProfile(
        device="cpu", batch_size=4
    )
    assert HardwareProfile.from_object({"dtype": "float32"}).dtype == "float32"
    with pytest.raises(ValueError, match="unknown hardware profile fields"):
        HardwareProfile.from_object({"gpu": True})
    scorer = CrossEncoderScorer("x", profile=MemoryProfile(), batch_size=2)
    assert scorer.profile == HardwareProfile(device="cpu", batch_size=2)


def test_dtype_reaches_the_loaded_models(bert_dir, qwen_dir):
    ce = CrossEncoderScorer(str(bert_dir), device="cpu", dtype="bfloat16")
    lm = CausalLMScorer(str(qwen_dir), device="cpu", dtype="bfloat16")
    ce_scores, lm_scores = ce.score_texts(QUERY, DOCS), lm.score_texts(QUERY, DOCS)
    assert next(ce.model.model.parameters()).dtype == torch.bfloat16
    assert next(lm.model.model.parameters()).dtype == torch.bfloat16
    full_ce = CrossEncoderScorer(str(bert_dir), device="cpu").score_texts(QUERY, DOCS)
    full_lm = CausalLMScorer(str(qwen_dir), device="cpu").score_texts(QUERY, DOCS)
    np.testing.assert_allclose(ce_scores, full_ce, atol=0.05)  # bf16 keeps ~3 digits
    np.testing.assert_allclose(lm_scores, full_lm, atol=0.05)
    assert np.isfinite(lm_scores).all()
