"""Built-in importers, one module per source format, registered as entry points like any other."""
