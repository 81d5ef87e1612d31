"""The compiled extensions, for the tests that compare one with its Python reference."""
import importlib

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
