"""int8 for cross-encoders: smoothing keeps the float32 function and loses less where a
channel carries values far wider than the rest; one scale per token computes what a direct
reference computes and loses less where a token does."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the ONNX backend needs the 'onnx' extra")
pytest.importorskip("onnx", reason="exporting needs the 'onnx' extra")
pytest.importorskip("sentence_transformers", reason="exporting needs the 'torch' extra")
pytest.importorskip("wordfreq", reason="calibration text comes from wordfreq")

from rerankit.backends.onnx import MANIFEST, export
from rerankit.backends.quantize import (
    calibration_pairs,
    quantize_int8,
    quantize_int8_per_token,
    smooth,
)
from rerankit.scorers import CrossEncoderScorer

QUERY = "how do vaccines work"
DOCS = [
    "vaccines train the immune system to recognise pathogens",
    "stock market fell sharply on tuesday",
    "solar panels convert light into electricity",
    "what is a virus and how do cells work",
    "energy price fell on tuesday",
    "the immune system and cells",
    "how do solar panels work",
    "yes no",
]


def _run(path, feeds):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [session.run(None, feed)[0] for feed in feeds]


def _feeds(model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    feeds = []
    for query, docs in [(QUERY, DOCS), *calibration_pairs(40, per_query=10, seed=3)]:
        batch = tokenizer([query] * len(docs), docs, truncation=True, padding=True, max_length=64)
        feeds.append({k: np.asarray(v, dtype=np.int64) for k, v in batch.items()})
    return feeds


def test_calibration_text_is_deterministic_and_shaped():
    a = calibration_pairs(60, per_query=20, seed=1)
    assert a == calibration_pairs(60, per_query=20, seed=1)
    assert a != calibration_pairs(60, per_query=20, seed=2)
    assert len(a) == 3 and all(len(docs) == 20 for _, docs in a)
    assert all(3 <= len(q.split()) <= 10 for q, _ in a)
    assert all(20 <= len(d.split()) <= 200 for _, docs in a for d in docs)


def test_smoothing_keeps_the_float32_function(bert_dir, tmp_path):
    import onnx

    out = export(str(bert_dir), tmp_path / "ce", kind="cross_encoder")
    feeds = _feeds(bert_dir)
    smoothed = tmp_path / "smoothed.onnx"
    count = smooth(out / "model.onnx", smoothed, feeds[1:])
    graph = onnx.load(str(smoothed)).graph
    muls = [n for n in graph.node if n.name.endswith("/SmoothMul")]
    # per layer: query/key/value share one input, then attention output, FFN in, FFN out;
    # plus the classifier head's pooler and output
    assert count == len(muls) >= 2 * 4
    for before, after in zip(_run(out / "model.onnx", feeds), _run(smoothed, feeds), strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="alpha"):
        smooth(out / "model.onnx", smoothed, feeds, alpha=1.5)


def _two_layer_graph(path, wide, wide_rows=(), opset=17):
    """x (rows, 64) -> MatMul -> Relu -> MatMul -> y, whose input channels ``wide`` carry
    values 60 times wider than the rest and are read by weights 60 times smaller (the
    pattern of trained BERT-like encoders), and whose rows ``wide_rows`` (tokens) are 60
    times wider; the feeds to calibrate and check it on, and the weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = rng.normal(0, 0.2, (64, 64)).astype(np.float32)
    w1[wide] /= 60.0
    w2 = rng.normal(0, 0.2, (64, 8)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"], name="second"),
        ],
        "two_layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))

    def feed(seed):
        x = np.random.default_rng(seed).normal(0, 1, (32, 64)).astype(np.float32)
        x[:, wide] *= 60.0
        x[list(wide_rows)] *= 60.0
        return {"x": x}

    return [feed(s) for s in range(1, 9)], [feed(s) for s in range(100, 104)], (w1, w2)


def test_smoothed_int8_is_closer_to_float32_where_channels_are_wide(tmp_path):

    source = tmp_path / "model.onnx"
    calibration, check, _ = _two_layer_graph(source, wide=[3, 17, 40])
    smooth(source, tmp_path / "smoothed.onnx", calibration)
    quantize_int8(source, tmp_path / "plain.int8.onnx")
    quantize_int8(tmp_path / "smoothed.onnx", tmp_path / "smoothed.int8.onnx")
    reference = _run(source, check)
    errors = {}
    for name in ("plain", "smoothed"):
        out = _run(tmp_path / f"{name}.int8.onnx", check)
        errors[name] = float(
            np.mean([np.abs(a - b).mean() for a, b in zip(out, reference, strict=True)])
        )
    assert errors["smoothed"] < 0.5 * errors["plain"], errors


def _column_reference(w):
    """max|column| / 127, or the largest |w[2i] + w[2i + 1]| of the column / 127 where
    that is larger (so no pair of int8 products overflows 16 bits), column by column."""
    scales = []
    for c in range(w.shape[1]):
        widest = max(abs(float(v)) for v in w[:, c])
        for i in range(0, w.shape[0] - 1, 2):
            widest = max(widest, abs(float(w[i, c]) + float(w[i + 1, c])))
        scales.append(max(widest, 1e-12) / 127)
    return np.array(scales)


def _per_token_reference(x, weights):
    """The two-layer graph with each row of a MatMul's input in symmetric int8 at
    max|row| / 127 and each weight column at :func:`_column_reference`, in plain numpy."""
    for i, w in enumerate(weights):
        row = np.maximum(np.abs(x).max(axis=1, keepdims=True) * np.float32(1 / 127), 1e-12)
        column = _column_reference(w)
        q = np.round(x * (np.float32(1) / row)).astype(np.int64)
        wq = np.round(w / column).astype(np.int64)
        x = (q @ wq).astype(np.float32) * column.astype(np.float32) * row
        if i == 0:
            x = np.maximum(x, 0)
    return x


@pytest.mark.parametrize("opset", [17, 18])  # ReduceMax's axes: an attribute, then an input
def test_per_token_int8_computes_the_reference_and_loses_less_on_wide_tokens(tmp_path, opset):
    source = tmp_path / "model.onnx"
    _, check, weights = _two_layer_graph(source, wide=[], wide_rows=[0, 9, 30], opset=opset)
    assert quantize_int8_per_token(source, tmp_path / "per_token.onnx") == 2
    quantize_int8(source, tmp_path / "per_tensor.onnx")
    reference = _run(source, check)
    per_token = _run(tmp_path / "per_token.onnx", check)
    for feed, got in zip(check, per_token, strict=True):
        np.testing.assert_allclose(
            got, _per_token_reference(feed["x"], weights), rtol=1e-4, atol=1e-4
        )
    errors = {
        name: float(np.mean([np.abs(a - b).mean() for a, b in zip(out, reference, strict=True)]))
        for name, out in (
            ("per_token", per_token),
            ("per_tensor", _run(tmp_path / "per_tensor.onnx", check)),
        )
    }
    assert errors["per_token"] < 0.5 * errors["per_tensor"], errors


def _without_vnni(a_u8, w_s8):
    """uint8 x int8 as x86 CPUs without VNNI multiply them (``vpmaddubsw``): the products
    of rows 2i and 2i + 1 added in a saturating 16-bit integer, then summed in 32 bits."""
    a, w = a_u8.astype(np.int64), w_s8.astype(np.int64)
    pairs = a[:, 0::2, None] * w[None, 0::2, :] + a[:, 1::2, None] * w[None, 1::2, :]
    return np.clip(pairs, -(2**15), 2**15 - 1).sum(axis=1)


def test_per_token_int8_weights_cannot_overflow_16_bits_without_vnni(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.2, (16, 6)).astype(np.float32)
    w[0:2, 0] = 1.5  # a column's two widest weights in one pair, same sign
    w[4:6, 1] = -1.2, -1.5
    w[8:10, 2] = 1.5, -1.5  # opposite signs cannot overflow
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "one_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 6])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "model.onnx"))
    quantize_int8_per_token(tmp_path / "model.onnx", tmp_path / "int8.onnx")
    q = numpy_helper.to_array(
        next(i for i in onnx.load(str(tmp_path / "int8.onnx")).graph.initializer if i.name == "w")
    )
    assert q.dtype == np.int8 and np.abs(q.astype(int)).max() <= 127
    # the rows whose inputs are largest: uint8 255 on every channel, 1 and 0 on every
    # channel, alternating, are the worst cases for a pair
    worst = np.array([[255] * 16, [1] * 16, [0] * 16, [255, 0] * 8], dtype=np.uint8)
    np.testing.assert_array_equal(_without_vnni(worst, q), worst.astype(np.int64) @ q)
    # max|column| / 127 alone would have put 127 and 127 in one pair: 255 x 254 overflows
    naive = np.round(w / (np.abs(w).max(axis=0) / 127)).astype(np.int8)
    assert (_without_vnni(worst, naive) != worst.astype(np.int64) @ naive).any()
    # and the int8 graph still computes x @ w closely (the pair columns lose about a bit)
    x = rng.normal(0, 1, (32, 16)).astype(np.float32)
    (got,) = _run(tmp_path / "int8.onnx", [{"x": x}])
    np.testing.assert_allclose(got, x @ w, atol=0.05 * float(np.abs(x @ w).max()))


def _widest_pair(path):
    """The largest |w[2i] + w[2i + 1]| over the int8 weights of a file's integer products."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    widest = []
    for node in model.graph.node:
        w = weights.get(node.input[1]) if node.op_type.startswith("MatMulInteger") else None
        if w is not None and w.dtype == np.int8 and w.ndim == 2:
            w = w[: w.shape[0] // 2 * 2].astype(np.int64)
            widest.append(int(np.abs(w[0::2] + w[1::2]).max()))
    assert widest, "no int8 matrix products found"
    return max(widest)


def test_a_cross_encoders_int8_export_is_smoothed_unless_asked_not_to(bert_dir, tmp_path):
    smoothed = export(str(bert_dir), tmp_path / "smoothed", kind="cross_encoder", quantize="int8")
    plain = export(
        str(bert_dir), tmp_path / "plain", kind="cross_encoder", quantize="int8", smooth_alpha=None
    )
    per_tensor = export(
        str(bert_dir),
        tmp_path / "per_tensor",
        kind="cross_encoder",
        quantize="int8",
        per_token=False,
    )
    manifest = json.loads((smoothed / MANIFEST).read_text())
    assert manifest["int8_smoothing"] == {"alpha": 0.75}
    assert manifest["int8_activations"] == "per_token"
    assert "int8_smoothing" not in json.loads((plain / MANIFEST).read_text())
    assert json.loads((per_tensor / MANIFEST).read_text())["int8_activations"] == "per_tensor"
    # one scale per token is safe on CPUs without VNNI; ONNX Runtime's own scales are not
    assert manifest["int8_weights"] == "pair_safe"
    assert _widest_pair(smoothed / "model.int8.onnx") * 255 <= 2**15 - 1
    assert "int8_weights" not in json.loads((per_tensor / MANIFEST).read_text())
    graphs = {f.name: _int8_ops(f) for f in (smoothed, per_tensor)}
    assert "MatMulIntegerToFloat" in graphs["smoothed"], graphs
    assert "DynamicQuantizeLinear" in graphs["per_tensor"], graphs
    assert sorted(p.name for p in smoothed.glob("*.onnx")) == ["model.int8.onnx", "model.onnx"]
    docs = DOCS * 3
    reference = CrossEncoderScorer(str(smoothed), backend="onnx").score_texts(QUERY, docs)
    np.testing.assert_allclose(
        CrossEncoderScorer(str(plain), backend="onnx").score_texts(QUERY, docs), reference
    )  # the float32 files are the same export
    for folder in (smoothed, plain, per_tensor):
        scores = CrossEncoderScorer(str(folder), backend="onnx", quantize="int8")
        np.testing.assert_allclose(scores.score_texts(QUERY, docs), reference, atol=0.01)


def _int8_ops(folder):
    import onnx

    return {n.op_type for n in onnx.load(str(folder / "model.int8.onnx")).graph.node}


def test_the_export_command_can_leave_smoothing_out(bert_dir, tmp_path):
    from rerankit.cli import main

    out = tmp_path / "plain"
    args = ["export", str(bert_dir), "--kind", "cross-encoder", "--quantize", "int8"]
    assert main([*args, "--out", str(out), "--no-smoothing", "--int8-scales", "per-tensor"]) == 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert "int8_smoothing" not in manifest
    assert manifest["int8_activations"] == "per_tensor"
    assert "DynamicQuantizeLinear" in _int8_ops(out)
    assert main([*args, "--out", str(tmp_path / "smoothed")]) == 0
    assert "int8_smoothing" in json.loads((tmp_path / "smoothed" / MANIFEST).read_text())


def test_quantizing_leaves_an_unconfigured_root_logger_unconfigured(tmp_path, monkeypatch):
    """ONNX Runtime logs its advice through logging.warning(), which configures the root
    logger (basicConfig) when it has no handler: the application's own basicConfig would
    then do nothing. The library leaves the root logger as it found it."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in an application that set none yet
    source = tmp_path / "model.onnx"
    _two_layer_graph(source, wide=[3])
    quantize_int8(source, tmp_path / "int8.onnx")
    assert root.handlers == []


def test_models_past_protobufs_limit_keep_their_weights_beside_them(tmp_path, monkeypatch):
    """Over 2 GB (here: any size, the limit lowered) the smoothed and the int8 files keep
    their weights in a file beside them, and compute what the in-memory path computes."""
    from rerankit.backends import quantize

    source = tmp_path / "model.onnx"
    calibration, check, _ = _two_layer_graph(source, wide=[3, 17, 40])
    small = tmp_path / "small"
    small.mkdir()
    smooth(source, small / "smoothed.onnx", calibration)
    quantize_int8(small / "smoothed.onnx", small / "int8.onnx")
    monkeypatch.setattr(quantize, "EXTERNAL_DATA_BYTES", 0)
    large = tmp_path / "large"
    large.mkdir()
    smooth(source, large / "smoothed.onnx", calibration)
    assert (large / "smoothed.onnx.data").is_file()
    assert quantize._has_external_data(large / "smoothed.onnx")
    quantize_int8(large / "smoothed.onnx", large / "int8.onnx")
    assert quantize._has_external_data(large / "int8.onnx")
    assert not quantize._has_external_data(small / "int8.onnx")
    monkeypatch.setattr(quantize, "EXTERNAL_DATA_BYTES", 1_800_000_000)
    quantize_int8_per_token(source, small / "per_token.onnx")
    monkeypatch.setattr(quantize, "EXTERNAL_DATA_BYTES", 0)
    quantize_int8_per_token(source, large / "per_token.onnx")
    assert quantize._has_external_data(large / "per_token.onnx")
    for name in ("smoothed.onnx", "int8.onnx", "per_token.onnx"):
        for a, b in zip(_run(small / name, check), _run(large / name, check), strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-6)


def test_an_export_cleans_up_its_smoothed_copy_when_weights_sit_beside_it(
    bert_dir, tmp_path, monkeypatch
):
    from rerankit.backends import quantize

    monkeypatch.setattr(quantize, "EXTERNAL_DATA_BYTES", 0)
    out = export(str(bert_dir), tmp_path / "ce", kind="cross_encoder", quantize="int8")
    assert not list(out.glob("model.smoothed*"))
    fp32 = CrossEncoderScorer(str(out), backend="onnx").score_texts(QUERY, DOCS)
    int8 = CrossEncoderScorer(str(out), backend="onnx", quantize="int8").score_texts(QUERY, DOCS)
    np.testing.assert_allclose(int8, fp32, atol=0.01)
