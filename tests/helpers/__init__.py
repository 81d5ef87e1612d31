"""Helpers shared by the test modules (tests/ is on sys.path: pyproject.toml's pythonpath)."""
