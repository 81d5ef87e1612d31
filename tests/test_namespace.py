"""One namespace: the project's folders install as sitestrip.pipeline, sitestrip.transforms,
sitestrip.schemas and sitestrip.configs (pyproject.toml's package-dir),
so nothing may name them bare: a bare `from transforms.x import y` only worked while the
checkout (or a `transforms` of some other distribution) was on sys.path. The wheel's own
file list is checked in test_runners.py (the packaging test builds it)."""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BARE = ("pipeline", "transforms", "schemas", "configs")
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "out", "__pycache__", ".hypothesis",
             ".pytest_cache"}
# This file names the bare packages on purpose (to find them).
ON_PURPOSE = {Path(__file__).resolve()}
DASH_M = re.compile(r"-m (%s)\.\w" % "|".join(BARE))


def python_files():
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if name.endswith(".py") and path.resolve() not in ON_PURPOSE:
                yield path


def is_project_module(dotted: str) -> bool:
    """Whether "pipeline.cli"-like `dotted` names a module of the checkout's folders."""
    path = REPO.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def bare_references(path: Path, root: Path = REPO) -> list[str]:
    """Imports of a bare project package, and strings naming one as a module to run or load
    ("pipeline.cli", "... -m pipeline.worker ...")."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in BARE]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in BARE:
                found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if (text.split(".")[0] in BARE and "." in text and is_project_module(text)) \
                    or DASH_M.search(text):
                found.append(f"string {text[:60]!r}")
    return [f"{path.relative_to(root)}:{line}" for line in found]


def test_no_file_of_the_checkout_names_a_bare_package(tmp_path):
    """Every .py file (product, bench, tests, sample builder), parsed: no import of
    pipeline/transforms/schemas/configs without `sitestrip.`, and no string naming
    one as a module (`-m pipeline.worker`, "pipeline.cli"). The check itself is shown to
    catch each kind on the three-line source below, so an empty result means something."""
    probe = tmp_path / "probe.py"
    probe.write_text('from transforms.page import parse_page\nimport configs\n'
                     'CMD = "python -m pipeline.worker INFO"\nSITE = "pipeline.example"\n')
    # "pipeline.example" is a host name (there is no pipeline/example.py), not a module
    assert bare_references(probe, tmp_path) == [
        "probe.py:from transforms.page import ...",
        "probe.py:import configs",
        "probe.py:string 'python -m pipeline.worker INFO'"]
    files = list(python_files())
    assert len(files) > 50
    assert [ref for path in files for ref in bare_references(path)] == []



def _python_outside_the_checkout(code, cwd, timeout):
    """Run `code` in a child interpreter started in `cwd` (not the checkout), finding
    sitestrip through its install only (no PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)

@pytest.mark.slow
def test_importing_every_module_loads_no_bare_package(tmp_path):
    """A child process outside the checkout (so the checkout is not on sys.path) imports
    every module of the four subpackages; none of them, directly or through another, may
    load a module under a bare name: the module table then holds sitestrip.* only."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import sitestrip\n"
        f"bare = {BARE!r}\n"
        "count = 0\n"
        "for name in bare:\n"
        "    package = importlib.import_module('sitestrip.' + name)\n"
        "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "        count += 1\n"
        "print(count)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in bare))\n")
    proc = _python_outside_the_checkout(code, tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    count, loaded = proc.stdout.splitlines()
    assert int(count) >= 40     # pipeline 15, transforms 35, schemas 1 at least
    assert loaded == "[]"


def test_bare_package_names_do_not_import_outside_the_checkout(tmp_path):
    """The install adds `sitestrip` alone: from a directory that is not the checkout,
    `import pipeline` (and the other three) fails, while `sitestrip.pipeline` is there."""
    code = ("import importlib\n"
            f"for name in {BARE!r}:\n"
            "    importlib.import_module('sitestrip.' + name)\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except ModuleNotFoundError:\n"
            "        print(name, 'absent')\n")
    proc = _python_outside_the_checkout(code, tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == [f"{name} absent" for name in BARE]
