"""README's output-column tables are the schemas' (schemas/readme.py)."""
import os

import pyarrow as pa
import pytest

from sitestrip.schemas import readme
from sitestrip.schemas.tables import DATASETS, LINK, TIMING, description

README = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "README.md")


def test_readme_block_is_the_generated_one():
    with open(README, encoding="utf-8") as fh:
        block = readme.block_of(fh.read())
    assert block, "README.md has lost its generated output-column block"
    assert block == readme.render(), (
        "README's output columns differ from the schemas: run "
        "`python -m sitestrip.schemas.readme --write README.md`")


def test_every_column_is_described_and_listed():
    text = readme.render()
    for name, schema in DATASETS.items():
        assert f"**`{name}/`**" in text
        for field in schema:
            assert description(field).strip(), f"{name}.{field.name} has no description"
            assert f"| `{field.name}` | `{readme.type_name(field.type)}` | {description(field)} |" in text


def test_a_changed_schema_changes_the_block(monkeypatch):
    before = readme.render()
    changed = dict(DATASETS)
    changed["menus"] = DATASETS["menus"].append(readme_field := pa.field(
        "menu_depth", pa.int32(), metadata={"description": "how deep the menu lies"}))
    monkeypatch.setattr(readme, "DATASETS", changed)
    after = readme.render()
    assert after != before
    assert f"| `{readme_field.name}` | `int32` | how deep the menu lies |" in after


def test_write_replaces_only_the_block(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"# title\n\nbefore\n\n{readme.BEGIN}\nstale table\n{readme.END}\n\nafter\n", encoding="utf-8")
    assert readme.main(["--write", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert text == f"# title\n\nbefore\n\n{readme.render()}\n\nafter\n"
    assert readme.main(["--write", str(path)]) == 0          # a second run changes nothing
    assert path.read_text(encoding="utf-8") == text


def test_write_refuses_a_readme_without_markers(tmp_path, capsys):
    path = tmp_path / "README.md"
    path.write_text("# title\n", encoding="utf-8")
    assert readme.main(["--write", str(path)]) == 2
    assert "no generated block" in capsys.readouterr().err
    with pytest.raises(ValueError):
        readme.replace_block("# title\n")


def test_type_names():
    assert readme.type_name(pa.list_(LINK)) == "list<struct<url, text>>"
    assert readme.type_name(TIMING) == "struct of float32"
    assert readme.type_name(pa.list_(pa.string())) == "list<string>"
    assert readme.type_name(pa.bool_()) == "bool"
