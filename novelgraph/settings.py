"""NovelGraph settings.

Everything that differs between a laptop and a server comes from the environment;
the defaults are safe for local development (SQLite under var/, DEBUG on).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

from novelgraph.core.sealkey import first_round_key, local_seal_key, split_keys

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("NOVELGRAPH_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", True)
_DEV_SECRET = "django-insecure-novelgraph-local-development-only"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")
# Browser origins allowed to call /mcp besides the site's own (novelgraph/mcp/http.py), e.g.
# "https://agents.example.com"; a request with no Origin header (a non-browser client) is always allowed.
NOVELGRAPH_MCP_ALLOWED_ORIGINS = env_list("NOVELGRAPH_MCP_ALLOWED_ORIGINS", "")

# Outbound requests (research from a URL, webhooks) go through novelgraph/core/fetch.py, which refuses
# non-public addresses. TEST ONLY: NOVELGRAPH_RESEARCH_ALLOWED_HOSTS lists "host:port" entries whose addresses may
# be local (the test suite's own servers); leave it empty in production. NOVELGRAPH_RESOLVER_HOSTS maps a name to
# addresses before DNS, like a hosts file (settings only, no environment variable).
NOVELGRAPH_RESEARCH_ALLOWED_HOSTS = env_list("NOVELGRAPH_RESEARCH_ALLOWED_HOSTS", "")
NOVELGRAPH_RESOLVER_HOSTS: dict[str, list[str]] = {}

# The decision log's keyed seal. It must never live in the database: whoever can
# rewrite rows and recompute SHA-256 hashes still cannot forge the HMAC without it.
# Unset, a random local key is generated on first use in var/seal.key (never derived from
# SECRET_KEY, whose development value is public); the deploy check warns when DEBUG is off.
# A key ring: NOVELGRAPH_SEAL_KEY seals new entries; the keys in
# NOVELGRAPH_SEAL_OLD_KEYS (comma-separated) still verify the entries they sealed.
DECISION_LOG_SEAL_KEY_CONFIGURED = bool(os.environ.get("NOVELGRAPH_SEAL_KEY", ""))
DECISION_LOG_SEAL_KEY = os.environ.get("NOVELGRAPH_SEAL_KEY", "") or local_seal_key(VAR_DIR)
DECISION_LOG_SEAL_OLD_KEYS = split_keys(os.environ.get("NOVELGRAPH_SEAL_OLD_KEYS", ""))
# The key the first round derived from SECRET_KEY when no seal key was set: it verifies, by itself, the entries
# that round sealed (they carry no key id), and nothing else (issue 30.6; approvals/chain.py).
DECISION_LOG_FIRST_ROUND_KEY = first_round_key(SECRET_KEY)
# The chain's tip is anchored outside the database: one append-only file per book under this
# directory (a subdirectory per database), sealed with the key (approvals/anchor.py).
DECISION_LOG_ANCHOR_DIR = Path(os.environ.get("NOVELGRAPH_ANCHOR_DIR", VAR_DIR / "decision-log-anchors"))

# Where `manage.py loop_export` writes a book's loop as files (seed 002's sidecar): this setting, else
# VAR_DIR/discovery when VAR_DIR exists, else the nearest folder above the working directory holding a
# `.novelgraph-discovery` marker file, else VAR_DIR/discovery (discovery/loop/services/sidecar.py).
NOVELGRAPH_DISCOVERY_ROOT = os.environ.get("NOVELGRAPH_DISCOVERY_ROOT", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "csp",
    "django_htmx",
    "template_partials",
    "ninja",
    "django_tasks",
    "novelgraph.core",
    "discovery",
    "discovery.loop",
    "discovery.agents",
    # After discovery.agents, whose db_worker (naming each worker by host and process) replaces this one's.
    "django_tasks_db",
    "library",
    "approvals",
    "novelgraph",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "novelgraph.core.security.ApiJsonErrorsMiddleware",
    # Before anything that reads the body (sessions, CSRF, views): an oversized body is a 413.
    "novelgraph.core.security.RequestSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A rule's refusal that a page does not show inline becomes the error page with its status.
    "novelgraph.core.pages.DomainErrorPages",
]

ROOT_URLCONF = "novelgraph.urls"
WSGI_APPLICATION = "novelgraph.wsgi.application"
ASGI_APPLICATION = "novelgraph.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # ``links``: every page of the book a page's URL names, for its navigation.
                "discovery.book_nav.book_nav",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------
# SQLite is the embedded default. WAL lets readers proceed during a write; the
# busy timeout makes a second writer wait instead of failing; IMMEDIATE
# transactions take the write lock at BEGIN, so two writers never deadlock on
# a lock upgrade (SQLite's stand-in for SELECT ... FOR UPDATE).
SQLITE_PATH = Path(os.environ.get("NOVELGRAPH_SQLITE_PATH", VAR_DIR / "novelgraph.sqlite3"))
# Durability: with WAL, synchronous=FULL syncs the WAL at every commit, so a committed
# decision survives a power loss; NORMAL syncs only at checkpoints and may lose the last commits.
# FULL is the default; NOVELGRAPH_SQLITE_SYNCHRONOUS=NORMAL trades that guarantee for write speed.
SQLITE_SYNCHRONOUS = os.environ.get("NOVELGRAPH_SQLITE_SYNCHRONOUS", "FULL").strip().upper()
if SQLITE_SYNCHRONOUS not in {"FULL", "EXTRA", "NORMAL"}:
    raise RuntimeError("NOVELGRAPH_SQLITE_SYNCHRONOUS must be FULL, EXTRA or NORMAL")
DATABASE_URL = os.environ.get("DATABASE_URL", "")
# Parallel test runs on one machine (several checkouts, CI) pick distinct test databases.
TEST_DB_ID = os.environ.get("NOVELGRAPH_TEST_DB_ID", "novelgraph")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
    DATABASES["default"]["TEST"] = {"NAME": f"test_{TEST_DB_ID}"}
else:
    DATABASES = {
        "default": {
            "ENGINE": "novelgraph.core.sqlite_pool",
            "NAME": SQLITE_PATH,
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": (
                    "PRAGMA journal_mode=WAL;"
                    f"PRAGMA synchronous={SQLITE_SYNCHRONOUS};"
                    "PRAGMA foreign_keys=ON;"
                    "PRAGMA busy_timeout=20000;"
                ),
            },
            "TEST": {"NAME": str(VAR_DIR / f"test-{TEST_DB_ID}.sqlite3")},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Database connections -------------------------------------------------
# One rule under every server (uvicorn, gunicorn, the db_worker): a request's connection goes back to a
# bounded pool when the request ends (CONN_MAX_AGE = 0). A connection kept per thread is right for WSGI only:
# under ASGI every request runs on a thread of its own, and one uvicorn process kept 66-99 PostgreSQL
# connections, enough to exhaust the server (issue 30). PostgreSQL: Django's pool (psycopg_pool), at most
# NOVELGRAPH_DB_POOL_SIZE connections per process; a request that finds them all busy waits up to
# NOVELGRAPH_DB_POOL_TIMEOUT seconds. SQLite (novelgraph.core.sqlite_pool): at most NOVELGRAPH_DB_POOL_SIZE idle
# connections per process, each in use by one request in progress. NOVELGRAPH_DB_POOL_SIZE=0 turns the pools
# off: then NOVELGRAPH_CONN_MAX_AGE (default 0, one connection per request) applies, for WSGI servers only.
DB_POOL_SIZE = int(os.environ.get("NOVELGRAPH_DB_POOL_SIZE", "8"))
DB_POOL_MIN_SIZE = min(DB_POOL_SIZE, int(os.environ.get("NOVELGRAPH_DB_POOL_MIN_SIZE", "1")))
DB_POOL_TIMEOUT = float(os.environ.get("NOVELGRAPH_DB_POOL_TIMEOUT", "30"))
if DB_POOL_SIZE < 0 or DB_POOL_TIMEOUT <= 0:
    raise RuntimeError("NOVELGRAPH_DB_POOL_SIZE must be 0 or more and NOVELGRAPH_DB_POOL_TIMEOUT more than 0")
if DB_POOL_SIZE:
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = (
        {"min_size": DB_POOL_MIN_SIZE, "max_size": DB_POOL_SIZE, "timeout": DB_POOL_TIMEOUT}
        if DATABASES["default"]["ENGINE"].endswith("postgresql")
        else {"max_size": DB_POOL_SIZE}
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("NOVELGRAPH_CONN_MAX_AGE", "0"))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# API requests with a bearer key skip the browser's middleware (novelgraph.core.browser_only); session-cookie
# requests, API or not, still go through Django's own.
BROWSER_ONLY_MIDDLEWARE = {
    "django.contrib.sessions.middleware.SessionMiddleware": "novelgraph.core.browser_only.BrowserSessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware": "novelgraph.core.browser_only.BrowserCsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware": (
        "novelgraph.core.browser_only.BrowserAuthenticationMiddleware"
    ),
    "django.contrib.messages.middleware.MessageMiddleware": "novelgraph.core.browser_only.BrowserMessageMiddleware",
}
MIDDLEWARE = [BROWSER_ONLY_MIDDLEWARE.get(name, name) for name in MIDDLEWARE]
# Django's CSRF deploy check looks for its middleware by name; novelgraph.W003 accepts the subclass instead.
SILENCED_SYSTEM_CHECKS = ["security.W003"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Username/password with login throttling (novelgraph.core.security): too many failures for one
# username from one address refuse further attempts for the window (HTTP 429 on the login page).
AUTHENTICATION_BACKENDS = ["novelgraph.core.security.ThrottledModelBackend"]
NOVELGRAPH_LOGIN_FAILURE_LIMIT = int(os.environ.get("NOVELGRAPH_LOGIN_FAILURE_LIMIT", "5"))
NOVELGRAPH_LOGIN_FAILURE_WINDOW = int(os.environ.get("NOVELGRAPH_LOGIN_FAILURE_WINDOW", "900"))  # seconds
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "discovery:home"
LOGOUT_REDIRECT_URL = "login"
# E-mail (novelgraph.core.mail, templates/email/): in development the message is printed on the console;
# otherwise the backend and its server come from the environment.
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("DJANGO_EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("DJANGO_EMAIL_USE_SSL", False)
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "NovelGraph <novelgraph@localhost>")
# Where the links in e-mails and feeds point (novelgraph.core.mail.site_url).
NOVELGRAPH_SITE_URL = os.environ.get("NOVELGRAPH_SITE_URL", "http://127.0.0.1:8000")

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- Security (strict unless DEBUG) -----------------------------------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Content-Security-Policy on every response (django-csp): only the site's own scripts, styles and images;
# no inline script or style anywhere (pages, admin, API docs). novelgraph.core.security.CONTENT_SECURITY_POLICY
# is the same policy as one header value. (With DEBUG on, django-csp leaves Django's debug 404/500 pages alone.)
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}
# Request bodies: 1 MiB of non-file data, 10 MiB for a multipart upload; more is a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("NOVELGRAPH_MAX_BODY_BYTES", str(1024 * 1024)))
NOVELGRAPH_MAX_UPLOAD_BYTES = int(os.environ.get("NOVELGRAPH_MAX_UPLOAD_BYTES", str(10 * 1024 * 1024)))
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- NovelGraph -------------------------------------------------------------
# auto: FTS5 on SQLite (when the build has it), full-text search on PostgreSQL;
# like: the portable fallback.
NOVELGRAPH_SEARCH_MODE = os.environ.get("NOVELGRAPH_SEARCH_MODE", "auto")

# --- Agents: Sol, Terra and Luna run inside NovelGraph --------------
# Background work goes through django-tasks with its database backend: a run is queued in the
# same transaction that records it, and `python manage.py db_worker` runs it (any number of
# workers on one PostgreSQL database; each task runs once).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
# `offline` is the embedded, deterministic default; `openai-compatible` is any chat-completions
# server (a hosted model, or a local one through Ollama, vLLM or LM Studio).
NOVELGRAPH_AGENTS = {
    "PROVIDER": os.environ.get("NOVELGRAPH_AGENT_PROVIDER", "offline"),
    "BASE_URL": os.environ.get("NOVELGRAPH_AGENT_BASE_URL", ""),
    "MODEL": os.environ.get("NOVELGRAPH_AGENT_MODEL", ""),
    "API_KEY": os.environ.get("NOVELGRAPH_AGENT_API_KEY", "") or os.environ.get("OPENAI_API_KEY", ""),
    "TIMEOUT": float(os.environ.get("NOVELGRAPH_AGENT_TIMEOUT", "120")),
    "MAX_RETRIES": int(os.environ.get("NOVELGRAPH_AGENT_MAX_RETRIES", "2")),
    "MAX_TOKENS": int(os.environ.get("NOVELGRAPH_AGENT_MAX_TOKENS", "4000")),
    "MAX_REPLY_CHARS": int(os.environ.get("NOVELGRAPH_AGENT_MAX_REPLY_CHARS", "100000")),
    # json_object (OpenAI, Ollama, vLLM), json_schema (LM Studio, vLLM, OpenAI) or none
    "RESPONSE_FORMAT": os.environ.get("NOVELGRAPH_AGENT_RESPONSE_FORMAT", "json_object"),
    # What a run costs against the loop's cost budget: a base per run, plus per thousand tokens a model reports.
    "RUN_COST": float(os.environ.get("NOVELGRAPH_AGENT_RUN_COST", "1")),
    # After the author's turn or verdict, Sol takes the next step without a button (each book can turn it off).
    "ACT_ON_THEIR_OWN": os.environ.get("NOVELGRAPH_AGENTS_ACT", "1") not in ("0", "false", "no", "off"),
    "COST_PER_1K_TOKENS": float(os.environ.get("NOVELGRAPH_AGENT_COST_PER_1K_TOKENS", "0.1")),
}


def _agent_role_settings(role: str) -> dict:
    """A role's own model settings, NOVELGRAPH_AGENT_<ROLE>_<SETTING> (e.g. NOVELGRAPH_AGENT_LUNA_MODEL): only the
    ones set; every other setting is the global one (discovery.agents.providers.options_for)."""
    kinds = {
        "PROVIDER": str,
        "BASE_URL": str,
        "MODEL": str,
        "API_KEY": str,
        "TIMEOUT": float,
        "MAX_RETRIES": int,
        "MAX_TOKENS": int,
        "MAX_REPLY_CHARS": int,
        "RESPONSE_FORMAT": str,
        "RUN_COST": float,
        "COST_PER_1K_TOKENS": float,
    }
    found = {key: os.environ.get(f"NOVELGRAPH_AGENT_{role.upper()}_{key}", "") for key in kinds}
    return {key: kinds[key](value) for key, value in found.items() if value}


# A model per role: a strong hosted model for Sol, a small local one for Luna, each with its own costs.
NOVELGRAPH_AGENTS["ROLES"] = {role: _agent_role_settings(role) for role in ("sol", "terra", "luna")}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {
        "handlers": ["console"],
        "level": os.environ.get("DJANGO_LOG_LEVEL", "WARNING"),
    },
}

# API lists: `@paginate` (limit/offset) answers {"items": [...], "count": N}; a limit above the maximum, or an
# offset above a billion (novelgraph.core.pagination), is a 422 naming the parameter.
NINJA_PAGINATION_CLASS = "novelgraph.core.pagination.BoundedLimitOffsetPagination"
NINJA_PAGINATION_PER_PAGE = 50
NINJA_PAGINATION_MAX_LIMIT = 200
