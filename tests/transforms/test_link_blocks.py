"""Link-dense blocks inside the main content (transforms/link_blocks.py), on hand-built pages."""
import numpy as np
import pytest

from sitestrip.configs import ConfigError, config_from_dict
from sitestrip.transforms.link_blocks import LINK_DENSITY_TAG_NAMES, LinkBlockParams, drop_link_blocks
from sitestrip.transforms.page import BLOCK_TAGS, parse_page
from sitestrip.transforms.tree import subtree_mask, text_of

ARTICLE = ("<body><div id=nav><a href=/a>Home</a></div><div id=main>"
           "<h1>Title words here</h1>"
           "<p>Article text with a <a href=/x>link</a></p>"
           "<ul><li><a href=/r1>Related one</a></li><li><a href=/r2>Related two</a></li></ul>"
           "<div class=tags>Tags: <a href=/t>alec baldwin</a></div>"
           "</div></body>")


def main_of(page, tag_index):
    return subtree_mask(page, [tag_index])


def div_main(page):
    # node 0 body, 1 div#nav, 2 a, 3 "Home", 4 div#main
    return main_of(page, 4)


def test_link_lists_go_and_text_with_links_stays():
    page = parse_page(ARTICLE, "http://ex.com/p")
    main = div_main(page)
    assert text_of(page, main).startswith("Title words here")
    # Words in the main content: h1 3, p 5 (1 linked), ul 4 (all linked), tags 3 (2 linked):
    # 7 of 15 linked (0.47), under 0.67, so blocks are judged one by one:
    # ul 4/4 = 1.0 → dropped (with its li); p 1/5 = 0.2 → kept; tags div 2/3 = 0.667 < 0.67 → kept.
    kept = drop_link_blocks(page, main, LinkBlockParams(max_link_density=0.67))
    assert text_of(page, kept) == "Title words here\nArticle text with a link\nTags: alec baldwin"
    # At 0.5 the tags line (0.667) goes too; the paragraph (0.2) still stays.
    kept = drop_link_blocks(page, main, LinkBlockParams(max_link_density=0.5))
    assert text_of(page, kept) == "Title words here\nArticle text with a link"
    # Only ever removes: the result is a subset of the input mask.
    assert not (kept & ~main).any()


def test_link_density_is_judged_at_block_level_elements_not_at_headings_or_inline_ones():
    """The judged elements are block-level elements (page.BLOCK_TAGS; tbody, a table section,
    too), not all of them. Main: a paragraph of 8 words, an <h2> that is one 2-word link, a
    2-word linked <span> inside a second paragraph of 6 words, a ul of one 2-word link: 6 of 18
    words linked, under 0.67. The h2 (2/2 linked) is not judged and stays; the span is inline,
    judged with its paragraph (2/6) and stays; the ul (2/2) goes."""
    assert set(LINK_DENSITY_TAG_NAMES) - {"tbody"} <= BLOCK_TAGS
    html = ("<body><div id=main><p>one two three four five six seven eight</p>"
            "<h2><a href=/h>Linked heading</a></h2>"
            "<p>nine ten eleven twelve <span><a href=/s>span link</a></span></p>"
            "<ul><li><a href=/u>list link</a></li></ul></div></body>")
    page = parse_page(html, "http://ex.com/p")
    kept = drop_link_blocks(page, subtree_mask(page, [1]), LinkBlockParams(max_link_density=0.67))
    assert text_of(page, kept) == ("one two three four five six seven eight\nLinked heading\n"
                                   "nine ten eleven twelve span link")


def test_when_the_links_are_the_content_nothing_goes():
    listing = ("<body><div id=main><h2>Jobs</h2><ul><li><a href=/1>Engineer in Paris</a></li>"
               "<li><a href=/2>Designer in Rome</a></li></ul></div></body>")
    page = parse_page(listing, "http://ex.com/jobs")
    main = subtree_mask(page, [1])
    # 6 of 7 words are link text (0.86 ≥ 0.67): a listing, kept whole.
    assert np.array_equal(drop_link_blocks(page, main, LinkBlockParams()), main)


def test_disabled_and_empty_masks_are_returned_unchanged():
    page = parse_page(ARTICLE, "http://ex.com/p")
    main = div_main(page)
    assert np.array_equal(drop_link_blocks(page, main, LinkBlockParams(enabled=False)), main)
    empty = np.zeros(page.size, dtype=bool)
    assert not drop_link_blocks(page, empty, LinkBlockParams()).any()


def test_a_main_content_root_is_never_dropped_but_its_link_items_are():
    # Two roots: the ul (all links) and the p. Overall 4 of 8 words linked (0.5 < 0.67):
    # the ul stays (a root), its two li (4 of 4 linked words, inside the main content) go.
    page = parse_page("<body><ul><li><a href=/1>one two</a></li><li><a href=/2>three four</a></li></ul>"
                      "<p>five six seven eight</p></body>", "http://ex.com/")
    ul = 1
    p = int(page.end[ul])  # the node after the ul's subtree
    main = subtree_mask(page, [ul, p])
    kept = drop_link_blocks(page, main, LinkBlockParams())
    assert kept[ul] and kept[p] and text_of(page, kept) == "five six seven eight"


def test_config_validates_the_density():
    assert config_from_dict({"link_blocks": {"max_link_density": 0.8}}).link_blocks.max_link_density == 0.8
    with pytest.raises(ConfigError, match="link_blocks.max_link_density"):
        config_from_dict({"link_blocks": {"max_link_density": 0}})


COMMENTED = ("<body><div id=main><h1>Dial-up days</h1><p>We went online at 28k and waited for "
             "every page to load line by line.</p>"
             "<div id=comments><h3>2 Responses</h3><div class=comment-body>Thanks for sharing.</div>"
             "<div class=comment-body>I remember it well.</div></div></div></body>")


def test_comment_sections_go_unless_they_are_the_content():
    page = parse_page(COMMENTED, "http://ex.com/p")
    main = subtree_mask(page, [1])
    # Article: 3 + 17 = 20 words; comments (id=comments): 2 + 3 + 4 = 9 words < half → dropped.
    assert text_of(page, drop_link_blocks(page, main, LinkBlockParams())) == (
        "Dial-up days\nWe went online at 28k and waited for every page to load line by line.")
    assert np.array_equal(drop_link_blocks(page, main, LinkBlockParams(drop_comments=False)), main)
    # A thread page: the same comments with a 2-word heading; 9 of 11 words are comments → kept.
    thread = parse_page(COMMENTED.replace(
        "<p>We went online at 28k and waited for every page to load line by line.</p>", ""),
        "http://ex.com/t")
    main = subtree_mask(thread, [1])
    assert np.array_equal(drop_link_blocks(thread, main, LinkBlockParams()), main)


def test_comment_hint_flag_from_id_and_class_word_parts():
    from sitestrip.transforms.page import F_COMMENT_HINT, F_NAV_HINT
    page = parse_page("<body><div id=commentList>a</div><div class='x disqus_thread'>b</div>"
                      "<div class=uncommented>c</div><div class='commentNav'>d</div></body>", "http://ex.com/")
    hinted = [(page.flags[i] & F_COMMENT_HINT) != 0 for i in range(1, page.size, 2)]
    assert hinted == [True, True, False, True]
    assert page.flags[7] & F_NAV_HINT  # "commentNav": both hints
