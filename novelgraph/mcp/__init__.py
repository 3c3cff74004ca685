"""NovelGraph's MCP server: any MCP client acts as Sol, Terra or Luna with that role's key.

- The duties themselves are declared by the apps that own them (``discovery/duties.py``,
  ``discovery/loop/duties.py``, ``discovery/agents/duties.py``, ``library/duties.py``) into the kernel's registry
  (``novelgraph.core.duties``). Each tool names the capabilities it needs, takes the same input
  schema as its REST route (plus the route's path parameters) and calls the same service; each
  resource is filtered as the REST API filters it.
- ``server.py``: the SDK's low-level server built from that registry (tools with their annotations
  and output schemas, resources and their templates, a prompt per role); errors become tool errors
  carrying the REST API's JSON error body.
- ``http.py``: the streamable-HTTP transport mounted at ``/mcp`` (see ``novelgraph/asgi.py``);
  the stdio transport is ``python manage.py mcp --key-env NOVELGRAPH_API_KEY``.
"""
