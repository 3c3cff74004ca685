"""The one way the server reaches a URL an author or an agent gave it: research pages and webhooks.

Guards (SECURITY.md, "Outbound requests"):

- ``http`` and ``https`` only; no user name or password in the URL.
- Every address the host name resolves to is checked; a private, loopback, link-local, multicast, reserved or
  unspecified address (IPv4 or IPv6, including IPv4-mapped and 6to4/Teredo-embedded forms) refuses the URL.
- The connection goes to the address that was checked (the socket connects to that IP; the ``Host`` header and
  TLS SNI/certificate check carry the name), so a second DNS answer cannot swap it.
- Each redirect is checked the same way, at most ``MAX_REDIRECTS`` hops.
- A timeout, a size cap and (for pages) the content types ``text/html`` and ``text/plain``.

Two settings feed it, both real code paths and never a switch that turns the guard off:

- ``NOVELGRAPH_RESOLVER_HOSTS``: a mapping ``name -> [address, ...]`` consulted before DNS, like a hosts file
  (tests use it to make a name answer a private address).
- ``NOVELGRAPH_RESEARCH_ALLOWED_HOSTS``: test-only allow list of ``host:port`` (or ``host``) entries whose
  addresses may be non-public, for the test suite's local servers. Empty in production.

A refusal raises ``Invalid`` naming the caller's field (``url`` by default) and the reason.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from django.conf import settings

from novelgraph.core.errors import Invalid

MAX_REDIRECTS = 3
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
PAGE_TYPES = ("text/html", "text/plain")
USER_AGENT = "NovelGraph/1 (+research fetcher)"


class Refused(Invalid):
    """A URL the guard will not reach; ``field`` names the input, the message says why."""

    code = "url_refused"


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    address: str  # the vetted IP the socket connects to


@dataclass(frozen=True)
class Fetched:
    url: str  # the final URL, after redirects
    status: int
    content_type: str
    charset: str
    body: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    @property
    def text(self) -> str:
        return self.body.decode(self.charset or "utf-8", errors="replace")


def _refuse(reason: str, field: str) -> Refused:
    return Refused(f"This address cannot be used: {reason}.", field=field, reason=reason)


def address_refusal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not a public one (None when it is)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            reason = address_refusal(embedded)
            if reason:
                return f"{reason} (inside an IPv6 address)"
        if ip in ipaddress.ip_network("64:ff9b::/96"):  # NAT64 of an IPv4 address
            reason = address_refusal(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
            if reason:
                return f"{reason} (inside an IPv6 address)"
    for attribute, reason in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(ip, attribute):
            return reason
    if not ip.is_global:
        return "a non-public address"
    return None


def _resolve(host: str, port: int) -> list[str]:
    mapped = getattr(settings, "NOVELGRAPH_RESOLVER_HOSTS", {}) or {}
    if host.lower() in mapped:
        return list(mapped[host.lower()])
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return list(dict.fromkeys(info[4][0] for info in infos))


def _allowed_for_tests(host: str, port: int) -> bool:
    allowed = {entry.strip().lower() for entry in getattr(settings, "NOVELGRAPH_RESEARCH_ALLOWED_HOSTS", ()) or ()}
    return f"{host}:{port}" in allowed or host in allowed


def check_url(url: str, *, field: str = "url") -> Target:
    """Vet one URL (one hop): scheme, credentials, every resolved address. Returns where to connect."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise _refuse("it is not a valid URL", field) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise _refuse("only http and https addresses can be fetched", field)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise _refuse("it carries a user name or password", field)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise _refuse("it names no host", field)
    port = port or (443 if scheme == "https" else 80)
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    addresses = [str(literal)] if literal is not None else _resolve(host, port)
    if not addresses:
        raise _refuse("its host name does not resolve", field)
    allowed = _allowed_for_tests(host, port)
    vetted = []
    for address in addresses:
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            raise _refuse("its host name resolves to something that is not an address", field) from None
        reason = address_refusal(ip)
        if reason and not allowed:
            raise _refuse(f"it leads to {reason}", field)
        vetted.append(str(ip))
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(scheme=scheme, host=host, port=port, path=path, address=vetted[0])


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the vetted address, whatever the name resolves to now."""

    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._address = target.address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # SNI and the certificate check use the name; the socket goes to the checked address.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def _host_header(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    host = f"[{target.host}]" if ":" in target.host else target.host
    return host if target.port == default else f"{host}:{target.port}"


def request(
    url: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    field: str = "url",
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    content_types: tuple[str, ...] | None = None,
    follow_redirects: bool = True,
) -> Fetched:
    """Reach ``url`` through the guards; follows at most ``MAX_REDIRECTS`` redirects, each vetted.

    Refusals of the URL (or a hop) raise ``Refused``; a network failure, a timeout, an oversize body or a wrong
    content type raise ``Invalid`` on the same field. ``content_types`` None accepts any type."""
    current = url
    for _hop in range(MAX_REDIRECTS + 1):
        target = check_url(current, field=field)
        connection_class = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
        connection = connection_class(target, timeout)
        try:
            sent = {"Host": _host_header(target), "User-Agent": USER_AGENT, "Accept": "text/html, text/plain"}
            sent.update(headers or {})
            connection.putrequest(method, target.path, skip_host=True, skip_accept_encoding=True)
            for name, value in sent.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            if follow_redirects and response.status in (301, 302, 303, 307, 308):
                location = response.getheader("Location")
                if not location:
                    raise Invalid("The page redirected without saying where.", field=field)
                current = urljoin(current, location)
                if response.status == 303:
                    method, body = "GET", None
                continue
            content_type = response.headers.get_content_type()
            charset = response.headers.get_content_charset() or ""
            if content_types is not None and content_type not in content_types:
                raise Invalid(
                    f"The page is {content_type}; only {' and '.join(content_types)} can be collected.",
                    field=field,
                )
            length = response.getheader("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise Invalid(f"The page is larger than {max_bytes} bytes.", field=field)
            data = response.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise Invalid(f"The page is larger than {max_bytes} bytes.", field=field)
            return Fetched(url=current, status=response.status, content_type=content_type, charset=charset, body=data)
        except (OSError, http.client.HTTPException) as exc:
            raise Invalid(f"The address could not be reached ({exc.__class__.__name__}).", field=field) from None
        finally:
            connection.close()
    raise _refuse(f"it redirects more than {MAX_REDIRECTS} times", field)


def fetch_page(url: str, *, field: str = "url") -> Fetched:
    """A research page: GET, text/html or text/plain, 2xx only."""
    fetched = request(url, field=field, content_types=PAGE_TYPES)
    if not 200 <= fetched.status < 300:
        raise Invalid(f"The page answered with status {fetched.status}.", field=field)
    return fetched
