"""Configuration presets: the published and the tuned values, and bad files fail naming the key."""
import pytest

from sitestrip.configs import Config, ConfigError, config_from_dict, load_config
from sitestrip.transforms.menex import MenexParams


def test_published_preset_is_the_spec_as_printed():
    import dataclasses

    from sitestrip.configs import ReadLimits
    from sitestrip.transforms.classify import MainContentParams
    from sitestrip.transforms.conex_site import SITE_CONEX_ETDM, SiteConexParams
    from sitestrip.transforms.etdm import EtdmParams
    from sitestrip.transforms.link_blocks import LinkBlockParams
    from sitestrip.transforms.page import SPEC_RULES
    from sitestrip.transforms.template import TemplateParams
    published = load_config("published")
    # Config() holds the published parameters (main content by the thesis's ConEx, not the
    # product's block model) and the product's other extensions; the preset switches every
    # extension off and takes the thesis details design "Two presets" lists for it.
    thesis_tags = tuple(t for t in Config().page_conex.excluded_tags if t != "h6")
    assert published == dataclasses.replace(
        Config(),
        read=ReadLimits(keep_noscript=False, widget_leaves=False, browser_text=False),
        menex=MenexParams(representative="exact"),
        template=TemplateParams(block_granularity=False),
        page_conex=dataclasses.replace(Config().page_conex, excluded_tags=thesis_tags),
        template_etdm=EtdmParams(grouping="node"),
        site_conex=SiteConexParams(variant="published", branch="nodes", merge="always"),
        site_conex_etdm=dataclasses.replace(SITE_CONEX_ETDM, grouping="node", group_over=300),
        link_blocks=LinkBlockParams(enabled=False),
        # the links dataset adds a dataset and changes no row of the others: on in both presets
        output=dataclasses.replace(Config().output, links=True))
    assert published.main_content == MainContentParams(method="conex")
    assert published.read.parse_rules() == SPEC_RULES
    assert "h5" in thesis_tags and "h6" not in thesis_tags
    assert (published.candidates.template_n, published.template.votes) == (3, 2)
    assert (published.template_etdm.w_classes, published.template_etdm.w_attributes,
            published.template_etdm.threshold, published.template_etdm.position_option) == (0.1, 0.5, 0.7, 2)
    assert (published.template_etdm.group_over, published.template_etdm.group_size) == (200, 100)
    assert (published.candidates.conex_n, published.site_conex_etdm.threshold) == (4, 0.9)
    # design.md's own decisions stay: text equality, the inline tags page ConEx skips
    assert published.template_etdm.text_equality and published.site_conex_etdm.text_equality
    assert {"footer", "form", "strong", "code"} <= set(published.page_conex.excluded_tags)


def test_default_preset_keeps_the_extensions_on():
    cfg = load_config()
    assert cfg.read.keep_noscript and cfg.read.widget_leaves and cfg.read.browser_text
    assert cfg.template.block_granularity
    assert cfg.menex.representative == "prefix"
    assert cfg.template_etdm.grouping == cfg.site_conex_etdm.grouping == "pair"
    assert (cfg.site_conex_etdm.group_over, cfg.template_etdm.group_over) == (200, 200)
    assert "h6" in cfg.page_conex.excluded_tags
    assert cfg.site_menus.enabled and cfg.site_menus.own_links
    assert not load_config("published").site_menus.own_links


def test_default_preset_is_the_tuned_parameters():
    # docs/benchmarks.md: the winners of `sitestrip-bench tune` on the dev corpora.
    cfg = load_config()
    assert load_config("default") == cfg
    assert (cfg.candidates.template_n, cfg.template.votes) == (2, 1)
    assert (cfg.template_etdm.w_classes, cfg.template_etdm.w_position, cfg.template_etdm.w_attributes,
            cfg.template_etdm.w_children, cfg.template_etdm.threshold,
            cfg.template_etdm.position_option) == (0.3, 0.1, 0.3, 0.3, 0.7, 3)
    assert (cfg.candidates.conex_n, cfg.site_conex_etdm.threshold) == (5, 0.8)
    assert (cfg.site_conex.variant, cfg.site_conex.branch, cfg.site_conex.merge) == ("text_aware", "words", "content")
    assert cfg.template_etdm.text_equality and cfg.site_conex_etdm.text_equality
    assert cfg.link_blocks.enabled and cfg.link_blocks.max_link_density == 0.67
    assert (cfg.main_content.method, cfg.main_content.model) == ("learned", "")
    # Untouched by tuning: the page-level methods keep the published values.
    assert cfg.menex == Config().menex and cfg.page_conex == Config().page_conex
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
    ({"run": {"memory_budget_mb": 0}}, "run.memory_budget_mb: must be greater than 0"),
    ({"run": {"memory_budget_mb": "1G"}}, "run.memory_budget_mb: expected an integer"),
    ({"run": {"partitions": "off"}}, "run.partitions: expected true or false"),
    ({"read": {"keep_noscript": "no"}}, "read.keep_noscript: expected true or false"),
    ({"read": {"browser_text": 1}}, "read.browser_text: expected true or false"),
    ({"template": {"block_granularity": "yes"}}, "template.block_granularity: expected true or false"),
    ({"menex": {"representative": "fuzzy"}}, "menex.representative: must be exact, word_part or prefix"),
    ({"template_etdm": {"grouping": "tree"}}, "template_etdm.grouping: must be pair or node"),
    ({"site_conex_etdm": {"group_over": 50}}, "site_conex_etdm: need 2 <= group_size <= group_over"),
    ({"site_menus": {"own_links": "yes"}}, "site_menus.own_links: expected true or false"),
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


def test_a_partial_preset_keeps_the_shipped_defaults_elsewhere(tmp_path):
    preset = tmp_path / "limit.yaml"
    preset.write_text("site:\n  max_site_pages: 10\ntemplate:\n  votes: 3\n")
    cfg = load_config(str(preset))
    assert cfg.site.max_site_pages == 10 and cfg.site.page_budget_ms == load_config().site.page_budget_ms
    assert cfg.template.votes == 3 and cfg.template.method == "temex"
    # Sections the preset does not name are default.yaml's (tuned), not Config()'s.
    assert cfg.candidates == load_config().candidates and cfg.candidates.template_n == 2
    preset.write_text("sit:\n  max_site_pages: 10\n")
    with pytest.raises(ConfigError, match="sit: unknown section"):
        load_config(str(preset))


def test_loading_a_config_does_not_import_the_reader():
    """The configuration sits below the reader: the reader imports its limits from configs,
    and configs (with the page model's parse rules) never imports pipeline.warc or warcio."""
    import subprocess
    import sys
    code = ("import sys; from sitestrip.configs import load_config; load_config('published'); "
            "print(sorted(m for m in sys.modules if m.startswith(('sitestrip.pipeline', 'warcio'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
