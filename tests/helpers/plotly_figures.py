"""Reading Plotly figures back as numbers: what ``gr.Plot`` sends (its JSON) and what the page holds."""
from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Union

import numpy as np

DTYPES = {"f4": np.float32, "f8": np.float64, "i4": np.int32, "u1": np.uint8, "i1": np.int8, "i2": np.int16,
          "u2": np.uint16, "u4": np.uint32}


def array(value: Union[Dict[str, Any], List]) -> np.ndarray:
    """A plotly array: a typed-array spec (``{"dtype", "bdata", "shape"}``, how plotly encodes numpy arrays)
    decoded exactly, or nested lists as they are."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=DTYPES[value["dtype"]])
        shape = [int(n) for n in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(value)


def figure(plot: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The figure of a ``gr.Plot`` value as the client receives it (``{"type": "plotly", "plot": json}``)."""
    if isinstance(plot, dict) and "plot" in plot:
        assert plot.get("type") == "plotly", plot.get("type")
        plot = plot["plot"]
    return json.loads(plot) if isinstance(plot, str) else plot


def heatmaps(plot) -> List[np.ndarray]:
    """The z matrices of the figure's heatmaps, in trace order."""
    return [array(trace["z"]) for trace in figure(plot)["data"] if trace.get("type") == "heatmap"]
