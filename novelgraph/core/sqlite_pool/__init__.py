"""SQLite with a bounded pool of idle connections per process (``ENGINE: "novelgraph.core.sqlite_pool"``)."""
