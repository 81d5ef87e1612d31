"""Configuration presets: defaults equal SPEC values, and bad files fail naming the key."""
import pytest

from configs import Config, ConfigError, config_from_dict, load_config
from transforms.menex import MenexParams


def test_default_preset_is_the_published_parameters():
    assert load_config() == Config()
    assert load_config("default") == Config()
    cfg = load_config()
    assert (cfg.menex.w_amplitude, cfg.menex.w_position, cfg.menex.root_threshold) == (0.30, 0.25, 0.90)
    assert (cfg.page_conex.c, cfg.page_conex.max_words) == (3, 3)
    assert cfg.site.max_site_pages == 2000


def test_partial_section_keeps_other_defaults():
    cfg = config_from_dict({"menex": {"w_link": 0.5}})
    assert cfg.menex == MenexParams(w_link=0.5)
    assert cfg.page_conex == Config().page_conex


@pytest.mark.parametrize("data, message", [
    ({"menx": {}}, "menx: unknown section"),
    ({"menex": {"w_amplitud": 0.3}}, "menex.w_amplitud: unknown key"),
    ({"menex": {"w_link": "high"}}, "menex.w_link: expected a number"),
    ({"menex": {"w_link": 1.5}}, "menex.w_link: must be between 0 and 1"),
    ({"page_conex": {"c": 0}}, "page_conex.c: must be greater than 0"),
    ({"page_conex": {"c": 2.5}}, "page_conex.c: expected an integer"),
    ({"page_conex": {"excluded_tags": "div"}}, "page_conex.excluded_tags: expected a list"),
    ({"page_conex": {"excluded_tags": ["<div>"]}}, "page_conex.excluded_tags: must be HTML tag names"),
    ({"read": ["x"]}, "read: expected a mapping"),
    ({"site": {"max_site_pages": 0}}, "site.max_site_pages: must be greater than 0"),
    ({"site": {"max_site_pages": 2.5}}, "site.max_site_pages: expected an integer"),
])
def test_bad_values_are_rejected_with_the_key_named(data, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("menex: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(str(bad))
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(str(tmp_path / "missing.yaml"))
