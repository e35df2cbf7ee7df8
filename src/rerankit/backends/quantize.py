"""int8 quantisation of exported models: ONNX Runtime's dynamic int8 (:func:`quantize_int8`),
int8 with one scale per token (:func:`quantize_int8_per_token`), and activation smoothing
before either (SmoothQuant, Xiao et al. 2023).

ONNX Runtime's dynamic int8 quantises each MatMul's input with one scale per tensor, so a
few channels with large values (BERT-like encoders have them after their LayerNorms and
GELUs) set the scale and leave the other channels a handful of levels. :func:`smooth`
moves part of that range into the weights: for every MatMul with a constant weight
matrix it divides the input's channel ``j`` by ``s_j`` (an inserted ``Mul``) and
multiplies the weight's row ``j`` by ``s_j``, with ``s_j = max|x_j| ** alpha /
max|w_j| ** (1 - alpha)``, so the float32 function is unchanged and the int8 one loses
less. MatMuls that share an input share its scale. The ranges come from running the
float32 graph on calibration inputs: :func:`calibration_pairs` makes pseudo-text from a
word-frequency list, so no user data is needed.

Smoothing tames wide channels; some tokens ([SEP], punctuation) also carry values far
larger than the rest of the sequence, and one scale per tensor spends the int8 levels on
them. :func:`quantize_int8_per_token` gives each token its own scale instead: it
quantises each MatMul input row by row (symmetric, computed in the graph at run time) and
feeds ONNX Runtime's fused ``MatMulIntegerToFloat`` with per-column weight scales,
then scales each row back (a few per cent slower than the per-tensor kind). Its weight
scales (:func:`column_scales`) keep every pair of int8 products inside 16 bits, so it
computes the same on x86 CPUs without VNNI, whose kernel adds such pairs with
saturation, as on those with it; ONNX Runtime's own dynamic int8 (:func:`quantize_int8`)
keeps its max|column| / 127 scales and does not.
"""

from __future__ import annotations

import logging
import random
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require

__all__ = [
    "EXTERNAL_DATA_BYTES",
    "QUANTIZE_PER_CHANNEL",
    "SMOOTH_ALPHA",
    "calibration_feeds",
    "calibration_pairs",
    "column_scales",
    "cross_encoder_int8",
    "quantize_int8",
    "quantize_int8_per_token",
    "smooth",
]

#: one scale per output channel of each weight matrix (chosen by benchmarks/speed/embedding.py)
QUANTIZE_PER_CHANNEL = True

#: models whose weights pass this many bytes are written with their weights in a file
#: beside them (protobuf holds at most 2 GB in one message; bge-reranker-v2-m3 is 2.3 GB)
EXTERNAL_DATA_BYTES = 1_800_000_000

#: the share of each channel's range moved into the weights (chosen in trials on 43 DL19
#: queries with a trained MiniLM cross-encoder, among 0.5, 0.75, 0.85 and 0.95;
#: ``benchmarks/speed/cross_encoder.py --trained-order`` measures it against plain int8)
SMOOTH_ALPHA = 0.75


def calibration_pairs(
    n: int = 400, *, per_query: int = 20, seed: int = 0, language: str = "en"
) -> list[tuple[str, list[str]]]:
    """``n`` (query, document) pairs of pseudo-text, ``per_query`` documents a query:
    words drawn from ``wordfreq``'s 20,000 most frequent in ``language`` with weight
    ``1 / (rank + 10)``, queries of 3-10 words, documents of 20-200. Enough to find which
    channels of a model carry large values; deterministic for a ``seed``."""
    wordfreq = require("wordfreq", "calibrating an int8 export")
    words = wordfreq.top_n_list(language, 20_000)
    weights = [1.0 / (rank + 10) for rank in range(len(words))]
    rng = random.Random(seed)
    out = []
    for _ in range(max(1, n // per_query)):
        query = " ".join(rng.choices(words, weights, k=rng.randint(3, 10)))
        docs = [
            " ".join(rng.choices(words, weights, k=rng.randint(20, 200))) for _ in range(per_query)
        ]
        out.append((query, docs))
    return out


def _weight_matmuls(graph: object, initializers: Mapping[str, Any]) -> dict[str, list[object]]:
    """MatMul nodes whose second input is a constant 2-D weight no other node reads, grouped
    by their input."""
    uses: dict[str, int] = {}
    for node in graph.node:  # type: ignore[attr-defined]
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    groups: dict[str, list[object]] = {}
    for node in graph.node:  # type: ignore[attr-defined]
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" else None
        # a weight another node also reads (tied weights) cannot take the scale
        if weight is not None and len(weight.dims) == 2 and uses[node.input[1]] == 1:
            groups.setdefault(node.input[0], []).append(node)
    return groups


def _is_large(model: Any) -> bool:
    return sum(i.ByteSize() for i in model.graph.initializer) > EXTERNAL_DATA_BYTES


def _save(model: Any, path: Path) -> None:
    """``model`` to ``path``, its weights in ``<name>.data`` beside it when they pass
    protobuf's 2 GB limit (:data:`EXTERNAL_DATA_BYTES`)."""
    onnx = require("onnx", "calibrating an int8 export")
    if _is_large(model):
        onnx.save(
            model,
            str(path),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=f"{path.name}.data",
        )
    else:
        onnx.save(model, str(path))


def _has_external_data(path: Path) -> bool:
    onnx = require("onnx", "quantizing a model")
    model = onnx.load(str(path), load_external_data=False)
    return any(i.data_location == onnx.TensorProto.EXTERNAL for i in model.graph.initializer)


def _input_ranges(
    model: Any, inputs: Iterable[str], feeds: Iterable[Mapping[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """The largest absolute value of each channel (last axis) of the tensors ``inputs``
    over the calibration ``feeds``, from the float32 ``model`` (left as it was)."""
    onnx = require("onnx", "calibrating an int8 export")
    ort = require("onnxruntime", "calibrating an int8 export")
    outputs = model.graph.output
    kept = len(outputs)
    wanted = list(dict.fromkeys(inputs))
    present = {o.name for o in outputs}
    outputs.extend(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        for name in wanted
        if name not in present
    )
    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    try:
        with tempfile.TemporaryDirectory(prefix="rerankit-calibration-") as folder:
            if _is_large(model):  # protobuf cannot hold it in one message
                probe = Path(folder) / "probe.onnx"
                copy = onnx.ModelProto()
                copy.CopyFrom(model)  # saving moves the weights out of the message saved
                _save(copy, probe)
                source: Any = str(probe)
            else:
                source = model.SerializeToString()
            session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    finally:
        del outputs[kept:]
    names = [o.name for o in session.get_outputs()]
    ranges: dict[str, np.ndarray] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(None, dict(feed)), strict=True):
            if name in wanted:
                top = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
                ranges[name] = top if name not in ranges else np.maximum(ranges[name], top)
    missing = [n for n in wanted if n not in ranges]
    if missing:
        raise ValueError(f"calibration gave no values for {len(missing)} MatMul inputs")
    return ranges


def smooth(
    source: str | Path,
    target: str | Path,
    feeds: Iterable[Mapping[str, np.ndarray]],
    *,
    alpha: float = SMOOTH_ALPHA,
) -> int:
    """Write to ``target`` the float32 ONNX model ``source`` with its MatMul inputs
    smoothed (see the module doc), the channel ranges measured on ``feeds`` (input name ->
    array, as the model takes them). Returns the number of inputs smoothed. The result
    computes the same function as ``source`` (up to float rounding); quantise it."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    onnx = require("onnx", "calibrating an int8 export")
    numpy_helper = onnx.numpy_helper
    source, target = Path(source), Path(target)
    model = onnx.load(str(source))
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    groups = _weight_matmuls(graph, initializers)  # only their weights are read into numpy
    ranges = _input_ranges(model, groups, feeds)
    before: dict[int, object] = {}
    for name, nodes in groups.items():
        weights = [numpy_helper.to_array(initializers[n.input[1]]) for n in nodes]  # type: ignore[attr-defined]
        widest = np.max([np.abs(w).max(axis=1) for w in weights], axis=0)
        scale = np.power(np.maximum(ranges[name], 1e-5), alpha) / np.power(
            np.maximum(widest, 1e-5), 1.0 - alpha
        )
        scale = scale.astype(np.float32)
        inverse, smoothed = f"{name}/smooth_inverse", f"{name}/smoothed"
        graph.initializer.append(numpy_helper.from_array(1.0 / scale, inverse))
        before[id(nodes[0])] = onnx.helper.make_node(
            "Mul", [name, inverse], [smoothed], name=f"{name}/SmoothMul"
        )
        for node, weight in zip(nodes, weights, strict=True):
            key = node.input[1]  # type: ignore[attr-defined]
            initializers[key].CopyFrom(numpy_helper.from_array(weight * scale[:, None], key))
            node.input[0] = smoothed  # type: ignore[attr-defined]
    ordered = []
    for node in graph.node:  # each Mul just before the first MatMul that reads it
        if id(node) in before:
            ordered.append(before[id(node)])
        ordered.append(node)
    del graph.node[:]
    graph.node.extend(ordered)
    _save(model, target)
    return len(groups)


def calibration_feeds(
    tokenizer: Any, names: Sequence[str], max_length: int
) -> Iterator[dict[str, np.ndarray]]:
    """The model's inputs for :func:`calibration_pairs`, one batch a query
    (the document cut to fit, as the scorer does)."""
    for query, docs in calibration_pairs():
        batch = tokenizer(
            [query] * len(docs),
            docs,
            truncation="only_second",
            max_length=max_length,
            padding=True,
            return_tensors="np",
        )
        yield {n: np.asarray(batch[n], dtype=np.int64) for n in names}


def quantize_int8(
    source: Path, target: Path, *, keep_float: Sequence[str] = (), only: Sequence[str] = ()
) -> None:
    """ONNX Runtime's dynamic int8 quantisation of the weights of ``source`` into ``target``
    (activations are quantised per call); the nodes named in ``keep_float`` stay float32,
    and with ``only`` just the nodes of those operator types are quantised.
    A ``source`` whose weights are in external files (over 2 GB) gives a ``target`` with
    its weights beside it too."""
    quantization = require("onnxruntime.quantization", "quantizing a model")
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    root.setLevel(logging.ERROR)  # its advice to pre-process goes to the root logger
    try:
        quantization.quantize_dynamic(
            str(source),
            str(target),
            weight_type=quantization.QuantType.QInt8,
            per_channel=QUANTIZE_PER_CHANNEL,
            nodes_to_exclude=list(keep_float),
            op_types_to_quantize=list(only) or None,
            use_external_data_format=_has_external_data(Path(source)),
        )
    finally:
        root.setLevel(level)
        # logging.warning() configures an unconfigured root logger (basicConfig): undone,
        # or the application's own basicConfig would silently do nothing afterwards
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)


def column_scales(weight: np.ndarray) -> np.ndarray:
    """One scale per column of a K x N ``weight`` for symmetric int8 that cannot overflow on
    x86 CPUs without VNNI (AVX2, AVX-512 before Cascade Lake; AMD before Zen 4). Their
    kernel (``vpmaddubsw``) adds the uint8 x int8 products of rows ``2i`` and ``2i + 1``
    into a saturating 16-bit integer, and two same-sign weights of 127 levels against
    activations of 255 make 64,770, twice what fits. So the scale also keeps
    ``|w[2i] + w[2i + 1]|`` within 127 levels (128 after rounding: 255 x 128 = 32,640):
    a column loses precision only where two such weights sit in one pair."""
    widest = np.abs(weight).max(axis=0)
    even = weight.shape[0] - weight.shape[0] % 2
    if even:
        widest = np.maximum(widest, np.abs(weight[0:even:2] + weight[1:even:2]).max(axis=0))
    return np.maximum(widest, 1e-12) / 127


def quantize_int8_per_token(source: Path, target: Path) -> int:
    """int8 for ``source`` into ``target`` with one scale per token: every MatMul with a
    constant 2-D weight gets symmetric int8 weights with one scale per output column
    (:func:`column_scales`: safe from 16-bit overflow on CPUs without VNNI), and
    its input is quantised at run time with one scale per row (token), ``max|x| / 127``,
    offset to uint8 for ONNX Runtime's fast kernel; the embedding tables are quantised as
    :func:`quantize_int8` does. Runs on ONNX Runtime's CPU provider (its
    ``com.microsoft`` ``MatMulIntegerToFloat``). Returns the number of MatMuls quantised."""
    onnx = require("onnx", "quantizing a model")
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    model = onnx.load(str(source))
    graph = model.graph
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    initializers = {i.name: i for i in graph.initializer}
    groups = _weight_matmuls(graph, initializers)
    graph.initializer.extend(
        numpy_helper.from_array(np.array(value, dtype), f"per_token/{name}")
        for name, value, dtype in (
            ("inverse_127", 1 / 127, np.float32),
            ("smallest", 1e-12, np.float32),
            ("one", 1.0, np.float32),
            ("zero_point", 128, np.uint8),
        )
    )
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    axes: list[str] = []  # the last axis: an attribute up to opset 17, an input from 18
    attributes: dict[str, Any] = {"axes": [-1]}
    if opset >= 18:
        graph.initializer.append(numpy_helper.from_array(np.array([-1]), "per_token/last_axis"))
        axes, attributes = ["per_token/last_axis"], {}
    node = helper.make_node
    before: dict[int, list[Any]] = {}
    instead: dict[int, list[Any]] = {}
    for name, nodes in groups.items():
        p = f"{name}/per_token"
        before[id(nodes[0])] = [  # row scale s = max|x| / 127 and x / s as uint8 + 128
            node("ReduceMax", [name, *axes], [f"{p}/max"], keepdims=1, **attributes),
            node("ReduceMin", [name, *axes], [f"{p}/min"], keepdims=1, **attributes),
            node("Neg", [f"{p}/min"], [f"{p}/-min"]),
            node("Max", [f"{p}/max", f"{p}/-min"], [f"{p}/absmax"]),
            node("Mul", [f"{p}/absmax", "per_token/inverse_127"], [f"{p}/raw_scale"]),
            node("Max", [f"{p}/raw_scale", "per_token/smallest"], [f"{p}/scale"]),
            node("Reciprocal", [f"{p}/scale"], [f"{p}/inverse"]),
            node("Mul", [name, f"{p}/inverse"], [f"{p}/scaled"]),
            node(
                "QuantizeLinear",
                [f"{p}/scaled", "per_token/one", "per_token/zero_point"],
                [f"{p}/uint8"],
            ),
        ]
        for matmul in nodes:
            key = matmul.input[1]  # type: ignore[attr-defined]
            weight = numpy_helper.to_array(initializers[key])
            column = column_scales(weight)
            initializers[key].CopyFrom(
                numpy_helper.from_array(np.round(weight / column).astype(np.int8), key)
            )
            graph.initializer.append(
                numpy_helper.from_array(column.astype(np.float32), f"{key}/column_scale")
            )
            out = matmul.output[0]  # type: ignore[attr-defined]
            instead[id(matmul)] = [
                node(
                    "MatMulIntegerToFloat",
                    [
                        f"{p}/uint8",
                        key,
                        "per_token/one",
                        f"{key}/column_scale",
                        "per_token/zero_point",
                    ],
                    [f"{out}/per_column"],
                    domain="com.microsoft",
                ),
                node("Mul", [f"{out}/per_column", f"{p}/scale"], [out]),
            ]
    ordered = []
    for old in graph.node:
        ordered.extend(before.get(id(old), []))
        ordered.extend(instead.get(id(old), [old]))
    del graph.node[:]
    graph.node.extend(ordered)
    with tempfile.TemporaryDirectory(prefix="rerankit-int8-") as folder:
        middle = Path(folder) / "matmuls.onnx"
        _save(model, middle)
        del model
        quantize_int8(middle, Path(target), only=("Gather",))
    return sum(len(nodes) for nodes in groups.values())


def cross_encoder_int8(
    source: Path,
    target: Path,
    feeds: Iterable[Mapping[str, np.ndarray]],
    smooth_alpha: float | None = SMOOTH_ALPHA,
    per_token: bool = True,
) -> dict[str, Any]:
    """A cross-encoder's int8 file ``target`` from its float32 ``source``: smoothed with
    ``smooth_alpha`` on the calibration ``feeds`` (``None``: not smoothed), then quantised
    with one scale per token (``per_token``) or ONNX Runtime's one per tensor. Returns
    what the export's manifest records about it."""
    record: dict[str, Any] = {"int8_activations": "per_token" if per_token else "per_tensor"}
    if per_token:  # column_scales: no 16-bit overflow on CPUs without VNNI
        record["int8_weights"] = "pair_safe"
    middle = source
    if smooth_alpha is not None:
        record["int8_smoothing"] = {"alpha": smooth_alpha}
        middle = target.with_name(f"{source.stem}.smoothed.onnx")
        smooth(source, middle, feeds, alpha=smooth_alpha)
    try:
        if per_token:
            quantize_int8_per_token(middle, target)
        else:
            quantize_int8(middle, target)
    finally:
        if middle != source:
            middle.unlink(missing_ok=True)
            middle.with_name(f"{middle.name}.data").unlink(missing_ok=True)
    return record
