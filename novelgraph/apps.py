"""The roof: settings, URLs, the API mount, the MCP server and the pages that stand above every app.

An app of its own only so that Django finds its ``mcp`` command and its templates; it holds no models.
"""

from __future__ import annotations

from django.apps import AppConfig


class RoofConfig(AppConfig):
    name = "novelgraph"
    label = "roof"
    verbose_name = "NovelGraph site"
