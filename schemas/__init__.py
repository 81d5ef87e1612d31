from sitestrip.schemas.tables import (DATASETS, ERRORS, LINKS, MENUS, OPTIONAL_DATASETS, PAGES, SCHEMA_VERSION,  # noqa: F401
                                     SITES, STATE, STATE_KEYS, STATE_V1, TIMING_STAGES)
