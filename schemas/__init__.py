from sitestrip.schemas.tables import DATASETS, ERRORS, MENUS, PAGES, SCHEMA_VERSION, TIMING_STAGES  # noqa: F401
