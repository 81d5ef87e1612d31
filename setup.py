"""The compiled parts of sitestrip: ETDM's top-down walk and sibling assignment
(transforms/_etdm.c), the block model's tree walk and leaf sums (transforms/_model.c), parse
flattening (transforms/_flatten.c), main_markdown's inline rendering (transforms/_markdown.c),
a page's blocks, block texts' feature columns and text keys, the blocks stage's per-node loops
(nearest marked ancestors, sibling shapes, class/id hints, block roles), the page type's text
cues and the main-region columns (transforms/_features.c), the cutting and joining
of text spans behind every output text (transforms/_text.c), the compact page's blob content
laid out and rebuilt (transforms/_blob.c), libxml2's small blocks in chunks during the parse
(transforms/_parse_heap.c, on Linux), the site menus' per-page loops (transforms/_site.c)
and the language identifier's prediction over the packaged fastText model
(transforms/_language.c). The two that hash text share
transforms/_crc32.h, zlib's crc32 as a table, so zlib's headers are not needed; _features.c,
_site.c and _text.c read their arrays through transforms/_buffers.h, and _features.c and
_site.c hash cluster signatures and menu keys with transforms/_keys.h.

Everything else is declared in pyproject.toml; setuptools reads ext_modules from here. The
extensions need only a C compiler and Python's headers (no numpy headers: it reads arrays
through the buffer protocol). -ffp-contract=off keeps every multiply and add rounded on its
own, as numpy does, so compiled and Python scores are equal bit for bit (see _etdm.c).
_flatten.c reads libxml2's tree under lxml's elements through lxml's public C API: the
headers ship inside lxml's wheels (lxml.get_include()), so lxml is a build requirement too
(pyproject.toml), and nothing is linked: the API's functions are imported from lxml.etree at
run time.
"""
import sys

import lxml
from setuptools import Extension, setup

flags = ["/O2", "/fp:precise"] if sys.platform == "win32" else ["-O2", "-ffp-contract=off"]

setup(ext_modules=[
    Extension("sitestrip.transforms._etdm", ["transforms/_etdm.c"], extra_compile_args=flags),
    Extension("sitestrip.transforms._model", ["transforms/_model.c"], extra_compile_args=flags),
    Extension("sitestrip.transforms._markdown", ["transforms/_markdown.c"], extra_compile_args=flags),
    Extension("sitestrip.transforms._text", ["transforms/_text.c"], extra_compile_args=flags,
              depends=["transforms/_buffers.h"]),
    Extension("sitestrip.transforms._blob", ["transforms/_blob.c"], extra_compile_args=flags),
    Extension("sitestrip.transforms._site", ["transforms/_site.c"], extra_compile_args=flags,
              depends=["transforms/_buffers.h", "transforms/_keys.h"]),
    Extension("sitestrip.transforms._language", ["transforms/_language.c"], extra_compile_args=flags),
    Extension("sitestrip.transforms._features", ["transforms/_features.c"], extra_compile_args=flags,
              depends=["transforms/_crc32.h", "transforms/_buffers.h", "transforms/_keys.h"]),
    Extension("sitestrip.transforms._flatten", ["transforms/_flatten.c"], extra_compile_args=flags,
              include_dirs=lxml.get_include(), depends=["transforms/_crc32.h"]),
] + ([
    # glibc's malloc is what it stands in for, through POSIX threads, mmap and dlopen: Linux only.
    Extension("sitestrip.transforms._parse_heap", ["transforms/_parse_heap.c"], extra_compile_args=flags),
] if sys.platform.startswith("linux") else []))
