"""Publishing a batch run's output: staging, commit, and the `_SUCCESS` marker.

A run writes its datasets under a staging directory inside the output,
`OUTPUT/_sitestrip-staging-<run id>/{pages,menus,errors,sites,links}/` (links only with
`output.links` on), and the command line commits them only once the run has finished and
been judged a success:

- Local (POSIX) output: each dataset directory is swapped with the staged one in
  one rename (Linux `renameat2(RENAME_EXCHANGE)`), so a reader globbing
  `OUTPUT/pages/*.parquet` lists either the previous complete dataset or the new
  one. Where the exchange is not supported (another OS, a filesystem without it),
  the old directory is renamed aside and the new one into place: two renames,
  with an instant between them where the dataset directory is absent, never one
  where it mixes two runs. The old directories are deleted after the commit.
- Object stores (gs://, s3://, any non-local Beam filesystem): a rename is a copy
  and a delete, so there is no atomic swap. The staged files are moved to their
  final names, `_SUCCESS` is written, and only then are the previous run's files
  that the new run does not overwrite deleted. Readers there take the file list
  from `_SUCCESS` (`committed_files`), not from a listing.

`_SUCCESS` (JSON, `success_marker`) is removed when a commit starts and written
last, so it exists exactly while the output is one complete run, and it names
every file of every dataset with its row count. A run that fails, is refused or
is interrupted never reaches the commit: the previous output, `_SUCCESS`
included, stays as it was, and its staging directory is removed (a run killed
outright leaves it behind; the next run into the output removes it). Names
beginning with "_" are skipped by pyarrow, Spark, Hive and DuckDB's hive
partitioning when they list a dataset.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import uuid

import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from sitestrip.schemas import DATASETS, OPTIONAL_DATASETS

SUCCESS = "_SUCCESS"
STAGING_PREFIX = "_sitestrip-staging-"
MARKER_FORMAT = 1


class PublishError(Exception):
    """The output could not be committed; the previous output's files are unchanged."""


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def staging_dir(output: str, run_id: str | None = None) -> str:
    return FileSystems.join(output, STAGING_PREFIX + (run_id or uuid.uuid4().hex[:12]))


def remove_tree(path: str) -> None:
    """Delete a directory and everything under it; nothing if it does not exist."""
    if is_local(path):
        shutil.rmtree(_local(path), ignore_errors=True)
        return
    try:
        FileSystems.delete([path.rstrip("/") + "/"])
    except Exception:  # nothing there, or already gone: the object store says so in many ways
        pass


def stale_staging(output: str, keep: str | None = None) -> list[str]:
    """Staging directories of earlier runs that never finished (killed outright)."""
    if is_local(output):
        root = _local(output)
        try:
            names = os.listdir(root)
        except OSError:
            return []
        found = [os.path.join(root, n) for n in names if n.startswith(STAGING_PREFIX)]
    else:
        try:
            (result,) = FileSystems.match([FileSystems.join(output, STAGING_PREFIX + "*")])
            found = sorted({_top_dir(output, m.path) for m in result.metadata_list})
        except Exception:
            found = []
    keep_path = _local(keep) if keep and is_local(keep) else keep
    return [p for p in found if p != keep_path]


def _top_dir(output: str, path: str) -> str:
    rest = path[len(output.rstrip("/")) + 1:]
    return FileSystems.join(output, rest.split("/", 1)[0])


# ------------------------------------------------------------------ the marker

def dataset_files(root: str) -> dict:
    """{dataset: [{"path": relative to root, "rows": n, "bytes": n}]} of the part files under `root`.
    A dataset the run did not write (OPTIONAL_DATASETS: the links dataset with output.links
    off) is left out; a written one always has its part 0."""
    out = {}
    for name in DATASETS:
        pattern = FileSystems.join(root, name, "part-*.parquet")
        try:
            metas = sorted((m for r in FileSystems.match([pattern]) for m in r.metadata_list),
                           key=lambda m: m.path)
        except Exception:
            metas = []
        files = []
        for meta in metas:
            with FileSystems.open(meta.path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                rows = pq.ParquetFile(fh).metadata.num_rows
            files.append({"path": f"{name}/{meta.path.rsplit('/', 1)[-1]}", "rows": rows,
                          "bytes": meta.size_in_bytes})
        if files or name not in OPTIONAL_DATASETS:
            out[name] = files
    return out


def pages_metadata(root: str, files: dict) -> dict:
    """The sitestrip.* key-value metadata of the first pages file (model id, method, schema)."""
    if not files.get("pages"):
        return {}
    path = FileSystems.join(root, files["pages"][0]["path"])
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        meta = pq.read_schema(fh).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"sitestrip.")}


def inputs_digest(paths: list[str]) -> str:
    return "sha256:" + hashlib.sha256("\n".join(sorted(paths)).encode("utf-8", "surrogatepass")).hexdigest()


def config_digest(config) -> str:
    import dataclasses
    canonical = json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def success_marker(*, version: str, schema_version: str, run_id: str, finished: str, config_name: str,
                   config_digest_: str, inputs: list[str], unread: list[dict], counts: dict | None,
                   files: dict, pages_meta: dict, state: dict | None) -> dict:
    """The content of `_SUCCESS`: what a scheduler or a reader needs to trust and find the run."""
    return {
        "format": MARKER_FORMAT,
        "sitestrip_version": version,
        "schema_version": schema_version,
        "run_id": run_id,
        "finished": finished,
        "config": {"name": config_name, "digest": config_digest_},
        "main_content_method": pages_meta.get("sitestrip.main_content.method"),
        "model_id": pages_meta.get("sitestrip.model_id"),
        "inputs": {"files": len(inputs), "read": len(inputs) - len(unread),
                   "digest": inputs_digest(inputs), "not_read": unread},
        "counts": counts,
        "datasets": {name: {"rows": sum(f["rows"] for f in entries), "files": entries}
                     for name, entries in files.items()},
        "state": state,
    }


def read_success(output: str) -> dict | None:
    """The `_SUCCESS` marker of `output`, or None when there is none (no complete run there, or a
    commit under way); a marker that is not sitestrip's JSON raises ValueError."""
    path = FileSystems.join(output, SUCCESS)
    try:
        if not FileSystems.exists(path):
            return None
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not sitestrip's success marker ({exc})") from None
    if not isinstance(data, dict) or "datasets" not in data:
        raise ValueError(f"{path} is not sitestrip's success marker")
    return data


def committed_files(output: str, dataset: str) -> list[str]:
    """The full paths of `dataset`'s files in the run `_SUCCESS` describes: how a reader of an
    object store (where a listing can mix two runs while a commit is under way) finds them."""
    marker = read_success(output)
    if marker is None:
        raise FileNotFoundError(f"{FileSystems.join(output, SUCCESS)}: no complete run in {output}")
    return [FileSystems.join(output, f["path"]) for f in marker["datasets"][dataset]["files"]]


def _write_marker(output: str, marker: dict) -> None:
    data = (json.dumps(marker, indent=1, sort_keys=False) + "\n").encode("utf-8")
    target = FileSystems.join(output, SUCCESS)
    if is_local(output):
        temp = os.path.join(_local(output), f"{SUCCESS}.{uuid.uuid4().hex}.tmp")
        with open(temp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, _local(target))
        return
    # An object becomes visible only when its upload is complete.
    with FileSystems.create(target, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        fh.write(data)


def _remove_marker(output: str) -> None:
    path = FileSystems.join(output, SUCCESS)
    if is_local(output):
        try:
            os.remove(_local(path))
        except FileNotFoundError:
            pass
    elif FileSystems.exists(path):
        FileSystems.delete([path])


# ------------------------------------------------------------------ commit

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: str, b: str) -> bool:
    """Swap two existing paths in one atomic rename; False where the OS or filesystem cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), a)


def _commit_local(staging: str, output: str) -> None:
    staging, output = _local(staging), _local(output)
    missing = [os.path.join(staging, name) for name in DATASETS
               if name not in OPTIONAL_DATASETS and not os.path.isdir(os.path.join(staging, name))]
    if missing:
        raise PublishError(f"{missing[0]}: the staged dataset is missing")
    for name in DATASETS:
        new, live = os.path.join(staging, name), os.path.join(output, name)
        if not os.path.isdir(new):
            # An optional dataset this run did not write: an earlier run's goes with the
            # previous datasets (moved into the staging directory, removed after the commit),
            # so the output never mixes two runs.
            if os.path.lexists(live):
                os.rename(live, os.path.join(staging, f"_previous-{name}"))
            continue
        if not os.path.lexists(live):
            os.rename(new, live)
        elif not exchange(new, live):
            aside = os.path.join(staging, f"_previous-{name}")
            os.rename(live, aside)
            os.rename(new, live)


def _commit_remote(staging: str, output: str, files: dict) -> list[str]:
    """Move the staged files to their final names; returns the previous run's files to delete
    once `_SUCCESS` is written (those the new run's names do not replace)."""
    previous = []
    for name in DATASETS:
        pattern = FileSystems.join(output, name, "part-*.parquet")
        try:
            previous += [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
        except Exception:
            pass
    sources = [FileSystems.join(staging, f["path"]) for entries in files.values() for f in entries]
    targets = [FileSystems.join(output, f["path"]) for entries in files.values() for f in entries]
    if sources:
        FileSystems.rename(sources, targets)
    return sorted(set(previous) - set(targets))


# Written into the output by `sitestrip report` by default: they describe the run they were
# made from, so they go when another run is published.
REPORT_FILES = ("report.html", "report.md")


def commit(staging: str, output: str, marker: dict, local: bool | None = None) -> None:
    """Publish the datasets under `staging` as `output`'s and write `_SUCCESS` last. `local`
    chooses the commit (default: by the path); the object-store commit works on any filesystem."""
    local = is_local(output) if local is None else local
    _remove_marker(output)
    stale_reports = [FileSystems.join(output, name) for name in REPORT_FILES]
    stale_reports = [path for path in stale_reports if FileSystems.exists(path)]
    if stale_reports:
        FileSystems.delete(stale_reports)
    if local:
        _commit_local(staging, output)
        _write_marker(output, marker)
        remove_tree(staging)       # now holds the previous run's datasets
        return
    obsolete = _commit_remote(staging, output, {name: d["files"] for name, d in marker["datasets"].items()})
    _write_marker(output, marker)
    if obsolete:
        FileSystems.delete(obsolete)
    remove_tree(staging)
