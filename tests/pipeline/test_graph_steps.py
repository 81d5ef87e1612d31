"""The graph's steps as functions, without a runner: what crosses the shard join and the
target join (pipeline/graph.py)."""
from sitestrip.configs import config_from_dict
from sitestrip.pipeline.graph import (LINK_TARGETS, PAGE_LINKS, ProcessSite, _link_rows, _present_targets,
                                      _shard_records)
from helpers.linksite import NAMES, site_records


def test_a_cells_group_gives_its_records_the_shard_whatever_the_order():
    for values in ([b"r1", 3, b"r2"], [3, b"r1", b"r2"], [b"r1", b"r2", 3]):
        assert list(_shard_records((("site.example", "docs", 7), values))) == [
            (("site.example", 3), b"r1"), (("site.example", 3), b"r2")]


def test_a_shard_sends_each_target_once_with_every_page_linking_to_it():
    dofn = ProcessSite(config_from_dict({"output": {"links": True}}))
    dofn.setup()
    outputs = list(dofn.process((("docs.test", 0), site_records())))
    links = [value for kind, value in outputs if kind == PAGE_LINKS]
    (batches,) = [value for kind, value in outputs if kind == LINK_TARGETS]
    assert len(links) == len(NAMES)
    # The batches come after every PageLinks of the shard: they hold all its pages.
    assert max(i for i, (kind, _) in enumerate(outputs) if kind == PAGE_LINKS) < \
        min(i for i, (kind, _) in enumerate(outputs) if kind == LINK_TARGETS)
    targets = [target for target, _keys in batches]
    assert len(targets) == len(set(targets))
    expected: dict = {}
    for page in links:
        for target in page.targets():
            expected.setdefault(target, []).append(page.key)
    assert {target: list(keys) for target, keys in batches} == expected
    # The footer's link is on every page and to no page of the shard: one target, four keys.
    assert sorted(dict(batches)["https://docs.test/legal.html"]) == sorted(page.key for page in links)


def test_a_batched_shard_gives_each_kind_of_output_once_with_the_same_values():
    """ProcessSite's `batched`: the shard's pages rows, links and sites rows come as one
    (kind, list) each, before the link targets, holding what the one output per value held."""
    from sitestrip.pipeline.graph import CLUSTER_ROWS, MAIN

    config = config_from_dict({"output": {"links": True}})
    outputs = {}
    for batched in (False, True):
        dofn = ProcessSite(config, batched=batched)
        dofn.setup()
        outputs[batched] = list(dofn.process((("docs.test", 0), site_records())))
    kinds = [kind for kind, _ in outputs[True]]
    assert sorted(kinds) == sorted([MAIN, CLUSTER_ROWS, PAGE_LINKS, LINK_TARGETS]) and kinds[-1] == LINK_TARGETS
    for kind, values in outputs[True]:
        expected = [value for got, value in outputs[False] if got == kind]
        if kind == LINK_TARGETS:
            assert [values] == expected
        elif kind == PAGE_LINKS:
            assert [(links.key, links.strings(), links.flags.tolist()) for links in values] == [
                (links.key, links.strings(), links.flags.tolist()) for links in expected]
        else:
            assert type(values) is list and len(values) > 0
            assert [{k: v for k, v in row.items() if k != "timing_ms" and not k.startswith("_")} for row in values] == [
                {k: v for k, v in row.items() if k != "timing_ms" and not k.startswith("_")} for row in expected]
    assert len(dict(outputs[True])[MAIN]) == len(dict(outputs[True])[PAGE_LINKS]) == len(NAMES)


def test_present_targets_come_out_per_page_and_only_where_a_pages_row_is():
    keys_a, keys_b = (b"a" * 16, b"b" * 16), (b"c" * 16,)
    assert sorted(_present_targets(("https://t.example/", [keys_a, None, keys_b]))) == [
        (b"a" * 16, "https://t.example/"), (b"b" * 16, "https://t.example/"), (b"c" * 16, "https://t.example/")]
    assert list(_present_targets(("https://t.example/", [keys_a, keys_b]))) == []
    assert list(_present_targets(("https://t.example/", [None]))) == []


def test_a_pages_group_sets_target_in_input_from_its_present_targets():
    records = site_records()
    dofn = ProcessSite(config_from_dict({"output": {"links": True}}))
    dofn.setup()
    page = next(value for kind, value in dofn.process((("docs.test", 0), records)) if kind == PAGE_LINKS)
    outside = "https://ext.example/alpha"
    urls = page.strings()[0]
    assert outside in urls and not page.local[urls.index(outside)]
    for present in ([outside], []):
        (got,) = list(_link_rows((page.key, [*present[:1], page, *present[1:]])))
        found = dict(zip(got.strings()[0], got.in_input.tolist()))
        assert found[outside] is bool(present)
        assert found["https://docs.test/beta.html"] is True       # a page of the shard


def test_a_large_shard_gives_the_heap_back_when_it_is_done_and_a_small_one_does_not(monkeypatch):
    """ProcessSite trims the C heap after a shard of TRIM_AFTER_PAGES pages or more, once its
    rows are all out; a smaller shard keeps the heap as it is."""
    from sitestrip.pipeline import graph
    calls = []
    monkeypatch.setattr(graph, "give_back_heap", lambda: calls.append(len(rows)))
    dofn = ProcessSite(config_from_dict({}))
    dofn.setup()
    records = site_records()
    for at_least, expected in ((len(records) + 1, []), (len(records), [len(records)])):
        monkeypatch.setattr(graph, "TRIM_AFTER_PAGES", at_least)
        calls.clear()
        rows = []
        for kind, value in dofn.process((("docs.test", 0), site_records())):
            if kind == graph.MAIN:
                rows.append(value)
        assert calls == expected


def test_the_heap_is_given_back_where_the_c_library_is_glibc():
    import platform

    from sitestrip.pipeline.heap import give_back_heap
    assert give_back_heap() is (platform.libc_ver()[0] == "glibc")


def test_a_shard_batch_is_pickled_when_encoded_and_never_for_its_size():
    """The collections of a shard's batches are coded by _ShardBatchCoder: pickled when a
    runner encodes them, and weighed without encoding (Beam's default coder pickles a value
    to weigh it); build_pipeline gives that coder to ProcessSite's outputs and the batches
    split from them, and not to the rows given one by one."""
    import typing

    import apache_beam as beam
    import pytest
    from apache_beam.coders import registry

    from sitestrip.pipeline.graph import ShardBatch, build_pipeline

    class Unpicklable:
        def __reduce__(self):
            raise AssertionError("encoded")

    coder = registry.get_coder(ShardBatch)
    rows = [{"url": "https://a.example/", "words": 3}, {"url": "https://b.example/", "words": None}]
    assert coder.decode(coder.encode(rows)) == rows
    size, observables = coder.get_impl().get_estimated_size_and_observables([Unpicklable(), Unpicklable()])
    assert size > 0 and not observables
    with pytest.raises(AssertionError, match="encoded"):
        registry.get_coder(typing.Any).get_impl().get_estimated_size_and_observables([Unpicklable()])

    from apache_beam.pipeline import PipelineVisitor

    class Types(PipelineVisitor):
        def __init__(self):
            self.batched = set()

        def visit_transform(self, applied):
            if any(out.element_type is ShardBatch for out in applied.outputs.values()):
                self.batched.add(applied.full_label)

    p = beam.Pipeline()
    build_pipeline(p, [], "/nonexistent", config_from_dict({"output": {"links": True}}), part_files=1,
                   source=lambda p: (p | beam.Create([]), None), link_targets=False)
    types = Types()
    p.visit(types)
    assert types.batched == {"ProcessSite", "SiteMain", "SiteErrors", "SiteClusters", "SiteLinks", "LinkRows"}
