"""sitestrip: site-level template removal and content extraction for WARC archives, on Apache Beam.

This file only roots the installed namespace. The subpackages stay in the checkout's
top-level folders (pipeline/, transforms/, schemas/, configs/, bench/) and install as
sitestrip.pipeline, sitestrip.transforms, ... through [tool.setuptools.package-dir] in
pyproject.toml, so an install adds the one top-level name `sitestrip` and never shadows,
or is shadowed by, another distribution's `pipeline` or `configs`. It lives in src/ rather
than in a top-level sitestrip/ folder: there, `python` started in the checkout would find
this folder first (the current directory leads sys.path) and hide an installed wheel's
subpackages.
"""
