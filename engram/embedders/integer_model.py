"""The default MiniLM model rewritten to run its matrix products on integer kernels.

The packaged "int8" model stores int8 weights but turns each back into float32 (``Cast`` then
``Mul`` by its scale) before a float ``MatMul``: onnxruntime folds those into float weights, so a
query costs float compute (~6 ms of one core). Rewritten here once, on the first use of the
``minilm-int8`` embedder, into a dynamically quantized model (int8 weights per output channel,
activations quantized at run time, ``MatMulInteger``-family kernels): ~3 ms a query, vectors at
cosine 0.99 to the float ones. It is a different model (its own model id): a store is bound to
one or the other.

The rewrite needs the ``onnx`` package (``pip install '.[int8]'``) and writes the
model into the cache directory (``$ENGRAM_CACHE_DIR``, else ``~/.cache/engram``), named by the
source model's digest, so it is done once per machine and never fetched from anywhere.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from engram.config import cache_dir
from engram.errors import EmbedderError
from engram.extras import install_line

__all__ = ["integer_model"]


def integer_model(source: Path, digest: str) -> Path:
    """The integer-kernel rewrite of the model at ``source`` (whose sha256 is ``digest``), made on
    first need and kept in the cache directory."""
    target = cache_dir() / "models" / f"all-MiniLM-L6-v2-dynq8-{digest[:16]}.onnx"
    if target.is_file():
        return target
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderError(
            f"the minilm-int8 embedder rewrites the model once and needs onnx: {install_line('int8')} ({exc})"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        floats = Path(work) / "float.onnx"
        model = onnx.load(str(source))
        _fold_dequantized_weights(model)
        onnx.save(model, str(floats))
        rewritten = Path(work) / target.name
        quiet = _Quiet()  # the quantizer advises "pre-processing" on the root logger, to every caller
        logging.getLogger().addFilter(quiet)
        try:
            quantize_dynamic(str(floats), str(rewritten), per_channel=True, weight_type=QuantType.QInt8)
        finally:
            logging.getLogger().removeFilter(quiet)
        os.replace(rewritten, target)  # whole or absent: another process may be reading the cache
    return target


class _Quiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()


def _fold_dequantized_weights(model: Any) -> None:
    """Replace each ``Mul(Cast(int8 weight), scale)`` of constant inputs by its float result, so
    the quantizer sees float weights it can quantize per channel (it leaves the pattern alone)."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    folded, dropped = [], []
    for node in graph.node:
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        cast = producer.get(node.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants or node.input[1] not in constants:
            continue
        weight = numpy_helper.to_array(constants[cast.input[0]]).astype(np.float32)
        scale = numpy_helper.to_array(constants[node.input[1]]).astype(np.float32)
        folded.append(numpy_helper.from_array((weight * scale).astype(np.float32), node.output[0]))
        dropped += [node, cast]
    for node in dropped:
        graph.node.remove(node)
    graph.initializer.extend(folded)
    used = {name for node in graph.node for name in node.input} | {out.name for out in graph.output}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
