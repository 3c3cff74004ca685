"""`make run PORT=8001` serves elsewhere: the server listens there, and the lines it prints name that port."""

from __future__ import annotations

import re
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry_run(*args: str) -> str:
    """What `make run` would execute (make -n runs nothing)."""
    done = subprocess.run(["make", "-n", "run", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def test_make_run_serves_on_8000_unless_told_otherwise():
    plain = _dry_run()
    assert "--port 8000" in plain and "8001" not in plain
    elsewhere = _dry_run("PORT=8001")
    assert "--port 8001" in elsewhere and "--port 8000" not in elsewhere


def test_the_logins_and_the_demo_page_it_prints_name_the_port(db, monkeypatch):
    commands = _dry_run("PORT=8001")
    urls = set(re.findall(r"NOVELGRAPH_LOCAL_URL=(\S+)", commands))
    assert urls == {"http://127.0.0.1:8001"}, "the demo and the local author are told where the site is"
    monkeypatch.setenv("NOVELGRAPH_LOCAL_URL", urls.pop())
    out = StringIO()
    call_command("demo", stdout=out)
    call_command("ensure_local_author", stdout=out)
    printed = out.getvalue()
    assert "http://127.0.0.1:8001/books/" in printed and "http://127.0.0.1:8001/login/" in printed
    assert ":8000" not in printed
