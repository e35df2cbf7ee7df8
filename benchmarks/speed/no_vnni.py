"""What an int8 ONNX file computes on x86 CPUs without VNNI, emulated on any CPU.

Without VNNI (AVX2; AVX-512 before Cascade Lake; AMD before Zen 4), ONNX Runtime multiplies
uint8 activations by int8 weights with ``vpmaddubsw``, which adds the products of rows
``2i`` and ``2i + 1`` into a saturating 16-bit integer before summing in 32 bits; with VNNI
the sum is exact. :func:`emulate` writes a copy of an int8 model folder whose integer matrix
products (``MatMulIntegerToFloat``, ``MatMulInteger``) carry that saturation: for each
weight pair that can overflow (same sign, ``255 * |w[2i] + w[2i + 1]| > 32767``) the graph
computes the pair's product from the actual uint8 inputs, and adds ``clip(pair) - pair``
(times the column's scale, for ``MatMulIntegerToFloat``) to the node's output.
``benchmarks/speed/cross_encoder.py --trained-order --no-vnni`` uses it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

FILE = "model.int8.onnx"


def emulate(source: Path, target: Path) -> int:
    """``source``'s model folder copied to ``target`` with its int8 file rewritten as above;
    returns the number of weight pairs that can overflow."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shutil.copytree(source, target, dirs_exist_ok=True)
    model = onnx.load(str(source / FILE))
    graph = model.graph
    known = {i.name: i for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            known[n.output[0]] = n.attribute[0].t
    nodes, added, total = [], [], 0
    for node in graph.node:
        nodes.append(node)
        if node.op_type not in ("MatMulIntegerToFloat", "MatMulInteger"):
            continue
        if node.input[1] not in known:
            continue
        w = numpy_helper.to_array(known[node.input[1]])
        if w.dtype != np.int8 or w.ndim != 2 or w.shape[0] < 2:
            continue  # unsigned weights take another kernel
        w = w.astype(np.int64)
        even = w.shape[0] - w.shape[0] % 2
        we, wo = w[0:even:2], w[1:even:2]
        pairs = np.argwhere((np.sign(we) == np.sign(wo)) & (255 * np.abs(we + wo) > 32767))
        total += len(pairs)
        if not len(pairs):
            continue
        i, n = pairs[:, 0], pairs[:, 1]
        spread = np.zeros((len(pairs), w.shape[1]), dtype=np.float32)
        float_out = node.op_type == "MatMulIntegerToFloat"
        scale = numpy_helper.to_array(known[node.input[3]]).reshape(-1) if float_out else None
        spread[np.arange(len(pairs)), n] = scale[n] if float_out else 1.0
        p = node.output[0] + "/no_vnni"
        added += [
            numpy_helper.from_array(2 * i, p + "/even"),
            numpy_helper.from_array(2 * i + 1, p + "/odd"),
            numpy_helper.from_array(we[i, n].astype(np.float32), p + "/w_even"),
            numpy_helper.from_array(wo[i, n].astype(np.float32), p + "/w_odd"),
            numpy_helper.from_array(spread, p + "/spread"),
            numpy_helper.from_array(np.array(-32768, np.float32), p + "/low"),
            numpy_helper.from_array(np.array(32767, np.float32), p + "/high"),
        ]
        out = node.output[0]
        node.output[0] = out + "/exact"
        make = helper.make_node
        nodes += [
            make("Cast", [node.input[0]], [p + "/a"], to=TensorProto.FLOAT),
            make("Gather", [p + "/a", p + "/even"], [p + "/a_even"], axis=-1),
            make("Gather", [p + "/a", p + "/odd"], [p + "/a_odd"], axis=-1),
            make("Mul", [p + "/a_even", p + "/w_even"], [p + "/product_even"]),
            make("Mul", [p + "/a_odd", p + "/w_odd"], [p + "/product_odd"]),
            make("Add", [p + "/product_even", p + "/product_odd"], [p + "/pair"]),
            make("Clip", [p + "/pair", p + "/low", p + "/high"], [p + "/clipped"]),
            make("Sub", [p + "/clipped", p + "/pair"], [p + "/lost"]),
            make("MatMul", [p + "/lost", p + "/spread"], [p + "/correction"]),
        ]
        if float_out:
            nodes.append(make("Add", [out + "/exact", p + "/correction"], [out]))
        else:
            nodes += [
                make("Cast", [p + "/correction"], [p + "/correction_int"], to=TensorProto.INT32),
                make("Add", [out + "/exact", p + "/correction_int"], [out]),
            ]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    onnx.save(model, str(target / FILE))
    return total
