"""Rewrite references to the bare top-level packages into the `sitestrip.` namespace.

The folders pipeline/, transforms/, schemas/, configs/ and bench/ install as
sitestrip.pipeline, ... (pyproject.toml's package-dir). Code from before that change,
e.g. a branch merged later, still says `from transforms.x import y` or
`python -m pipeline.cli`; this script rewrites it, and running it again changes
nothing (every pattern needs the bare name right after `from`/`import`/`-m`/a quote).

    python scripts/rewrite_namespace.py [FILE_OR_DIR ...]   # default: the whole checkout

Rewritten, in .py files: `from X[.m] import`, `import X.m as n`, `import X`
(-> `from sitestrip import X`), and string literals that are a module path of the
project ("pipeline.cli", also "-m pipeline.worker" inside a string); in .md files:
`-m X.m` commands. A quoted dotted name is only taken as a module path when that module
exists in the checkout, so a host name such as "bench.example" is left alone. Lines
naming an old commit's code (`/tmp/grid` in docs/benchmarks.md runs commit 3ba4bc5,
which has no namespace) are left alone. `import X.m` without `as` is reported, not
rewritten: the name it binds changes, so its uses need a look.
"""
from __future__ import annotations

import os
import re
import sys

PACKAGES = ("pipeline", "transforms", "schemas", "configs", "bench")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "out", "__pycache__", ".hypothesis",
             ".pytest_cache", "node_modules"}
NAMES = "|".join(PACKAGES)

FROM_IMPORT = re.compile(rf"^([ \t]*)from ({NAMES})(?=[.\s])", re.M)
IMPORT_AS = re.compile(rf"^([ \t]*)import ({NAMES})((?:\.\w+)+) as (\w+)([ \t]*(?:#.*)?)$", re.M)
IMPORT_BARE = re.compile(rf"^([ \t]*)import ({NAMES})([ \t]*(?:#.*)?)$", re.M)
IMPORT_DOTTED = re.compile(rf"^[ \t]*import ({NAMES})\.\w+(?!.* as )", re.M)
QUOTED_MODULE = re.compile(rf"""(["'])({NAMES})((?:\.\w+)+)\1""")
DASH_M = re.compile(rf"(-m )({NAMES})((?:\.\w+)+)")
KEEP_LINE = re.compile(r"/tmp/grid")
SHIFT = "sitestrip."


def _is_module(package: str, dotted: str) -> bool:
    """Whether package + dotted (".cli", ".models.x") names a module of the checkout."""
    path = os.path.join(REPO, package, *dotted.strip(".").split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def _module_sub(match: re.Match) -> str:
    head, package, dotted = match.group(1), match.group(2), match.group(3)
    if not _is_module(package, dotted):
        return match.group(0)
    tail = match.group(0)[len(head) + len(package) + len(dotted):]
    return f"{head}sitestrip.{package}{dotted}{tail}"


def _from_imports(text: str) -> str:
    """FROM_IMPORT, keeping the continuation lines of `from X import (a,\n    b)` aligned
    under the parenthesis, which moves right by len("sitestrip.")."""
    lines = text.splitlines(keepends=True)
    shift_at = None        # column of the open parenthesis continuation lines align to
    for i, line in enumerate(lines):
        if shift_at is not None:
            indent = len(line) - len(line.lstrip(" "))
            if indent == shift_at and line.strip():
                lines[i] = " " * len(SHIFT) + line
            if ")" in line:
                shift_at = None
            continue
        new = FROM_IMPORT.sub(r"\1from sitestrip.\2", line)
        if new != line:
            lines[i] = new
            paren = line.find("(")
            if paren >= 0 and ")" not in line[paren:]:
                shift_at = paren + 1
    return "".join(lines)


def rewrite_python(text: str) -> str:
    text = _from_imports(text)
    text = IMPORT_AS.sub(r"\1import sitestrip.\2\3 as \4\5", text)
    text = IMPORT_BARE.sub(r"\1from sitestrip import \2\3", text)
    text = QUOTED_MODULE.sub(_module_sub, text)
    return DASH_M.sub(_module_sub, text)


def rewrite_markdown(text: str) -> str:
    return "".join(line if KEEP_LINE.search(line) else DASH_M.sub(_module_sub, line)
                   for line in text.splitlines(keepends=True))


def _files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            for name in sorted(files):
                if name.endswith((".py", ".md")):
                    yield os.path.join(folder, name)


def main(argv: list[str]) -> int:
    # this script and its test name the bare packages on purpose
    on_purpose = {os.path.abspath(__file__), os.path.join(REPO, "tests", "test_namespace.py")}
    changed, unsure = [], []
    for path in _files(argv or [REPO]):
        if os.path.abspath(path) in on_purpose:
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = rewrite_python(text) if path.endswith(".py") else rewrite_markdown(text)
        if path.endswith(".py"):
            unsure += [f"{path}: {m.group(0).strip()}" for m in IMPORT_DOTTED.finditer(new)]
        if new != text:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
            changed.append(path)
    for path in changed:
        print(f"rewrote {os.path.relpath(path)}")
    for line in unsure:
        print(f"check by hand: {line}", file=sys.stderr)
    return 1 if unsure else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
