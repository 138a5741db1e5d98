"""Shared by the gallery scripts: where a figure goes (``python <example>.py [out_dir]``)."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")


def figure_path(script: str) -> Path:
    """``<out_dir>/<script name>.png``; ``out_dir`` is the first argument, else the script's folder."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(script).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    return out / (Path(script).stem + ".png")
