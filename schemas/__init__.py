from sitestrip.schemas.tables import DATASETS, ERRORS, MENUS, PAGES, SCHEMA_VERSION, SITES, STATE, TIMING_STAGES  # noqa: F401
