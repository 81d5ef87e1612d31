"""Gold labels of blocks (sitestrip_bench/blockdata.py gold_labels): a block is main
content iff two thirds of its tokens align, in order, with the gold main text. Pages are
cut into blocks by the product (transforms/blocks.py), as training cuts them."""
from sitestrip.transforms.blocks import block_texts, page_blocks
from sitestrip.transforms.page import parse_page
from sitestrip_bench.blockdata import MAIN_SHARE, gold_labels


def blocks_of(html):
    page = parse_page(html, "http://ex.com/")
    blocks = page_blocks(page)
    return page, blocks, block_texts(page, blocks)



def test_gold_labels_by_the_two_thirds_rule():
    """Page tokens (case-folded, punctuation dropped), block by block:
      B0 li "Home" | B1 li "Weather" | B2 h1 "storm hits coast" |
      B3 p "the storm hit the coast at dawn" (7) |
      B4 p "winds reached ninety miles per hour" (6) |
      B5 p "officials said power would return by friday night" (8) |
      B6 p (related) "storm hits coast" (3)
    Gold: "storm hits coast / the storm hit the coast at dawn / winds reached ninety miles
    gusts officials said power would return tonight".
    Alignment (order kept, each gold token used once): the longest common run is
    "storm hits coast the storm hit the coast at dawn winds reached ninety miles" (B2, B3
    and the first 4 tokens of B4); after it, "officials said power would return" (the
    first 5 of B5). Nothing else: the gold's "storm hits coast" is used up by B2, so the
    related teaser B6 aligns nothing. Aligned: 0, 0, 3, 7, 4, 5, 0.
    Main iff aligned >= 2/3 of own tokens: B2 3/3, B3 7/7, B4 4/6 = exactly 2/3 -> main;
    B5 5/8 = 0.625, just below -> not main; B0, B1, B6 -> not main."""
    html = ("<body><ul><li><a href='/'>Home</a></li><li><a href='/w'>Weather</a></li></ul>"
            "<h1>Storm hits coast</h1><p>The storm hit the coast at dawn.</p>"
            "<p>Winds reached ninety miles per hour.</p>"
            "<p>Officials said power would return by Friday night.</p>"
            "<div class='related'><p>Storm hits coast</p></div></body>")
    gold = ("Storm hits coast\nThe storm hit the coast at dawn. Winds reached ninety miles, gusts.\n"
            "Officials said power would return tonight.")
    _, blocks, texts = blocks_of(html)
    assert blocks.words.tolist() == [1, 1, 3, 7, 6, 8, 3]
    labels, aligned = gold_labels(texts, gold)
    assert aligned.tolist() == [0, 0, 3, 7, 4, 5, 0]
    assert labels.tolist() == [False, False, True, True, True, False, False]
    assert MAIN_SHARE == 2 / 3


def test_gold_alignment_keeps_order():
    """Gold "red green blue yellow"; page blocks "yellow" | "red green blue" | "yellow".
    An order-keeping alignment matches "red green blue yellow" to blocks 2 and 3: the
    first "yellow" comes before "red" in the page but after "blue" in the gold, so it
    cannot align (a bag of words would take it): labels F, T, T."""
    labels, aligned = gold_labels(["Yellow", "red green blue", "yellow"], "red green blue yellow")
    assert aligned.tolist() == [0, 3, 1]
    assert labels.tolist() == [False, True, True]


def test_each_gold_token_is_used_once():
    """Gold "price ten euros" once; the page shows "Price ten euros" twice with text between:
    only one copy aligns (the first, where the alignment's tie-break puts it)."""
    labels, aligned = gold_labels(["Price ten euros", "add to cart", "Price ten euros"],
                                  "price ten euros")
    assert aligned.tolist() == [3, 0, 0]
    assert labels.tolist() == [True, False, False]


def test_gold_labels_edge_cases():
    """Empty blocks are never main (0 >= 2/3·0 would say so); an empty gold labels nothing;
    a page without blocks gives empty arrays."""
    labels, aligned = gold_labels(["", "alpha beta", "--"], "alpha beta")
    assert labels.tolist() == [False, True, False] and aligned.tolist() == [0, 2, 0]
    labels, aligned = gold_labels(["alpha", "beta"], "")
    assert labels.tolist() == [False, False] and aligned.tolist() == [0, 0]
    labels, aligned = gold_labels([], "alpha")
    assert labels.shape == (0,) and aligned.shape == (0,)
