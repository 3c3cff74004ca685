"""A real HTTP server on 127.0.0.1 for the tests of outbound requests (research from a URL, webhooks).

It is reached through the documented test-only allow list ``NOVELGRAPH_RESEARCH_ALLOWED_HOSTS`` (the
``research_site`` fixture adds exactly its ``127.0.0.1:<port>``), never by switching the address guard off: any
other local address, port 80 of 127.0.0.1 included, is still refused.

Pages: ``/page`` (an article), ``/plain`` (text/plain), ``/image`` (image/png), ``/big`` (over the size cap),
``/redirect?to=<url>`` (a 302 to ``to``), ``/hops/<n>`` (n redirects in a row). ``/hook`` receives posts and
keeps them in ``received`` (the first ``hook_failures`` posts get 503, then ``hook_status``, 200 by default).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ARTICLE_TITLE = "The Lamp Keepers of Vell"
ARTICLE_TEXT = (
    "Every keeper of the Vell light wrote the hour of lighting in a bound log, and the logs were sent to the "
    "harbour board each spring. The board fined a keeper whose lamp was dark for more than a quarter of an hour."
)
ARTICLE = f"""<!doctype html><html><head><title>{ARTICLE_TITLE}</title></head><body>
<nav><a href="/">Home</a> · <a href="/about">About</a></nav>
<article><h1>{ARTICLE_TITLE}</h1>
<p>{ARTICLE_TEXT}</p>
<p>The oldest surviving log, from 1843, is kept in the harbour museum, where its pages can still be read.</p>
</article><footer>Copyright the harbour society</footer></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    server: _Site

    def log_message(self, *_args):
        pass

    def _send(self, status: int, body: bytes = b"", content_type: str = "text/html; charset=utf-8", **headers):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        parts = urlsplit(self.path)
        site = self.server
        site.hosts_seen.append(self.headers.get("Host", ""))
        if parts.path == "/page":
            self._send(200, ARTICLE.encode())
        elif parts.path == "/plain":
            self._send(200, f"{ARTICLE_TITLE}\n\n{ARTICLE_TEXT}\n".encode(), "text/plain; charset=utf-8")
        elif parts.path == "/image":
            self._send(200, b"\x89PNG\r\n\x1a\n", "image/png")
        elif parts.path == "/big":
            self._send(200, b"<p>" + b"x" * (3 * 1024 * 1024) + b"</p>")
        elif parts.path == "/redirect":
            self._send(302, Location=parse_qs(parts.query)["to"][0])
        elif parts.path.startswith("/hops/"):
            left = int(parts.path.rsplit("/", 1)[1])
            self._send(302, Location="/page" if left <= 1 else f"/hops/{left - 1}")
        else:
            self._send(404, b"not here")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        site = self.server
        site.received.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
        if site.hook_failures > 0:  # fail the next n posts, then answer hook_status
            site.hook_failures -= 1
            self._send(503, b"busy", "text/plain")
        else:
            self._send(site.hook_status, b"ok", "text/plain")


class _Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[dict] = []
        self.hosts_seen: list[str] = []
        self.hook_status = 200
        self.hook_failures = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def allow_entry(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


_SITE: _Site | None = None


def site() -> _Site:
    """The process's one local site (started on first use, a daemon thread)."""
    global _SITE
    if _SITE is None:
        _SITE = _Site()
        threading.Thread(target=_SITE.serve_forever, daemon=True).start()
    return _SITE
