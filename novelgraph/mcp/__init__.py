"""NovelGraph's MCP server: any MCP client acts as Sol, Terra or Luna with that role's key.

- ``tools.py``: the tool table. Each tool names the capabilities it needs, takes the same input
  schema as its REST route (plus the route's path parameters) and calls the same service.
- ``resources.py``: what an agent reads (its latest dossier, the book's current question, the
  open handoffs addressed to it, library chunks by id), filtered as the REST API filters them.
- ``server.py``: the SDK's low-level server built from those tables; errors become tool errors
  carrying the REST API's JSON error body.
- ``http.py``: the streamable-HTTP transport mounted at ``/mcp`` (see ``novelgraph/asgi.py``);
  the stdio transport is ``python manage.py mcp --key-env NOVELGRAPH_API_KEY``.
"""
