"""`sitestrip-bench steps` (bench/sitestrip_bench/steps.py): named functions timed for one run
and put back after it, the arithmetic of the untimed parts, and a run through the pipeline."""
import json
import sys
import time
import types

import pytest

from sitestrip_bench.steps import STEPS, resolve, step_table, timed_steps


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class _Base:
    def method(self):
        _spin(0.002)
        return "base"


class _Sub(_Base):
    pass


@pytest.fixture
def module():
    """A module of hand-made steps: a function, a function calling itself, a generator."""
    mod = types.ModuleType("steps_fixture")

    def work(n):
        _spin(0.002)
        return n

    def countdown(n):
        return 0 if n == 0 else 1 + mod.countdown(n - 1)

    def pages(n):
        for k in range(n):
            _spin(0.002)
            yield k

    mod.work, mod.countdown, mod.pages, mod.Sub = work, countdown, pages, _Sub
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def test_each_step_adds_its_calls_and_cpu_and_is_put_back(module):
    originals = module.work, module.countdown, module.pages
    steps = (("work", "steps_fixture:work"), ("countdown", "steps_fixture:countdown"),
             ("pages", "steps_fixture:pages"), ("method", "steps_fixture:Sub.method"))
    with timed_steps(steps) as (cpu, calls):
        assert module.work(3) == 3 and module.work(4) == 4
        # The inner calls of a step to itself are the outer call's: one call.
        assert module.countdown(5) == 5
        produced = module.pages(3)
        assert calls["pages"] == 1 and cpu["pages"] < 0.002     # nothing run before the first item
        assert list(produced) == [0, 1, 2]
        assert module.Sub().method() == "base"
    assert calls == {"work": 2, "countdown": 1, "pages": 1, "method": 1}
    # Each item of the generator spun 2 ms: its time is its steps'.
    assert cpu["work"] >= 0.004 and cpu["pages"] >= 0.006 and cpu["method"] >= 0.002
    assert (module.work, module.countdown, module.pages) == originals
    # A method the class inherits is inherited again, not left as the class's own.
    assert "method" not in vars(_Sub) and _Sub.method is _Base.method


def test_the_steps_are_put_back_when_the_run_raises(module):
    original = module.work
    with pytest.raises(RuntimeError):
        with timed_steps((("work", "steps_fixture:work"),)):
            assert module.work is not original
            raise RuntimeError("the run failed")
    assert module.work is original


def test_a_missing_step_is_an_error_and_leaves_nothing_wrapped(module):
    original = module.work
    with pytest.raises(AttributeError):
        with timed_steps((("work", "steps_fixture:work"), ("gone", "steps_fixture:renamed"))):
            pass
    assert module.work is original


def test_every_step_names_a_function_of_the_product():
    # A renamed function would otherwise leave its row empty, or fail only when measured.
    for label, target in STEPS:
        owner, name = resolve(target)
        assert callable(getattr(owner, name)), label


def test_the_untimed_parts_are_the_steps_less_their_stages():
    # 100 pages; stage sums in ms over them, step CPU in seconds.
    stage_ms = {"read": 100.0, "parse": 300.0, "template": 400.0, "etdm": 350.0, "blocks": 500.0,
                "total": 1300.0}
    cpu = {"read step": 0.5, "per-site step": 2.0, "spill": 0.1}
    calls = {"read step": 6, "per-site step": 10, "spill": 100}
    steps = (("read step", "m:a"), ("spill", "m:b"), ("per-site step", "m:c"), ("part writer", "m:d"))
    table = step_table(cpu, calls, stage_ms, 100, steps)
    assert table["pages"] == 100
    assert table["steps"]["read step"] == {"calls": 6, "cpu_s": 0.5, "ms_per_page": 5.0}
    assert table["steps"]["spill"]["ms_per_page"] == 1.0
    assert table["steps"]["part writer"] == {"calls": 0, "cpu_s": 0.0, "ms_per_page": 0.0}
    assert table["stages"] == {"read": 1.0, "parse": 3.0, "template": 4.0, "etdm": 3.5, "blocks": 5.0,
                               "total": 13.0}
    # read step: 500 ms less read and parse's 400; per-site step: 2,000 ms less template and
    # blocks (etdm is inside template, total is their sum, read and parse are the read step's).
    assert table["untimed"] == {"read step outside read and parse": 1.0,
                                "per-site step outside its stages": 11.0}


@pytest.mark.beam
@pytest.mark.slow
def test_steps_of_a_run_of_the_sample(tmp_path, capsys):
    """One `sitestrip run` of the embedded sample in this process: every step of the run is
    timed, the stages come from its rows, and the product's functions are its own again."""
    from sitestrip.pipeline import graph, parts
    from sitestrip_bench.cli import main
    from sitestrip.pipeline.cli import SAMPLE_WARC
    process, write = graph.ProcessSite.process, parts._WritePart.process
    assert main(["steps", str(SAMPLE_WARC), "--work", str(tmp_path), "--json", str(tmp_path / "steps.json")]) == 0
    got = json.loads((tmp_path / "steps.json").read_text())
    assert got["pages"] > 0 and got["process_cpu_s"] > 0
    for label in ("read step", "spill", "per-site step", "· page analysed", "· held texts packed", "part writer"):
        assert got["steps"][label]["calls"] > 0 and got["steps"][label]["cpu_s"] > 0, label
    assert got["steps"]["· page analysed"]["calls"] == got["pages"]
    assert {"read", "parse", "blocks", "classify", "total"} <= set(got["stages"])
    assert set(got["untimed"]) == {"read step outside read and parse", "per-site step outside its stages"}
    assert graph.ProcessSite.process is process and parts._WritePart.process is write
    out = capsys.readouterr().out
    # stdout is the table; the run's own summary went to stderr.
    assert "| per-site step |" in out and "sitestrip: finished" not in out
