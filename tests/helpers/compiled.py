"""The compiled extensions, for the tests that compare one with its Python reference."""
import importlib
import os
import subprocess
import sys

import pytest


def require_built(name: str):
    """sitestrip.transforms.<name> (e.g. "_text"), or the test fails. Where an extension is
    missing, its module's switch selects the Python reference either way, so a comparison of
    the two paths would pass comparing the reference with itself. CI builds every extension."""
    try:
        return importlib.import_module(f"sitestrip.transforms.{name}")
    except ImportError as error:
        missing = error
    # outside the except clause, so that the report is this line and not a chained traceback
    pytest.fail(f"sitestrip.transforms.{name} is not built ({missing}), so there is no compiled path "
                "to compare with the Python reference: build it with `pip install -e .`", pytrace=False)


def switch_in_fresh_process(module: str, variable: str, value: str) -> tuple[bool, bool]:
    """(module._COMPILED, extension importable) in a new interpreter with `variable=value`: a
    module reads its switch once at import, so only a fresh process shows what it selects."""
    code = (f"from sitestrip.transforms import {module} as m; "
            "print(m._COMPILED, m._compiled is not None)")
    env = dict(os.environ, **{variable: value})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    compiled, built = out.stdout.split()
    return compiled == "True", built == "True"
