"""libxml2's small blocks in chunks (transforms/_parse_heap.c, page.use_parse_heap).

The allocator is installed once per process and stays, so each test runs its parses in a
fresh interpreter: one with SITESTRIP_PARSE_HEAP=libc (libxml2's own allocator) and one with
the chunks, or the chunks installed with a small range. Pages are compared by their blob
content (every node array and the text) and their metadata.
"""
import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers.compiled import require_built

# Documents whose trees take every path of the allocator: blocks under and over 512 bytes
# (text nodes of 600 characters, attribute values of 700), realloc'd buffers (a long
# attribute list, a long comment the parser drops, deep nesting), entities, unclosed and
# misnested tags, scripts and a document that is no HTML at all.
DOCUMENTS = textwrap.dedent(r'''
    import random
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "δέλτα", "中文", "x" * 600, "&amp;", "&lt;b&gt;", "a&nbsp;b"]
    def doc(k):
        parts = [f"<html><head><title>t{k}</title><meta name='description' content='{'d' * (k % 700)}'></head><body>"]
        for i in range(rng.randint(1, 120)):
            tag = rng.choice(["p", "div", "span", "a", "li", "pre", "td", "b"])
            attrs = " ".join(f'data-a{j}="{rng.choice(words)}"' for j in range(rng.randint(0, 30)))
            cls = " ".join(rng.choice(words[:5]) for _ in range(rng.randint(0, 6)))
            href = f' href="/p/{i}"' if tag == "a" else ""
            body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
            close = "" if rng.random() < 0.1 else f"</{tag}>"
            parts.append(f'<{tag} class="{cls}" {attrs}{href}>{body}<!-- {"c" * rng.randint(0, 900)} -->{close}')
        parts.append("<div>" * 300 + "deep" + "</div>" * 300)
        parts.append("<script>var s = '" + "s" * 2000 + "';</script></body></html>")
        return "".join(parts)
    DOCS = [doc(k) for k in range(40)] + ["plain text, no tags", "<p>unclosed <b>bold <i>both</p> after"]
''')

DIGEST = textwrap.dedent(r'''
    import hashlib
    from sitestrip.transforms import page as P
    def digest(doc, k):
        page = P.parse_page(doc, f"http://ex.com/{k}.html")
        return hashlib.sha256(page._raw() + repr(page.meta).encode() + repr(page.notes).encode()).hexdigest()
''')


def _run(script: str, heap: str = "chunks") -> dict:
    """The JSON the script prints on its last line, run in a fresh interpreter."""
    env = dict(os.environ, SITESTRIP_PARSE_HEAP=heap)
    done = subprocess.run([sys.executable, "-c", DOCUMENTS + DIGEST + textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def _libc_pages() -> list:
    """Every document's page digest parsed with libxml2's own allocator: the reference."""
    return _run('''
        import json
        print(json.dumps({"pages": [digest(d, k) for k, d in enumerate(DOCS)]}))
    ''', heap="libc")["pages"]


@pytest.fixture(autouse=True)
def built():
    if not sys.platform.startswith("linux"):
        pytest.skip("transforms/_parse_heap.c is built on Linux only (setup.py)")
    require_built("_parse_heap")


def test_pages_are_the_same_in_chunks_and_with_libxml2s_allocator():
    """Every document gives the same page either way; with the chunks installed the blocks
    come from them (chunks taken), with SITESTRIP_PARSE_HEAP=libc nothing is installed."""
    script = '''
        import json
        from sitestrip.transforms import _parse_heap
        out = [digest(d, k) for k, d in enumerate(DOCS)]
        print(json.dumps({"pages": out, "installed": P.use_parse_heap(), "state": _parse_heap.state()}))
    '''
    chunks, libc = _run(script), _run(script, heap="libc")
    assert chunks["installed"] and not libc["installed"]
    assert chunks["state"][0] > 0 and libc["state"][0] == 0
    assert chunks["pages"] == libc["pages"]


def test_a_tree_freed_gives_its_chunks_back_for_the_next():
    """The same documents parsed 30 times over take at most a chunk or two past the first
    round (1,260 trees in the chunks of 42): each tree's chunks empty when it is freed and the
    next tree is built in them. The chunk or two are those a block of the parser's own, which
    lives from one page to the next, holds until it is freed."""
    got = _run('''
        import json
        from sitestrip.transforms import _parse_heap
        first = [digest(d, k) for k, d in enumerate(DOCS)]
        taken = _parse_heap.state()[0]
        for _ in range(30):
            again = [digest(d, k) for k, d in enumerate(DOCS)]
        print(json.dumps({"same": again == first, "taken": [taken, _parse_heap.state()[0]]}))
    ''')
    assert got["same"]
    assert got["taken"][1] - got["taken"][0] <= 2


def test_threads_parse_alike_and_an_ended_thread_leaves_its_chunk():
    """Four threads parsing at once give the pages one thread gives. Then 40 threads, one after
    another, each parsing a document: each leaves its chunk when it ends, so they take a few
    chunks at most (a thread's OS exit, where it leaves its chunk, can come after the next
    thread has begun); a chunk kept by each ended thread would be 40 more."""
    got = _run('''
        import json, threading
        from sitestrip.transforms import _parse_heap
        alone = [digest(d, k) for k, d in enumerate(DOCS)]
        results = {}
        def work(t):
            results[t] = [digest(d, k) for k, d in enumerate(DOCS)]
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        taken = _parse_heap.state()[0]
        for _ in range(40):
            t = threading.Thread(target=lambda: digest(DOCS[0], 0))
            t.start(); t.join()
        print(json.dumps({"same": all(results[t] == alone for t in range(4)),
                          "taken": [taken, _parse_heap.state()[0]]}))
    ''')
    assert got["same"]
    assert got["taken"][1] - got["taken"][0] < 10


def test_trees_freed_by_another_thread_empty_their_chunks():
    """One thread parses, another frees each tree (lxml trees handed over a queue of eight):
    every chunk the parsing thread leaves empties as the other thread frees its blocks and
    goes back to the pool. Once both threads have ended every chunk taken is in the pool, and
    ten more rounds of the documents take fewer than twice the chunks of the first five (how
    many trees are alive at once, and so the chunks, varies with the threads' timing; a
    chunk never given back would add six or seven chunks a tree, about 2,700 for the 420 trees)."""
    got = _run('''
        import json, queue, threading, time
        from lxml import etree
        from sitestrip.transforms import _parse_heap
        assert P.use_parse_heap()
        trees = queue.Queue(maxsize=8)
        def parse(rounds):
            parser = etree.HTMLParser()
            for _ in range(rounds):
                for d in DOCS:
                    trees.put(etree.fromstring(d.encode(), parser))
            trees.put(None)
        def free():
            while trees.get() is not None:
                pass
        def run(rounds):
            threads = [threading.Thread(target=parse, args=(rounds,)), threading.Thread(target=free)]
            for t in threads: t.start()
            for t in threads: t.join()
            # A thread leaves its chunk as its OS thread exits, which can come just after join().
            deadline = time.monotonic() + 5
            while _parse_heap.state()[0] != _parse_heap.state()[1] and time.monotonic() < deadline:
                time.sleep(0.01)
            return _parse_heap.state()[:2]
        first = run(5)
        after = run(10)
        print(json.dumps({"states": [first, after], "pages": [digest(d, k) for k, d in enumerate(DOCS)]}))
    ''')
    (taken_first, pooled_first), (taken, pooled) = got["states"]
    assert pooled_first == taken_first and pooled == taken
    assert taken < 2 * taken_first
    assert got["pages"] == _libc_pages()


def test_blocks_from_before_the_install_go_back_to_their_allocator():
    """A tree parsed before the chunks are installed is freed after it, through the new
    functions: its blocks are libxml2's previous allocator's and go back to it."""
    got = _run('''
        import json, gc
        from lxml import etree
        early = [etree.fromstring(d.encode(), etree.HTMLParser()) for d in DOCS[:10]]
        assert P.use_parse_heap()
        pages = [digest(d, k) for k, d in enumerate(DOCS)]
        del early
        gc.collect()
        print(json.dumps({"pages": pages}))
    ''')
    assert got["pages"] == _libc_pages()


def test_a_used_up_range_leaves_the_blocks_to_libxml2s_allocator():
    """Installed with a range of two chunks and no free chunk kept: the trees outgrow it and
    the rest of their blocks are glibc's; every emptied chunk's memory is given back. The pages
    are the same."""
    script = '''
        import json
        from lxml import etree
        from sitestrip.transforms import _parse_heap
        assert _parse_heap.install(etree.__file__, 2 * 65536, 0)
        pages = [digest(d, k) for k, d in enumerate(DOCS)]
        print(json.dumps({"pages": pages, "state": _parse_heap.state()}))
    '''
    small = _run(script)
    taken, pooled, chunks, given_back = small["state"]
    assert chunks == 2 and taken == 2 and given_back > 0
    assert small["pages"] == _libc_pages()


def test_install_refuses_a_range_without_a_chunk():
    got = _run('''
        import json
        from lxml import etree
        from sitestrip.transforms import _parse_heap
        try:
            _parse_heap.install(etree.__file__, 100, 0)
            error = None
        except ValueError as e:
            error = str(e)
        print(json.dumps({"error": error, "installed": _parse_heap.install("/nonexistent/module.so")}))
    ''', heap="libc")
    assert "at least one chunk" in got["error"]
    assert got["installed"] is False
