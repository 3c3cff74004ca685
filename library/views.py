"""Browser pages (server-rendered, HTMX partials)."""
