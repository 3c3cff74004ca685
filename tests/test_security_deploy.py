"""Production settings: `manage.py check --deploy` is clean and cookies are secure (DJANGO_DEBUG=0)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def production_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "NOVELGRAPH_", "DATABASE_URL"))}
    env.update(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(60),
        DJANGO_ALLOWED_HOSTS="example.org",
        DJANGO_SETTINGS_MODULE="novelgraph.settings",
        NOVELGRAPH_VAR_DIR=str(tmp_path),
        NOVELGRAPH_SQLITE_PATH=str(tmp_path / "prod.sqlite3"),
        NOVELGRAPH_SEAL_KEY=secrets.token_hex(32),
    )
    return env


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_session_and_csrf_cookies_are_secure_in_production(tmp_path):
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; print(json.dumps({"
        "'debug': s.DEBUG, 'session_secure': s.SESSION_COOKIE_SECURE, 'csrf_secure': s.CSRF_COOKIE_SECURE, "
        "'session_httponly': s.SESSION_COOKIE_HTTPONLY, 'hsts': s.SECURE_HSTS_SECONDS, "
        "'ssl_redirect': s.SECURE_SSL_REDIRECT, 'samesite': s.SESSION_COOKIE_SAMESITE}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=production_env(tmp_path), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "debug": False,
        "session_secure": True,
        "csrf_secure": True,
        "session_httponly": True,
        "hsts": 31536000,
        "ssl_redirect": True,
        "samesite": "Lax",
    }


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = production_env(tmp_path)
    del env["DJANGO_SECRET_KEY"]
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr
