"""The OpenAPI document describes every route truthfully: one schema per name."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from django.conf import settings


def test_schema_class_names_are_unique_so_the_openapi_components_do_not_collide():
    # django-ninja names components by class name: two `ResolveIn`s would document one route with the other's body.
    names: Counter[str] = Counter()
    for path in Path(settings.BASE_DIR).glob("*/**/*.py"):
        if ".venv" in path.parts or "migrations" in path.parts or path.parts[-2] == "tests":
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                getattr(base, "id", "") in {"Schema", "ModelSchema"} or getattr(base, "id", "").endswith(("In", "Out"))
                for base in node.bases
            ):
                names[node.name] += 1
    assert [name for name, count in names.items() if count > 1] == []


def test_the_charter_resolve_route_documents_its_own_body(client):
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/charters/{charter_id}/resolve"]["post"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][ref]["properties"]) == {"approved", "rationale"}
