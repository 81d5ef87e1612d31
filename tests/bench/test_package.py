"""The bench is a distribution apart from the product (bench/pyproject.toml): the product's
code never imports it, the product's command only points to it, and its own modules import
one another without cycles and without each other's private names."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sitestrip_bench import cli as bench_cli

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "sitestrip_bench"
PRODUCT_DIRS = ("pipeline", "transforms", "schemas", "configs", "src")


def imported_modules(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every import in a file, at any depth (lazy imports included);
    `import a.b` gives ("a.b", [])."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, [a.name for a in node.names]))
    return found


def bench_graph(folder: Path) -> dict[str, set[str]]:
    """module → the modules of the same package it imports (`from pkg import mod` counts)."""
    package = folder.name
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name in modules:
        edges = set()
        for module, names in imported_modules(folder / f"{name}.py"):
            parts = module.split(".")
            if parts[0] != package:
                continue
            if len(parts) > 1:
                edges.add(parts[1])
            else:
                edges |= {n for n in names if n in modules}
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_product_file_imports_the_bench():
    hits = []
    for folder in PRODUCT_DIRS:
        for path in (REPO / folder).rglob("*.py"):
            for module, _ in imported_modules(path):
                if module.split(".")[0] == "sitestrip_bench" or module.startswith("sitestrip.bench"):
                    hits.append(f"{path.relative_to(REPO)}: {module}")
    assert hits == []
    # and the check sees one: the bench's own CLI imports its modules
    assert any(m.startswith("sitestrip_bench.") for m, _ in imported_modules(BENCH / "cli.py"))


@pytest.mark.slow
def test_importing_the_product_cli_loads_no_bench_module(tmp_path):
    """A child process outside the checkout imports the product's command line and runs its
    --help: no sitestrip_bench module is loaded. The same probe, importing the bench's CLI,
    sees it, so an empty answer means something."""
    probe = ("import sys, contextlib, io\n"
             "import {module}\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    {call}\n"
             "print(sorted(m for m in sys.modules if m.startswith('sitestrip_bench') or m.startswith('sitestrip.bench')))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def loaded(module, call):
        proc = subprocess.run([sys.executable, "-c", probe.format(module=module, call=call)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().splitlines()[-1]

    assert loaded("sitestrip.pipeline.cli", "sitestrip.pipeline.cli.main(['--help'])") == "[]"
    assert "sitestrip_bench.cli" in loaded("sitestrip_bench.cli", "pass")


def test_the_product_command_points_to_the_bench(capsys):
    from sitestrip.pipeline.cli import main
    for command, moved in (("bench", "bench"), ("train", "train"), ("tune", "tune"),
                           ("bench-duplicates", "duplicates")):
        assert main([command, "--corpus", "x"]) == 2
        assert f"sitestrip-bench {moved}" in capsys.readouterr().err


def test_the_bench_modules_import_one_another_without_cycles(tmp_path):
    assert cycles(bench_graph(BENCH)) == []
    # the check finds a cycle through a lazy import and through `from package import module`
    probe = tmp_path / "probe_pkg"
    probe.mkdir()
    (probe / "a.py").write_text("from probe_pkg.b import x\n")
    (probe / "b.py").write_text("def x():\n    from probe_pkg import c\n")
    (probe / "c.py").write_text("import probe_pkg.a\n")
    (probe / "d.py").write_text("from probe_pkg import a\n")
    assert cycles(bench_graph(probe)) == [["a", "b", "c"]]


def test_no_bench_module_imports_a_private_name():
    hits = [f"{path.name}: from {module} import {name}"
            for path in BENCH.glob("*.py")
            for module, names in imported_modules(path)
            if module.split(".")[0] in ("sitestrip", "sitestrip_bench")
            for name in names if name.startswith("_")]
    assert hits == []


def test_every_command_of_the_bench_resolves_to_a_main():
    import importlib
    for name, (help_text, handler) in bench_cli.COMMANDS.items():
        assert help_text
        if isinstance(handler, str):
            assert callable(importlib.import_module(f"sitestrip_bench.{handler}").main), name
        else:
            assert callable(handler), name


def test_the_bench_command_lists_its_commands_and_refuses_others(capsys):
    assert bench_cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("bench", "speed", "train", "tune", "scaling", "compare-runs"))
    with pytest.raises(SystemExit) as exc:
        bench_cli.main(["nope"])
    assert exc.value.code == 2
    assert "unknown command 'nope'" in capsys.readouterr().err
