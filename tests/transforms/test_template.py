"""TemEx's votes around the mappings (template.template_masks): the compiled two passes
(transforms/_features.c `template_votes`) and the reference (template_masks_reference),
on a hand-built page and on generated pages and counts."""
import random

import numpy as np
import pytest

from sitestrip.transforms import tree as T
from sitestrip.transforms.page import parse_page
from sitestrip.transforms.template import TemplateParams, template_masks
from helpers.compiled import require_built

# preorder (line): 0 body(1) 1 p(2) 2 "Intro"(2) 3 a(2) 4 "link"(2) 5 "more"(2) 6 ul(4) 7 li(5)
# 8 a(5) 9 b(5) 10 "Home"(5) 11 "page"(5) 12 p(8) 13 "Copy"(8) 14 br(9) 15 "right"(10); one word each text
PAGE = ("<html><body><p>Intro <a href=/x>link</a> more</p><ul><li><a href=/h><b>Home</b> page</a></li></ul>"
        "<p>Copy<br>right</p></body></html>")
OCC = [2, 2, 0, 2, 2, 0, 2, 2, 2, 0, 0, 0, 2, 2, 2, 0]


@pytest.fixture(autouse=True)
def built():
    require_built("_features")


def by_path(compiled, page, occ, params):
    saved = T._COMPILED
    T._COMPILED = compiled
    try:
        return template_masks(page, occ, params)
    finally:
        T._COMPILED = saved


def test_template_masks_by_hand_on_both_paths():
    """Votes 2: template = the nodes counted 2. Text inside a template <a> (a 3's "link" is
    template anyway; a 8's "Home" and "page" are not, but inside it) is template. Left:
    "Intro" 2, "more" 5, "right" 15. By line: line 2 holds "Intro", so its "link" 4 goes
    with it; "Copy" 13 (line 8) is a line of its own, template, apart from "right" (line
    10, after the <br>). Words: 7 text nodes of one word; kept 4 by line, 3 without."""
    page = parse_page(PAGE, "http://e.com/")
    occ = np.array(OCC, dtype=np.int32)
    for compiled in (True, False):
        template, nontemplate, total, kept = by_path(compiled, page, occ, TemplateParams(votes=2))
        assert np.flatnonzero(template).tolist() == [0, 1, 3, 4, 6, 7, 8, 12, 13, 14]
        assert np.flatnonzero(nontemplate).tolist() == [2, 4, 5, 15]
        assert (total, kept) == (7, 4)
        _, nontemplate, total, kept = by_path(compiled, page, occ, TemplateParams(votes=2, block_granularity=False))
        assert np.flatnonzero(nontemplate).tolist() == [2, 5, 15]
        assert (total, kept) == (7, 3)
        # votes 3: nothing is template, every text node stays
        template, nontemplate, total, kept = by_path(compiled, page, occ, TemplateParams(votes=3))
        assert not template.any() and nontemplate.sum() == 7 and kept == 7


def random_page(rng):
    def element(depth):
        if depth > 6 or rng.random() < 0.35:
            return " ".join("w" * rng.randint(1, 3) for _ in range(rng.randint(0, 3))) or " "
        tag = rng.choice(["div", "p", "span", "a", "li", "b", "br"])
        if tag == "br":
            return "<br>"
        attrs = " href='/x'" if tag == "a" else ""
        return f"<{tag}{attrs}>" + "".join(element(depth + 1) for _ in range(rng.randint(0, 4))) + f"</{tag}>"
    return parse_page("<html><body>" + "".join(element(0) for _ in range(rng.randint(1, 5))) + "</body></html>",
                      "http://e.com/")


def test_compiled_template_masks_are_the_reference():
    rng = random.Random(4)
    for _ in range(150):
        page = random_page(rng)
        occ = np.array([rng.randint(0, 3) for _ in range(page.size)], dtype=np.int32)
        for params in (TemplateParams(votes=2), TemplateParams(votes=1, block_granularity=False)):
            got, ref = by_path(True, page, occ, params), by_path(False, page, occ, params)
            assert got[0].tolist() == ref[0].tolist() and got[1].tolist() == ref[1].tolist()
            assert got[2:] == ref[2:] and type(got[2]) is type(ref[2]) is int
