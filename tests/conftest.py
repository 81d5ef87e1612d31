"""Markers and the checks that keep them true (pyproject.toml registers them, --strict-markers).

- beam: the test runs a Beam pipeline in this process (the CLI's `run`, build_pipeline, a
  TestPipeline) or starts `sitestrip run` in a child process (which may stop before its
  pipeline does). A test that does either without the marker fails at teardown, so the
  marker cannot fall behind the tests.
- dask: the test starts a local Dask cluster; slow too.
- browser: the test drives headless Chromium (the `chromium` fixture); marked browser and
  slow from the fixture.
- slow: over about a second here (a Beam run over many pages, a child process, a cluster or
  a browser, a wheel build). `pytest -m "not slow"` is the loop while editing; CI runs all.
  Unmarked tests that took over SLOW_SECONDS are listed at the end of a run.
"""
import importlib.abc
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

# Twice the bar the slow marks were set by, so that a loaded machine does not list borderline tests.
SLOW_SECONDS = 2.0

# What the running test started, filled by the wrappers below (setup, call and teardown).
_started: list[str] = []
# Fixtures whose setup started one: (where defined, name). A module fixture runs once, for the
# first test that uses it; the tests after it that use it need Beam as much.
_beam_fixtures: set[tuple[str, str]] = set()
_unmarked_slow: list[tuple[str, float]] = []


def _beam_run(run):
    def wrapper(self, *args, **kwargs):
        _started.append("a Beam pipeline in this process")
        return run(self, *args, **kwargs)
    return wrapper


def _is_cli_run(args) -> bool:
    """Whether a child process's command line is the CLI's `run` (a pipeline in the child)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        return False
    argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]
    if {"--version", "--help", "-h"} & set(argv):
        return False
    for i, a in enumerate(argv):
        if os.path.basename(a) == "run.py":
            return True
        if a == "sitestrip.pipeline.cli" or os.path.basename(a) == "sitestrip":
            return argv[i + 1:i + 2] == ["run"]
    return False


def _popen_init(init):
    def wrapper(self, args, *rest, **kwargs):
        if _is_cli_run(args):
            _started.append("a child `sitestrip run`")
        return init(self, args, *rest, **kwargs)
    return wrapper


class _WatchBeamOnImport(importlib.abc.MetaPathFinder):
    """Wraps Pipeline.run as apache_beam.pipeline is imported. Importing Beam up front would
    cost every pytest start seconds, and the CLI imports it only once a run begins."""

    def find_spec(self, name, path, target=None):
        if name != "apache_beam.pipeline":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.Pipeline.run = _beam_run(module.Pipeline.run)
        spec.loader.exec_module = exec_module
        return spec


def pytest_configure(config):
    subprocess.Popen.__init__ = _popen_init(subprocess.Popen.__init__)
    if "apache_beam.pipeline" in sys.modules:
        beam_pipeline = sys.modules["apache_beam.pipeline"]
        beam_pipeline.Pipeline.run = _beam_run(beam_pipeline.Pipeline.run)
    else:
        sys.meta_path.insert(0, _WatchBeamOnImport())


def pytest_collection_modifyitems(items):
    for item in items:
        if "chromium" in item.fixturenames:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser") or item.get_closest_marker("dask"):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _started.clear()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    before = len(_started)
    try:
        return (yield)
    finally:
        if len(_started) > before:
            _beam_fixtures.add((fixturedef.baseid, fixturedef.argname))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    if item.get_closest_marker("beam") is not None:
        return
    fixtures = sorted(name for base, name in _beam_fixtures
                      if name in item.fixturenames and item.nodeid.startswith(base))
    if _started or fixtures:
        what = f"started {_started[0]}" if _started else f"uses fixture {fixtures[0]}, which ran Beam,"
        pytest.fail(f"{item.nodeid} {what} without @pytest.mark.beam: mark it "
                    "(and slow too if it takes over a second)", pytrace=False)


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > SLOW_SECONDS and "slow" not in report.keywords:
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter):
    if _unmarked_slow:
        terminalreporter.section(f"tests over {SLOW_SECONDS:g} s without the slow marker")
        for nodeid, seconds in sorted(_unmarked_slow, key=lambda x: -x[1]):
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


@pytest.fixture(scope="session")
def chromium():
    """The headless browser's path; a test using it is marked browser and slow. Skipped where
    Chromium is missing, except in CI (CI=true), where a missing browser fails."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("chromium is not installed; .ci/run installs it")
    pytest.skip("chromium is not installed (apt-get install chromium); required in CI")
