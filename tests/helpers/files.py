"""What a directory holds, to assert that a run left an earlier output untouched."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def snapshot(root: Path) -> dict:
    """Every file under `root` (relative path → sha256), directories included by their files."""
    out = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
