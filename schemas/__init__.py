from sitestrip.schemas.tables import DATASETS, ERRORS, MENUS, PAGES, SCHEMA_VERSION, SITES, TIMING_STAGES  # noqa: F401
