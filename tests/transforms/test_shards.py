"""Hot-site shard assignment (transforms/shards.py): bounded, order-independent, directory first."""
import random
from collections import Counter

import pytest

from sitestrip.transforms.shards import ShardPlan, page_cell, plan_shards, shard_urls, url_slot

SITE = "example.org"


def site_urls(layout):
    """{directory: pages} → URLs; directory "" is the root of the host."""
    urls = []
    for directory, pages in layout.items():
        prefix = f"https://{SITE}/" + (f"{directory}/" if directory else "")
        urls.extend(f"{prefix}page-{i}.html" for i in range(pages))
    return urls


def shard_sizes(assignment):
    return Counter(assignment.values())


def test_slot_is_crc32_and_stable_across_processes():
    # crc32(b"https://example.org/docs/intro.html") = 2451498551; its top 10 bits are 584.
    assert url_slot("https://example.org/docs/intro.html") == 584
    assert page_cell("https://example.org/docs/intro.html") == ("docs", 584)
    assert page_cell("https://www.example.org/docs/a/b.html")[0] == "docs"
    assert page_cell("https://example.org/index.html")[0] == ""
    assert page_cell("https://example.org/")[0] == ""


def test_site_at_or_under_the_limit_is_shard_zero():
    urls = site_urls({"": 3, "docs": 10, "blog": 7})
    for limit in (20, 21, 1000):
        assignment = shard_urls(SITE, urls, limit)
        assert set(assignment.values()) == {0}
    plan = plan_shards(SITE, [(page_cell(u), 1) for u in urls], 20)
    assert plan == ShardPlan(site=SITE, cuts=(), sizes=(20,))


@pytest.mark.parametrize("layout, limit", [
    ({"": 5, "a": 12, "b": 3, "c": 30, "d": 1}, 10),
    ({"wiki": 200}, 7),
    ({f"dir{i}": i for i in range(1, 40)}, 25),
    ({"x": 1, "y": 1, "z": 1}, 1),
])
def test_every_shard_is_within_the_limit_and_every_page_in_one_shard(layout, limit):
    urls = site_urls(layout)
    assignment = shard_urls(SITE, urls, limit)
    assert set(assignment) == set(urls)
    sizes = shard_sizes(assignment)
    assert max(sizes.values()) <= limit
    assert sum(sizes.values()) == len(urls)
    assert sorted(sizes) == list(range(len(sizes)))     # shards are numbered 0..k-1, none empty


def test_directories_within_the_limit_stay_whole_and_small_ones_share_a_shard():
    layout = {"": 4, "about": 2, "blog": 9, "docs": 60, "news": 8, "team": 1}
    assignment = shard_urls(SITE, site_urls(layout), 10)
    shards_of = {}
    for url, shard in assignment.items():
        shards_of.setdefault(page_cell(url)[0], set()).add(shard)
    for directory in ("", "about", "blog", "news", "team"):
        assert len(shards_of[directory]) == 1, directory
    assert shards_of[""] == shards_of["about"]         # 4 + 2 pages packed together
    assert len(shards_of["docs"]) >= 6                  # only the oversized directory is cut by hash


def test_assignment_does_not_depend_on_order_or_repeated_captures():
    urls = site_urls({"": 3, "a": 17, "b": 40, "c": 2})
    expected = shard_urls(SITE, urls, 12)
    rng = random.Random(7)
    for _ in range(5):
        shuffled = urls[:]
        rng.shuffle(shuffled)
        assert shard_urls(SITE, shuffled, 12) == expected
    cells = Counter(page_cell(u) for u in urls)
    items = list(cells.items())
    rng.shuffle(items)
    assert plan_shards(SITE, items, 12) == plan_shards(SITE, sorted(cells.items()), 12)
    # every capture of a URL counts toward its shard's size, and all captures share one shard
    captures = urls + urls[:5]
    plan = plan_shards(SITE, Counter(page_cell(u) for u in captures).items(), 12)
    assert sum(plan.sizes) == len(captures) and max(plan.sizes) <= 12
    assert Counter(plan.shard_of(u) for u in captures) == Counter(
        {shard: size for shard, size in enumerate(plan.sizes)})


def test_shards_are_evened_out_instead_of_leaving_a_tiny_last_shard():
    plan = plan_shards(SITE, Counter(page_cell(u) for u in site_urls({"docs": 2001})).items(), 2000)
    assert plan.shards == 2
    assert min(plan.sizes) > 900 and sum(plan.sizes) == 2001


def test_plan_follows_sorted_cells_and_cuts_are_ascending():
    plan = plan_shards(SITE, [(("b", 3), 4), (("a", 9), 4), (("c", 1), 4)], 5)
    assert plan.cuts == (("b", 0), ("c", 0))
    assert plan.sizes == (4, 4, 4)
    assert [plan.shard_of(f"https://{SITE}/{d}/x.html") for d in "abc"] == [0, 1, 2]


def test_limit_must_be_positive():
    with pytest.raises(ValueError, match="max_site_pages"):
        plan_shards(SITE, [], 0)


def test_the_shard_of_a_cell_is_the_shard_of_each_of_its_pages():
    """A plan cuts between cells. Cuts (b, 0) and (c, 0) make three shards: every cell of
    directory a (any slot) is shard 0, of b shard 1, of c and later directories shard 2;
    a page's shard is its cell's."""
    plan = ShardPlan(site=SITE, cuts=(("b", 0), ("c", 0)), sizes=(1, 1, 1))
    assert [plan.shard_of_cell(c) for c in [("a", 0), ("a", 1023), ("b", 0), ("b", 700),
                                            ("c", 0), ("d", 5)]] == [0, 0, 1, 1, 2, 2]
    for url in site_urls({"a": 3, "b": 3, "c": 3, "": 2}):
        assert plan.shard_of(url) == plan.shard_of_cell(page_cell(url))
