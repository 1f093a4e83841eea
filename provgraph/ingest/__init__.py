"""The import framework: the importer API (:mod:`.api`), the registry of importers, sources and
their hashes, planning, running an import atomically, record readers and test helpers."""
