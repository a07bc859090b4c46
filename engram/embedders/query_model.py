"""The default model's twin for questions: the same int8 weights, kept int8 while it runs.

The packaged model stores its weights as int8 and turns each back into float32 (``Cast`` then
``Mul`` by a per-column scale) before a float ``MatMul``; onnxruntime folds those into float
weights at load, so a question of ten words streams 88 MB of float weights through one core (~6 ms).
The twin hands each of those products, with the very same int8 weights and scales, to
onnxruntime's ``MatMulNBits`` (8 bits, blocks of :data:`BLOCK` along the input), which reads
22 MB and quantizes each block of a question's activations as it goes (``accuracy_level`` 4): a
question costs ~4 ms, and its vector lies at cosine 0.999+ to the float model's (0.997 for a
one-word question). Its embedding tables stay int8 too: the rows a question reads are turned to
float as it runs (its load 115 -> 35 ms). Only questions use it: what a store holds is embedded
by the float model, as before, so no store changes model.

What is stored is embedded by the packaged model read from a copy whose tables, too, are read a
row at a time and nothing else changed (:func:`text_model`): the packaged model's vectors bit for
bit, loaded in 50-95 ms instead of 135-215, with 47 MB less held.

The twin (and the copy) is written once per cache directory (``$ENGRAM_CACHE_DIR``, else ``~/.cache/engram``;
0.2-0.4 s, with the ``onnx`` package) from the packaged model, its source checked first, and is
used only while its digest is the one pinned here (:data:`TWIN_SHA256`, what this rewrite of the
pinned source gives): a damaged or foreign file is made again, and a rewrite that gives other
bytes (another ``onnx`` version) is used from memory, never kept. When anything fails, questions
are embedded by the float model.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from engram.config import cache_dir
from engram.errors import EmbedderError

__all__ = ["BLOCK", "NAME", "TEXT_NAME", "TEXT_SHA256", "TWIN_SHA256", "file_sha256", "query_model", "text_model"]

log = logging.getLogger("engram")
#: Input rows sharing one scale and one quantization of the activations. Measured on every dev set
#: with questions alone on the twin: 32 and 64 moved no recall@10 by more than one question
#: (LongMemEval every turn +1 at 5 with 64); 128 lost one at 10 there and cosine fell to 0.9989.
BLOCK = 64
_ACCURACY = 4  # onnxruntime's MatMulNBits: int8 compute on quantized blocks of the activations
#: The twin's file in the cache directory, named by the source model's digest and the block.
NAME = f"all-MiniLM-L6-v2-q8b{BLOCK}-rows-8199be6f699a395f.onnx"
#: The sha256 of the twin that :func:`_keep_weights_int8` makes of the pinned source model.
TWIN_SHA256 = "3f00deb8df0aceaa1d50318f295730fa6f65886e4dfe07be7aa99d680d7d489b"
#: The packaged model with its tables read a row at a time (what is stored), and its sha256.
TEXT_NAME = "all-MiniLM-L6-v2-rows-8199be6f699a395f.onnx"
TEXT_SHA256 = "ed08b70ddff38082b15e69da472e9bafadb6c57028de8ba33733af208c80708f"
_PARTIAL = ".question-model-"  # a derived model being written


def query_model(checked: Callable[[], Path]) -> Path | bytes | None:
    """The twin of the packaged model: the cached file, or the model's bytes when
    this machine's rewrite is not the pinned one; None when it cannot be had (questions then use
    the float model). ``checked()`` gives the source once its digest is checked (it raises
    :class:`EmbedderError` when it does not match), and is called only to write the twin."""
    return _derived(checked, _Rewrite(NAME, TWIN_SHA256, _keep_weights_int8, "question model", "the float model"))


def text_model(checked: Callable[[], Path]) -> Path | bytes | None:
    """The packaged model with its embedding tables read a row at a time (:func:`_read_rows_int8`),
    for what is stored: its vectors are the model's own, bit for bit. As :func:`query_model`: the
    cached file, its bytes, or None (the packaged model is then loaded as it is)."""
    return _derived(checked, _Rewrite(TEXT_NAME, TEXT_SHA256, _read_rows_int8, "text model", "the packaged model"))


class _Rewrite(NamedTuple):
    name: str  # the file's name in the cache directory
    digest: str  # the sha256 it is used with
    rewrite: Callable[[Any], None]
    what: str  # how a log line names it
    instead: str  # and what is used without it


def _derived(checked: Callable[[], Path], kind: _Rewrite) -> Path | bytes | None:
    try:
        target = cache_dir() / "models" / kind.name
        if target.is_file() and file_sha256(target) == kind.digest:
            return target
        return _write(target, checked, kind)
    except EmbedderError:
        raise  # the source is not the model it should be
    except Exception as exc:  # a cache that cannot be read or written costs speed, never an answer
        log.warning("[MEM:EMBED] could not have the %s (%s); using %s", kind.what, exc, kind.instead)
        return None


def _write(target: Path, checked: Callable[[], Path], kind: _Rewrite) -> Path | bytes | None:
    try:
        import onnx
    except ImportError:
        log.debug("[MEM:EMBED] no onnx package: no %s, %s is used", kind.what, kind.instead)
        return None
    model = onnx.load(str(checked()))
    kind.rewrite(model)
    data: bytes = model.SerializeToString()
    if hashlib.sha256(data).hexdigest() != kind.digest:
        log.info("[MEM:EMBED] this onnx writes the %s otherwise; it is used from memory", kind.what)
        return data
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    _sweep(folder)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=_PARTIAL, delete=False) as handle:
        handle.write(data)
    try:
        # Readable by all, as the package it is derived from (a temporary file is 0600): a cache shared
        # by two accounts (an image built by one, run by another) serves both.
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, target)  # whole or absent: another process may be reading it
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return target


def _sweep(folder: Path) -> None:
    """Remove what writers killed before their rename left (an hour old: not a running writer's)."""
    stale = time.time() - 3600
    for left in folder.glob(_PARTIAL + "*"):
        with contextlib.suppress(OSError):
            if left.stat().st_mtime < stale:
                left.unlink()


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _gathered_int8(node: Any, producer: dict[str, Any], constants: dict[str, Any]) -> list[Any]:
    """``Gather(Mul(Cast(int8 table), scale), ids)`` as the rows it reads, turned to float:
    ``Mul(Cast(Gather(table, ids)), Gather(scale, ids))``, the very same values. Read whole, the
    word embeddings' table (30,522 rows) was made float at every load (~80 ms of the twin's start,
    and 47 MB held) for the few rows a question reads."""
    from onnx import helper

    mul: Any = producer.get(node.input[0]) if node.op_type == "Gather" else None
    cast: Any = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
    if (cast is None or cast.op_type != "Cast" or cast.input[0] not in constants or mul.input[1] not in constants
            or any(a.name == "axis" and a.i != 0 for a in node.attribute)
            or list(constants[mul.input[1]].dims) != [*constants[cast.input[0]].dims[:1], 1]):
        return [node]  # a scale per row of the table, or it is left as it is
    name, ids = node.output[0], node.input[1]
    return [
        helper.make_node("Gather", [cast.input[0], ids], [f"{name}.q8"], name=f"{name}.rows"),
        helper.make_node("Cast", [f"{name}.q8"], [f"{name}.f"], name=f"{name}.cast",
                         **{a.name: helper.get_attribute_value(a) for a in cast.attribute}),
        helper.make_node("Gather", [mul.input[1], ids], [f"{name}.scales"], name=f"{name}.row_scales"),
        helper.make_node("Mul", [f"{name}.f", f"{name}.scales"], [name], name=f"{name}.scaled"),
    ]


def _keep_weights_int8(model: Any) -> None:
    """Replace each ``MatMul(x, Mul(Cast(int8 W), scale))`` of constant weights by ``MatMulNBits``
    over the same weights (unsigned, around the default zero point 128) and the same scales, and
    each lookup in an int8 table by the rows it reads (:func:`_gathered_int8`)."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    nodes = []
    for node in graph.node:
        mul: Any = producer.get(node.input[1]) if node.op_type == "MatMul" else None
        cast: Any = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants or mul.input[1] not in constants:
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(constants[cast.input[0]])  # int8, inputs x outputs
        scale = numpy_helper.to_array(constants[mul.input[1]]).astype(np.float32).reshape(-1)
        rows, columns = weight.shape
        if weight.dtype != np.int8 or rows % BLOCK or scale.size != columns:
            nodes.append(node)
            continue
        blocks = rows // BLOCK
        packed = (weight.astype(np.int16) + 128).astype(np.uint8).T.reshape(columns, blocks, BLOCK)
        name = node.output[0]
        graph.initializer.extend([numpy_helper.from_array(packed, f"{name}.q8"),
                                  numpy_helper.from_array(np.repeat(scale, blocks), f"{name}.scales")])
        nodes.append(helper.make_node(
            "MatMulNBits", [node.input[0], f"{name}.q8", f"{name}.scales"], list(node.output),
            name=f"{name}.nbits", domain="com.microsoft", K=rows, N=columns, bits=8, block_size=BLOCK,
            accuracy_level=_ACCURACY,
        ))
    nodes = [rows for node in nodes for rows in _gathered_int8(node, producer, constants)]
    _keep_nodes(model, nodes)
    if not any(entry.domain == "com.microsoft" for entry in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _read_rows_int8(model: Any) -> None:
    """Each lookup in an int8 table by the rows it reads (:func:`_gathered_int8`), the rest as it is."""
    graph = model.graph
    constants = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    _keep_nodes(model, [rows for node in graph.node for rows in _gathered_int8(node, producer, constants)])


def _keep_nodes(model: Any, nodes: list[Any]) -> None:
    """``nodes`` as the graph's, without the replaced ones: what no output needs, and its constants."""
    graph = model.graph
    outputs = {out.name for out in graph.output}
    while True:  # the replaced Cast and Mul, and anything that only fed them
        used = {name for node in nodes for name in node.input} | outputs
        alive = [node for node in nodes if any(out in used for out in node.output)]
        if len(alive) == len(nodes):
            break
        nodes = alive
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)

