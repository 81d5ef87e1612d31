"""The state directory of incremental runs (`--state DIR`): versions and an atomic switch.

    DIR/CURRENT                      one line: the name of the current version
    DIR/v00003-1a2b3c4d/part-*.parquet   that version's stored pages and fingerprints (schemas STATE)

A run reads the version CURRENT names, writes its new state as a new version directory
(pipeline/parts.py: every part written under a temporary name and renamed into place),
and once its output is published (pipeline/publish.py) the command line replaces CURRENT
(a temporary file renamed over it: atomic on a local or POSIX filesystem; on object
stores, a copy, so a reader racing the switch may miss CURRENT for a moment, never see a
half-written state). A run that fails or is interrupted leaves CURRENT and the version it
names untouched and removes its unfinished version directory (one killed outright leaves
it: garbage a later run ignores). A watch job writes versions at its checkpoints
(pipeline/watch.py). Older versions are kept (delete them at will: only the one CURRENT
names is read). Any directory or bucket Beam's FileSystems reach.
"""
from __future__ import annotations

import re
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from sitestrip.schemas import STATE, STATE_V1
from sitestrip.transforms.state import STATE_VERSION, StateError, StoredPage, stored_from_row

_LAYOUTS = {"1": STATE_V1, "2": STATE}

CURRENT = "CURRENT"
_VERSION = re.compile(r"v(\d{5,})-[0-9a-f]{8}")


def _read_text(path: str) -> str:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        return fh.read(4096).decode("utf-8", "replace")


def current_version(state_dir: str) -> str | None:
    """The version CURRENT names; None for a new (empty or absent) state directory."""
    path = FileSystems.join(state_dir, CURRENT)
    if not FileSystems.exists(path):
        return None
    name = _read_text(path).strip()
    if not _VERSION.fullmatch(name):
        raise StateError(f"{path}: not a state version name: {name[:80]!r}")
    return name


def next_version(current: str | None) -> str:
    number = int(_VERSION.fullmatch(current).group(1)) + 1 if current else 1
    return f"v{number:05d}-{uuid.uuid4().hex[:8]}"


def version_prefix(state_dir: str, version: str) -> str:
    return FileSystems.join(state_dir, version, "part")


def state_files(state_dir: str) -> list[str]:
    """The Parquet files of the current version, each checked by its footer (schema and
    state version) before any worker starts; StateError naming the file otherwise."""
    version = current_version(state_dir)
    if version is None:
        return []
    pattern = version_prefix(state_dir, version) + "-*.parquet"
    files = sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)
    if not files:
        raise StateError(f"{FileSystems.join(state_dir, version)}: CURRENT names a state version with no files")
    for path in files:
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                schema = pq.read_schema(fh)
        except Exception as exc:  # any damage to the footer: pyarrow raises several kinds
            raise StateError(f"{path}: not a readable state file ({type(exc).__name__}: {str(exc)[:200]})") from None
        version_of = (schema.metadata or {}).get(b"sitestrip.state_version", b"").decode()
        layout = _LAYOUTS.get(version_of)
        if layout is None or not schema.remove_metadata().equals(layout.remove_metadata()):
            raise StateError(f"{path}: state version {version_of or 'unknown'} with another layout; "
                             f"this sitestrip reads versions {', '.join(_LAYOUTS)}: start a new --state directory")
    return files


def state_table(fh, **kwargs):
    """A state file's table in the current layout (a version 1 file has no fingerprints)."""
    version = (pq.read_schema(fh).metadata or {}).get(b"sitestrip.state_version", b"").decode()
    fh.seek(0)
    table = pq.read_table(fh, schema=_LAYOUTS.get(version, STATE), **kwargs)
    for name in STATE.names:
        if name not in table.column_names:
            table = table.append_column(STATE.field(name), pa.nulls(table.num_rows, STATE.field(name).type))
    return table.select(STATE.names)


def read_state_file(path: str):
    """(site, StoredPage or StoredFingerprint) for every row of one state file; StateError
    naming the file (and the URL) when a row is damaged: a state is all or nothing, never
    silently partial."""
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            table = state_table(fh)
    except Exception as exc:
        raise StateError(f"{path}: not a readable state file ({type(exc).__name__}: {str(exc)[:200]})") from None
    for row in table.to_pylist():
        stored = stored_from_row(row, path)
        yield stored.site, stored


def write_current(state_dir: str, version: str) -> str:
    """Point CURRENT at `version` (a temporary file renamed over it)."""
    target = FileSystems.join(state_dir, CURRENT)
    temp = FileSystems.join(state_dir, f"_{CURRENT}.{uuid.uuid4().hex}.tmp")
    with FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        fh.write((version + "\n").encode("utf-8"))
    FileSystems.rename([temp], [target])
    return target


def read_site_state(files: list[str], site: str) -> list[StoredPage]:
    """The stored pages of one site in `files` (state_files' list): watch mode seeds a site's
    user state with them when it first sees the site. Parts are sorted by site, so the
    filter skips the row groups of other sites by their statistics."""
    out = []
    for path in files:
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                table = state_table(fh, filters=[("site", "==", site)])
        except Exception as exc:
            raise StateError(f"{path}: not a readable state file ({type(exc).__name__}: {str(exc)[:200]})") from None
        out.extend(stored_from_row(row, path) for row in table.to_pylist())
    return out
