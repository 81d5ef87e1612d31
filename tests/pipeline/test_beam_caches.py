"""What a local run keeps of Beam's introspection (pipeline/cli.py): the answers are Beam's own."""
import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions, TypeOptions
from apache_beam.transforms import core

from sitestrip.pipeline.cli import STATE_SAMPLING_MS, cache_function_arguments, cache_option_views, sample_states_briefly


class _Counting(beam.DoFn):
    def process(self, element, scale=2, timestamp=beam.DoFn.TimestampParam):
        yield element * scale


def _plain(a, b=3):
    return a + b


def test_function_arguments_are_beam_s_and_each_caller_gets_its_own_lists():
    before = core.get_function_args_defaults
    cache_function_arguments()
    cache_function_arguments()                     # once per process: no wrapper around a wrapper
    cached = core.get_function_args_defaults
    assert getattr(cached, "sitestrip_cached", False)
    original = before if not getattr(before, "sitestrip_cached", False) else None
    for f in (_Counting().process, _Counting().process, _plain, _Counting.process, len, lambda x, y=1: x):
        got = cached(f)
        if original is not None:
            assert got == original(f)
        again = cached(f)
        assert again == got and again[0] is not got[0] and again[1] is not got[1]
    assert cached(_Counting().process) == (["element", "scale", "timestamp"], [2, beam.DoFn.TimestampParam])
    assert cached(_Counting.process)[0] == ["self", "element", "scale", "timestamp"]


def test_a_dofn_with_yield_and_return_is_still_found():
    cache_function_arguments()

    class Both(beam.DoFn):
        def process(self, element):
            if element:
                return [element]
            yield element

    assert core._check_fn_use_yield_and_return(Both().process)
    assert core._check_fn_use_yield_and_return(Both().process)
    assert not core._check_fn_use_yield_and_return(_Counting().process)


def test_one_view_per_options_object_and_class_sharing_its_values():
    cache_option_views()
    options = PipelineOptions(["--runner=DirectRunner"])
    view = options.view_as(TypeOptions)
    assert options.view_as(TypeOptions) is view
    view.pipeline_type_check = False
    assert options.view_as(TypeOptions).pipeline_type_check is False
    assert options.get_all_options()["pipeline_type_check"] is False
    direct = options.view_as(DirectOptions)
    direct.direct_num_workers = 3
    assert options.view_as(DirectOptions).direct_num_workers == 3
    assert options.view_as(StandardOptions).runner == "DirectRunner"
    other = PipelineOptions([])
    assert other.view_as(TypeOptions) is not view
    assert other.view_as(TypeOptions).pipeline_type_check is True


@pytest.mark.beam
def test_a_local_run_s_bundles_sample_states_every_few_ms_and_still_count_them():
    """sample_states_briefly: Beam's bundles make samplers of the short period (a bundle's end
    waits for its sampler's next wake), once per process, and a pipeline still runs."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.runners.worker import statesampler
    from apache_beam.testing.util import assert_that, equal_to
    from apache_beam.utils.counters import CounterFactory
    sample_states_briefly()
    replaced = statesampler.StateSampler
    sample_states_briefly()
    assert statesampler.StateSampler is replaced               # no subclass of a subclass
    sampler = statesampler.StateSampler("step", CounterFactory())
    assert sampler.sampling_period_ms == STATE_SAMPLING_MS < statesampler.DEFAULT_SAMPLING_PERIOD_MS
    assert isinstance(sampler, replaced.__mro__[1])
    with beam.Pipeline(runner=FnApiRunner()) as p:
        got = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
        assert_that(got, equal_to([2, 4, 6]))
