"""Run configuration: YAML presets in this folder, validated on load.

Each YAML section maps onto one frozen dataclass of the algorithm it
parameterizes, so a preset can only say what the code understands: unknown
sections or keys, wrong types and out-of-range values fail with a message
naming the key.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import get_type_hints

import yaml

from sitestrip.transforms.candidates import CandidateParams
from sitestrip.transforms.clusters import FILL_ORDERS, PATH_IDS, ClusterParams
from sitestrip.transforms.classify import METHODS as MAIN_CONTENT_METHODS, MainContentParams
from sitestrip.transforms.conex_page import PageConexParams
from sitestrip.transforms.conex_site import SITE_CONEX_ETDM, SiteConexParams
from sitestrip.transforms.etdm import EtdmParams
from sitestrip.transforms.link_blocks import LinkBlockParams
from sitestrip.transforms.menex import MenexParams
from sitestrip.transforms.output import KEEP_DROP, OutputParams
from sitestrip.transforms.page import NAV_RULE_FLAGS, ParseRules
from sitestrip.transforms.sitemenus import SiteMenuParams
from sitestrip.transforms.duplicates import DuplicateParams
from sitestrip.transforms.state import StateParams
from sitestrip.transforms.template import TemplateParams

CONFIG_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CONFIG = os.path.join(CONFIG_DIR, "default.yaml")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ReadLimits:
    """What the WARC reader (pipeline/warc.py) and the page parse may take of one record."""
    # Cap on the decoded HTTP entity body; larger pages become PayloadTooLarge errors.
    max_payload_bytes: int = 20 * 1024 * 1024
    # Cap on the nodes of a parsed page: parsing and every later stage cost CPU per
    # node (the Python flattening alone ~4 µs a node, the compiled one a fraction of
    # that) and the parse most of a kB of peak memory per node, so larger pages become
    # TooManyNodes errors rather than seconds to minutes and GBs per page.
    max_nodes: int = 500_000
    # How a page is flattened where the product departs from design §1
    # (transforms.page.ParseRules; all off in configs/published.yaml).
    keep_noscript: bool = True
    widget_leaves: bool = True
    browser_text: bool = True

    def parse_rules(self) -> ParseRules:
        return ParseRules(keep_noscript=self.keep_noscript, widget_leaves=self.widget_leaves,
                          browser_text=self.browser_text)


@dataclass(frozen=True)
class SiteParams:
    """Candidate selection for the site-level methods (design §4)."""
    template_n: int = 3        # n for TemEx / HybEx
    conex_n: int = 4           # n for site-level ConEx
    max_loads: int = 50

    def for_template(self) -> CandidateParams:
        return CandidateParams(n=self.template_n, max_loads=self.max_loads)

    def for_conex(self) -> CandidateParams:
        return CandidateParams(n=self.conex_n, max_loads=self.max_loads)


@dataclass(frozen=True)
class SiteLimits:
    """Cost bounds of the per-site step (design "Bad input")."""
    # CPU milliseconds one page's site-level work (candidates, ETDM, ConEx, MenEx)
    # may take; past it the page becomes a TimeBudgetExceeded errors row. The
    # costliest pages of tests/helpers/hostile.py (100,000 links; 60,000 siblings) need
    # about 2.5 s: the default stops only pathological pages, with room for
    # slower worker CPUs. Typical pages take 5 to 60 ms.
    page_budget_ms: float = 10000.0
    # Pages one shard of a site may hold (design "Hot sites"): a larger site is
    # split by directory, then by URL hash (transforms/shards.py). The per-site
    # step holds a shard in memory, so this bounds a worker's memory; candidates
    # are only searched within a shard.
    max_site_pages: int = 2000


@dataclass(frozen=True)
class RunLimits:
    """How a local run (Beam's FnApiRunner: no --runner) bounds its memory
    (pipeline/partitions.py). Remote runners shuffle on their own and ignore it."""
    # The peak memory, in MB, a local run with one worker plans for: the input is spilled to
    # local disk by site and its sites processed in as many partitions as keep each one's
    # rows within this (docs/runners.md, "Memory"; pipeline/partitions.py partition_bytes).
    # At or below a run's fixed cost (the interpreter, Beam, the models, and the working set
    # of its largest site shard: about 210 MB with shards of 10-300 pages, 380 MB with shards
    # of 2,000) every bucket of sites is a partition of its own.
    memory_budget_mb: int = 400
    # false: a local run is one graph over the whole input, as other runners run it, and its
    # memory grows with the input (docs/performance.md, "Memory per worker", measures both).
    partitions: bool = True


@dataclass(frozen=True)
class Config:
    read: ReadLimits = field(default_factory=ReadLimits)
    menex: MenexParams = field(default_factory=MenexParams)
    page_conex: PageConexParams = field(default_factory=PageConexParams)
    candidates: SiteParams = field(default_factory=SiteParams)
    template: TemplateParams = field(default_factory=TemplateParams)
    template_etdm: EtdmParams = field(default_factory=EtdmParams)
    site_conex: SiteConexParams = field(default_factory=SiteConexParams)
    site_conex_etdm: EtdmParams = SITE_CONEX_ETDM
    link_blocks: LinkBlockParams = field(default_factory=LinkBlockParams)
    site: SiteLimits = field(default_factory=SiteLimits)
    main_content: MainContentParams = field(default_factory=MainContentParams)
    clusters: ClusterParams = field(default_factory=ClusterParams)
    site_menus: SiteMenuParams = field(default_factory=SiteMenuParams)
    state: StateParams = field(default_factory=StateParams)
    duplicates: DuplicateParams = field(default_factory=DuplicateParams)
    output: OutputParams = field(default_factory=OutputParams)
    run: RunLimits = field(default_factory=RunLimits)


_TAG_NAME = re.compile(r"[a-z][a-z0-9:._-]*")

# Value checks beyond the type: (predicate, what it must be).
_UNIT = (lambda v: 0.0 <= v <= 1.0, "between 0 and 1")
_POSITIVE = (lambda v: v > 0, "greater than 0")
_CHECKS = {
    "read.max_payload_bytes": _POSITIVE,
    "read.max_nodes": _POSITIVE,
    "site.page_budget_ms": _POSITIVE,
    "site.max_site_pages": _POSITIVE,
    "run.memory_budget_mb": _POSITIVE,
    "page_conex.c": _POSITIVE,
    "page_conex.max_words": (lambda v: v >= 0, "0 or more"),
    "page_conex.excluded_tags": (lambda v: all(_TAG_NAME.fullmatch(t) for t in v), "HTML tag names"),
}
for _f in dataclasses.fields(MenexParams):
    if _f.type in (float, "float"):
        _CHECKS[f"menex.{_f.name}"] = _UNIT
_CHECKS["menex.representative"] = (lambda v: v in NAV_RULE_FLAGS, "exact, word_part or prefix")
for _section in ("template_etdm", "site_conex_etdm"):
    for _name in ("w_classes", "w_position", "w_attributes", "w_children", "threshold"):
        _CHECKS[f"{_section}.{_name}"] = _UNIT
    _CHECKS[f"{_section}.position_option"] = (lambda v: v in (1, 2, 3, 4), "1, 2, 3 or 4")
    _CHECKS[f"{_section}.group_over"] = _POSITIVE
    _CHECKS[f"{_section}.group_size"] = _POSITIVE
    _CHECKS[f"{_section}.grouping"] = (lambda v: v in ("pair", "node"), "pair or node")
for _name in ("template_n", "conex_n"):
    _CHECKS[f"candidates.{_name}"] = (lambda v: v >= 2, "2 or more")
_CHECKS["candidates.max_loads"] = _POSITIVE
_CHECKS["template.votes"] = _POSITIVE
_CHECKS["template.method"] = (lambda v: v in ("temex", "hybex"), "temex or hybex")
_CHECKS["link_blocks.max_link_density"] = (lambda v: 0.0 < v <= 1.0, "greater than 0 and at most 1")
_CHECKS["link_blocks.listing_link_density"] = (lambda v: 0.0 < v <= 1.0, "greater than 0 and at most 1")
_CHECKS["site_conex.variant"] = (lambda v: v in ("published", "text_aware"), "published or text_aware")
_CHECKS["site_conex.branch"] = (lambda v: v in ("nodes", "words"), "nodes or words")
_CHECKS["main_content.method"] = (lambda v: v in MAIN_CONTENT_METHODS, " or ".join(MAIN_CONTENT_METHODS))
_CHECKS["main_content.neighbour_weight"] = (lambda v: 0.0 <= v < 0.5, "at least 0 and below 0.5")
_CHECKS["main_content.fallback_template_share"] = (lambda v: 0.0 < v <= 1.0, "greater than 0 and at most 1")
_CHECKS["main_content.near_duplicate_share"] = (lambda v: v == 0.0 or 0.5 <= v <= 1.0, "0 (off) or 0.5 to 1")
_CHECKS["clusters.threshold"] = (lambda v: 0.0 <= v < 1.0, "at least 0 and below 1")
_CHECKS["clusters.path_ids"] = (lambda v: v in PATH_IDS, " or ".join(PATH_IDS))
_CHECKS["clusters.max_representatives"] = _POSITIVE
_CHECKS["clusters.pool"] = _POSITIVE
_CHECKS["clusters.fill_order"] = (lambda v: v in FILL_ORDERS, " or ".join(FILL_ORDERS))
_CHECKS["site_menus.scope"] = (lambda v: v in ("cluster", "site"), "cluster or site")
_CHECKS["site_menus.min_anchor_share"] = _UNIT
_CHECKS["output.markdown_links"] = (lambda v: v in KEEP_DROP, "keep or drop")
_CHECKS["output.markdown_images"] = (lambda v: v in KEEP_DROP, "keep or drop")
_CHECKS["output.language_chars"] = (lambda v: v >= 20, "20 or more")
_CHECKS["duplicates.shingle_words"] = _POSITIVE
_CHECKS["duplicates.num_perm"] = (lambda v: 8 <= v <= 1024, "8 to 1024")
_CHECKS["duplicates.near_threshold"] = (lambda v: 0.5 <= v <= 1.0, "0.5 to 1")
_CHECKS["duplicates.max_fingerprints_per_site"] = _POSITIVE
_CHECKS["state.max_pages_per_cluster"] = _POSITIVE
_CHECKS["state.max_clusters_per_site"] = _POSITIVE
_CHECKS["site_conex.merge"] = (lambda v: v in ("always", "content"), "always or content")


def _coerce(path: str, value, hint):
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        value = float(value)
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
    elif hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
    elif hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
    elif hint is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: expected a list of strings, got {value!r}")
        value = tuple(v.lower() for v in value)
    check = _CHECKS.get(path)
    if check and not check[0](value):
        raise ConfigError(f"{path}: must be {check[1]}, got {value!r}")
    return value


def _build_section(name: str, default, values) -> object:
    """The section's defaults with the given keys replaced (two sections may share a class
    with different defaults, e.g. the TemEx and the site-ConEx ETDM parameters)."""
    if not isinstance(values, dict):
        raise ConfigError(f"{name}: expected a mapping of keys to values, got {values!r}")
    hints = get_type_hints(type(default))
    known = [f.name for f in dataclasses.fields(default)]
    kwargs = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{name}.{key}: unknown key; known keys of '{name}': {', '.join(known)}")
        kwargs[key] = _coerce(f"{name}.{key}", value, hints[key])
    try:
        return dataclasses.replace(default, **kwargs)
    except ValueError as exc:  # a rule across keys, e.g. ETDM's group_size <= group_over
        raise ConfigError(f"{name}: {exc}") from None


def config_from_dict(data: dict | None) -> Config:
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a YAML mapping of sections")
    defaults = Config()
    sections = [f.name for f in dataclasses.fields(Config)]
    built = {}
    for name, values in data.items():
        if name not in sections:
            raise ConfigError(f"{name}: unknown section; known sections: {', '.join(sections)}")
        built[name] = _build_section(name, getattr(defaults, name), values)
    return Config(**built)


def _read_yaml(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def load_config(path: str | None = None) -> Config:
    """Load a preset: None = default.yaml; a bare name = configs/NAME.yaml; else a file path.

    A preset only needs the keys it changes: the others keep default.yaml's
    values (the shipped defaults), section by section.
    """
    if path is None:
        path = DEFAULT_CONFIG
    elif not os.path.exists(path) and os.path.exists(os.path.join(CONFIG_DIR, f"{path}.yaml")):
        path = os.path.join(CONFIG_DIR, f"{path}.yaml")
    data = _read_yaml(path)
    if os.path.abspath(path) != os.path.abspath(DEFAULT_CONFIG) and (data is None or isinstance(data, dict)):
        merged = dict(_read_yaml(DEFAULT_CONFIG) or {})
        for section, values in (data or {}).items():
            base = merged.get(section)
            merged[section] = {**base, **values} if isinstance(base, dict) and isinstance(values, dict) \
                else values
        data = merged
    try:
        return config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
