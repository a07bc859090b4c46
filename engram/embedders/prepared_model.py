"""The default model as onnxruntime prepares it, kept so that a new process need not prepare it again.

The packaged model stores int8 weights and turns each back into float32 in the graph; every new
session folds those into float weights before its first run. In a fresh process that made
creating the session 0.25-0.35 s, most of the time to a first answer; from the prepared graph it
takes 0.16-0.19 s. The graph is saved once per machine, at onnxruntime's portable level of
optimizations (no kernels tied to this CPU), in the cache directory (``$ENGRAM_CACHE_DIR``, else
``~/.cache/engram``), named by the source model's digest, the onnxruntime version and the file's
own size: the same vectors bit for bit. It holds the model's weights (about 90 MB, in float) and
nothing of anyone's data; another onnxruntime version prepares a file of its own (two virtual
environments may share the folder), so removing the folder is how older ones are reclaimed. Where
it cannot be written (a read-only home, a full disk), the source model is used as before.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from engram.config import cache_dir

__all__ = ["prepared_model"]

_log = logging.getLogger(__name__)
_NAME = "all-MiniLM-L6-v2-prepared"


def prepared_model(source: Path, digest: str, ort: Any, *, make: bool = True) -> Path | None:
    """The prepared graph of the model at ``source`` (whose sha256 is ``digest``), saved on first
    need when ``make`` (only a source whose digest was checked is prepared); None where there is
    none (the caller then loads ``source``)."""
    folder = cache_dir() / "models"
    stem = f"{_NAME}-{digest[:16]}-ort{ort.__version__}"
    for found in folder.glob(f"{stem}-*.onnx") if folder.is_dir() else ():
        size = found.name[len(stem) + 1 : -len(".onnx")]
        if size.isdigit() and found.stat().st_size == int(size):  # a cut or altered copy is made again
            return found
    if not make:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as work:
            made = Path(work) / "prepared.onnx"
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            options.optimized_model_filepath = str(made)
            ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
            target = folder / f"{stem}-{made.stat().st_size}.onnx"
            os.replace(made, target)  # whole or absent: another process may be reading the folder
        return target
    except Exception as exc:  # any failure to keep it leaves the source model in use
        _log.debug("the prepared model could not be kept in %s: %s", folder, exc)
        return None
