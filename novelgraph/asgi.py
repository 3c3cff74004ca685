"""The ASGI application: Django, with the MCP server's streamable-HTTP transport at ``/mcp``.

Serve it with uvicorn (``make run``; README "Running on PostgreSQL behind a proxy"). The WSGI
application (``novelgraph/wsgi.py``) serves Django alone, without ``/mcp``.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelgraph.settings")
django_application = get_asgi_application()

from novelgraph.mcp.http import mcp_http_app, with_mcp  # noqa: E402  (needs Django set up first)

application = with_mcp(django_application, mcp_http_app())
