"""Settings for Context Studio, read from the environment (see README, "Configuration")."""

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-only-used-with-DEBUG-on"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# HTTPS: on by default in production (DEBUG off). Behind a proxy that terminates TLS, set
# SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO so Django knows the original scheme.
HTTPS = env_bool("HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = HTTPS
# Load balancers probe over plain HTTP: the health check answers itself, never a redirect.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000")) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS and env_bool("SECURE_HSTS_PRELOAD", True)
if os.environ.get("SECURE_PROXY_SSL_HEADER"):
    SECURE_PROXY_SSL_HEADER = (os.environ["SECURE_PROXY_SSL_HEADER"], "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# No inline scripts anywhere: scripts come from our static files (htmx via django-htmx).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "axes",
    # Before django_tasks_db: its db_worker command is profiles' own, which first fails the
    # import jobs of workers that died
    # (profiles.import_export.job_workers.import_jobs_fail_stopped).
    "profiles",
    "django_tasks_db",
    "ctxstudio",
]

# Background tasks (workspace imports): Django's tasks framework with the database backend, so
# no other service is needed; ``manage.py db_worker`` runs them (``make run`` and ``make
# serve`` start one). TASKS_BACKEND=django.tasks.backends.immediate.ImmediateBackend runs each
# task inside the request that enqueued it (no worker; what the test suite does).
# Two queues, each served by its own worker (scripts/with_worker.py starts both): "default"
# (imports, bulk ingest jobs, scheduled applies, terms recomputed) and WEBHOOKS_TASK_QUEUE
# (webhook deliveries), so that a receiver that never answers delays no other job.
WEBHOOKS_TASK_QUEUE = "webhooks"
TASK_QUEUES = ["default", WEBHOOKS_TASK_QUEUE]
TASKS = {
    "default": {
        "BACKEND": os.environ.get("TASKS_BACKEND", "django_tasks_db.DatabaseBackend"),
        "QUEUES": TASK_QUEUES,
    }
}
# Readiness (GET /readyz, ctxstudio.health): a task worker writes its heartbeat every
# TASK_WORKER_HEARTBEAT_SECONDS; /readyz answers 503 when a queue has no worker seen within
# READY_TASK_WORKER_SECONDS, or when its oldest due task has waited READY_TASK_MAX_WAIT_SECONDS.
TASK_WORKER_HEARTBEAT_SECONDS = float(os.environ.get("TASK_WORKER_HEARTBEAT_SECONDS", "10"))
READY_TASK_WORKER_SECONDS = float(os.environ.get("READY_TASK_WORKER_SECONDS", "60"))
READY_TASK_MAX_WAIT_SECONDS = float(os.environ.get("READY_TASK_MAX_WAIT_SECONDS", "300"))

# Email (review notifications, profiles.notifications.email) through Django's mailers: the
# console backend in development prints each message; production sets EMAIL_BACKEND (SMTP by
# default when DEBUG is off) and EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD,
# EMAIL_USE_TLS, EMAIL_TIMEOUT. The test runner swaps in the locmem backend.
_SMTP = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_BACKEND_PATH = os.environ.get(
    "EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend" if DEBUG else _SMTP
)
MAILERS = {
    "default": {
        "BACKEND": EMAIL_BACKEND_PATH,
        "OPTIONS": {
            "host": os.environ.get("EMAIL_HOST", "localhost"),
            "port": int(os.environ.get("EMAIL_PORT", "25")),
            "username": os.environ.get("EMAIL_HOST_USER", ""),
            "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
            "use_tls": env_bool("EMAIL_USE_TLS", False),
            "timeout": int(os.environ.get("EMAIL_TIMEOUT", "10")),
        }
        if EMAIL_BACKEND_PATH == _SMTP
        else {},
    }
}
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Context Studio <noreply@localhost>")
# The site's address as its users reach it: the links in notifications start with it.
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")
# Invitations (the studio's Team page, profiles.team.invitations): a link works once, for
# INVITATION_MAX_AGE_DAYS days; at most INVITATIONS_MAX_PENDING are open at a time.
INVITATION_MAX_AGE_DAYS = int(os.environ.get("INVITATION_MAX_AGE_DAYS", "7"))
INVITATIONS_MAX_PENDING = int(os.environ.get("INVITATIONS_MAX_PENDING", "50"))

MIDDLEWARE = [
    # First: every log line of the request carries its id, and the request its access line
    # (LOG_ACCESS), whichever middleware answers it (ctxstudio.log_context).
    "ctxstudio.log_context.RequestIdMiddleware",
    # Applications' resolves and expands signed with a key: the rest of this list but the
    # session's middleware, without DRF's dispatch (ctxstudio.lean_door, issue 35).
    "ctxstudio.lean_door.LeanDoorMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Outermost of ours: whatever answers an error under /api/ below, it leaves in JSON.
    "ctxstudio.middleware.ApiErrorShapeMiddleware",
    "profiles.api.middleware.ApiErrorMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "ctxstudio.middleware.RequestTextRuleMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "ctxstudio.middleware.DatabaseUnavailableMiddleware",
    # Last, as axes asks: it turns a login that locked out into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

# Axes' backend comes first: it refuses a locked-out login before any password is checked;
# ours adds the per-address rate of failed logins in front of it (ctxstudio.login_rate).
# Single sign-on's backend comes last and answers only its own callback (profiles.team.sso); it
# stays listed when single sign-on is off, so turning it off later does not break sessions.
AUTHENTICATION_BACKENDS = [
    "ctxstudio.login_rate.LoginBackend",
    "django.contrib.auth.backends.ModelBackend",
    "profiles.team.sso.SsoBackend",
]

ROOT_URLCONF = "ctxstudio.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "profiles.workspace.permissions.capabilities",
            ],
        },
    },
]

WSGI_APPLICATION = "ctxstudio.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Persistent connections spare each request a new backend. They are not checked
        # before reuse (a ``SELECT 1`` on every request's first query) unless
        # DB_CONN_HEALTH_CHECKS=1: the resolve path's one statement opens a connection the
        # server dropped again itself (``profiles.workspace.selectors.rows_read``), and any
        # other request that meets one fails once, then Django closes it.
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=os.environ.get("DB_CONN_HEALTH_CHECKS", "0") == "1",
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite serves a web server and a task worker side by side (make run): the worker polls
    # in exclusive transactions, so a writer must wait its turn rather than fail at once with
    # "database is locked". IMMEDIATE takes the write lock when a transaction begins (a read
    # that later writes cannot be refused mid-way), ``timeout`` is how long to wait for it,
    # and WAL lets readers go on while one writes. An in-memory database keeps its own
    # journal (the pragma answers "memory" and changes nothing).
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": int(os.environ.get("SQLITE_TIMEOUT", "20")),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        **DATABASES["default"].get("OPTIONS", {}),
    }

# A streaming read replica (docs/operations.md "Read replica"): DATABASE_REPLICA_URL adds the
# "replica" alias, with the default's options. Served-layer reads and the read-only API's
# reads go to it (profiles.workspace.replica, ctxstudio.db_router) unless it has not applied
# the last recorded write, lags more than REPLICA_MAX_LAG_SECONDS, or cannot be reached (then
# the primary answers, and the process leaves the replica alone for REPLICA_RETRY_SECONDS).
# Unset: no replica, nothing changes. Its TEST database mirrors the default's.
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "")
REPLICA_MAX_LAG_SECONDS = float(os.environ.get("REPLICA_MAX_LAG_SECONDS", "5"))
REPLICA_RETRY_SECONDS = float(os.environ.get("REPLICA_RETRY_SECONDS", "5"))
DATABASE_ROUTERS: list[str] = []
if DATABASE_REPLICA_URL:
    if not DATABASE_REPLICA_URL.startswith(("postgres://", "postgresql://")) or (
        DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql"
    ):
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URL: a PostgreSQL replica of a PostgreSQL DATABASE_URL"
        )
    DATABASES["replica"] = {
        **dj_database_url.parse(
            DATABASE_REPLICA_URL,
            conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
            conn_health_checks=DATABASES["default"]["CONN_HEALTH_CHECKS"],
        ),
        "OPTIONS": {"connect_timeout": 2, **DATABASES["default"].get("OPTIONS", {})},
        "TEST": {"MIRROR": "default"},
    }
    DATABASE_ROUTERS = ["ctxstudio.db_router.ReplicaRouter"]

# PostgreSQL behind a connection pooler, and prepared statements (docs/operations.md
# "PgBouncer"). DB_POOLER=pgbouncer (transaction pooling: a server connection is a client's
# for one transaction only) turns off what outlives a transaction: server-side cursors
# (``.iterator()`` would open a WITH HOLD cursor in autocommit) and prepared statements
# (PgBouncer before 1.21 does not carry them across server connections).
# DB_PREPARE_THRESHOLD=N binds parameters on the server and prepares a statement from its
# Nth execution on a connection (psycopg 3); empty (the default) leaves both off.
DB_POOLER = os.environ.get("DB_POOLER", "").strip().lower()
if DB_POOLER not in ("", "pgbouncer"):
    raise ImproperlyConfigured(f"DB_POOLER: {DB_POOLER!r} is not one of: pgbouncer (or empty)")
DB_PREPARE_THRESHOLD = os.environ.get("DB_PREPARE_THRESHOLD", "").strip() or None
if DB_PREPARE_THRESHOLD is not None:
    if not DB_PREPARE_THRESHOLD.isdigit():
        raise ImproperlyConfigured("DB_PREPARE_THRESHOLD must be a whole number (or empty)")
    if DB_POOLER == "pgbouncer":
        raise ImproperlyConfigured(
            "DB_PREPARE_THRESHOLD must be empty with DB_POOLER=pgbouncer: PgBouncer's "
            "transaction pooling does not keep a connection's prepared statements"
        )
    DB_PREPARE_THRESHOLD = int(DB_PREPARE_THRESHOLD)
# The resolve path's reads (the served statement, the version query, the replica's read) are
# prepared on each PostgreSQL connection (planned once, not per request: the served
# statement's planning cost the server more than running it); DB_PREPARED_READS=0 turns that
# off. Never behind DB_POOLER=pgbouncer.
DB_PREPARED_READS = os.environ.get("DB_PREPARED_READS", "1").strip() not in ("0", "false", "no")
# Every PostgreSQL alias (a replica's too, when declared above this section).
for _database in DATABASES.values():
    if _database["ENGINE"] != "django.db.backends.postgresql":
        continue
    _database["DISABLE_SERVER_SIDE_CURSORS"] = DB_POOLER == "pgbouncer"
    if DB_PREPARE_THRESHOLD is not None:
        _database["OPTIONS"] = {
            **_database.get("OPTIONS", {}),
            "server_side_binding": True,
            "prepare_threshold": DB_PREPARE_THRESHOLD,
        }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Behind reverse proxies that append to X-Forwarded-For: how many. 0 trusts only REMOTE_ADDR.
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))

# GET /metrics (Prometheus, ctxstudio.metrics; docs/operations.md "Metrics"): off (404) unless
# METRICS_TOKEN (a bearer secret) or METRICS_ALLOWED_IPS (addresses or networks, comma
# separated, as ctxstudio.client_address sees the client) is set; with both, both must hold.
# METRICS_PROFILE_LABELS adds the profile's key to the resolutions' counter (one series a
# profile: leave it off with many profiles).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_ALLOWED_IPS = env_list("METRICS_ALLOWED_IPS")
for _entry in METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_entry, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {_entry!r} is not an address") from None
METRICS_PROFILE_LABELS = env_bool("METRICS_PROFILE_LABELS", False)

# Login lockouts (django-axes) on the studio login, the admin login and /api/v1/auth/token:
# LOGIN_MAX_FAILURES failed logins of one username from one client address, each within
# LOGIN_FAILURE_WINDOW seconds of the previous, lock that username at that address until the
# window passes without an attempt. Other addresses and other usernames are not affected, so
# random usernames cannot lock anybody out. Counters live in the cache (Redis with CACHE_URL).
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_MAX_FAILURES", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("LOGIN_FAILURE_WINDOW", "900")))
AXES_RESET_ON_SUCCESS = True
# Across usernames: LOGIN_ADDRESS_MAX_FAILURES failed logins from one client address within a
# window of LOGIN_ADDRESS_FAILURE_WINDOW seconds, and that address's further logins answer
# 429 (before any password is hashed) until the window ends (ctxstudio.login_rate).
LOGIN_ADDRESS_MAX_FAILURES = int(os.environ.get("LOGIN_ADDRESS_MAX_FAILURES", "20"))
LOGIN_ADDRESS_FAILURE_WINDOW = int(os.environ.get("LOGIN_ADDRESS_FAILURE_WINDOW", "300"))
AXES_CLIENT_IP_CALLABLE = "ctxstudio.client_address.client_address"
AXES_LOCKOUT_CALLABLE = "ctxstudio.login_lockout.lockout_response"
# The admin lists lockouts (ctxstudio.admin); axes' own pages list database records, which
# the cache handler does not write.
AXES_ENABLE_ADMIN = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"
# False: the studio's login page offers single sign-on only and refuses a password (the admin's
# login stays, for a staff account's emergency access; see docs/decisions.md).
PASSWORD_SIGN_IN = env_bool("PASSWORD_SIGN_IN", True)

# Single sign-on with OpenID Connect (mozilla-django-oidc, profiles.team.sso): on when a client
# id and the issuer (or its endpoints) are given. The endpoints are discovered from
# <OIDC_ISSUER>/.well-known/openid-configuration at the first sign-in unless given here.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_USERINFO_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_JWKS_ENDPOINT", "")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "your identity provider")
# A member's role, recomputed at every sign-in from the groups claim: staff when one of their
# groups is in OIDC_STAFF_GROUPS, else editor when one is in OIDC_EDITOR_GROUPS, else
# OIDC_DEFAULT_ROLE (reader, editor or staff).
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
OIDC_STAFF_GROUPS = env_list("OIDC_STAFF_GROUPS")
OIDC_EDITOR_GROUPS = env_list("OIDC_EDITOR_GROUPS")
OIDC_DEFAULT_ROLE = os.environ.get("OIDC_DEFAULT_ROLE", "reader")
OIDC_USE_NONCE = True
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_TIMEOUT = float(os.environ.get("OIDC_TIMEOUT", "10"))

# Request bodies and uploads (workspace import) are bounded.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("MAX_BODY_BYTES", str(10 * 1024 * 1024)))
# The cap of GET /api/v1/snapshot (413 SNAPSHOT_TOO_LARGE beyond: resolve through the API).
SNAPSHOT_MAX_BYTES = int(os.environ.get("SNAPSHOT_MAX_BYTES", str(64 * 1024 * 1024)))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Token first: an anonymous request then gets 401 with "WWW-Authenticate: Token".
    # Both read the same hashed API keys (profiles.models.ApiKey).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "profiles.api.authentication.TokenAuthentication",
        "profiles.api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Each view names its capabilities (profiles.workspace.permissions); one that forgets gets this.
    "DEFAULT_PERMISSION_CLASSES": ["profiles.workspace.permissions.DefaultApiPermission"],
    # JSON only (a form or multipart body: 415); the workspace import also takes YAML.
    "DEFAULT_PARSER_CLASSES": ["profiles.api.parsers.JSONParser"],  # SPEC §2.2 nesting limit
    "EXCEPTION_HANDLER": "profiles.api.exceptions.api_exception_handler",
    # OPTIONS on a view without serializer_class or queryset describes it instead of a 500.
    "DEFAULT_METADATA_CLASS": "profiles.api.metadata.ApiMetadata",
    # The same proxies as the login lockouts (DRF's default, None, would trust any header).
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    "DEFAULT_PAGINATION_CLASS": "profiles.api.pagination.PageNumberPagination",
    "PAGE_SIZE": int(os.environ.get("API_PAGE_SIZE", "50")),
    # resolve, preview, expand and impact are throttled per user, the studio's doors on the
    # same counters (see profiles.workspace.throttling).
    "DEFAULT_THROTTLE_RATES": {
        "resolve": os.environ.get("API_THROTTLE_RESOLVE", "600/minute"),
        "preview": os.environ.get("API_THROTTLE_PREVIEW", "600/minute"),
        "expand": os.environ.get("API_THROTTLE_EXPAND", "600/minute"),
        # GET /api/v1/snapshot (the client's local evaluation polls it, mostly 304).
        "snapshot": os.environ.get("API_THROTTLE_SNAPSHOT", "120/minute"),
        # An impact resolves every saved scenario twice: up to IMPACT_MAX_RESOLUTIONS a call.
        "impact": os.environ.get("API_THROTTLE_IMPACT", "30/minute"),
        # The activity log: indexed reads, but a reader can ask for any page of a long log.
        "activity": os.environ.get("API_THROTTLE_ACTIVITY", "600/minute"),
        # "Send test" of a webhook: each one makes the worker send a request.
        "webhook-test": os.environ.get("API_THROTTLE_WEBHOOK_TEST", "10/minute"),
        # Each comment or verdict emails the request's author: a person's pace, not a loop's.
        "comment": os.environ.get("API_THROTTLE_COMMENT", "30/minute"),
        # Bulk ingest: each request writes up to BULK_INGEST_MAX_LINES items.
        "bulk": os.environ.get("API_THROTTLE_BULK", "60/minute"),
        # Each invitation sends an email to an address a staff member typed.
        "invite": os.environ.get("STUDIO_THROTTLE_INVITE", "30/hour"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Context Studio API",
    "DESCRIPTION": "Resolve Context Profiles and manage the workspace they read.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Deep links put a link inside each operation's toggle button (axe: nested-interactive,
    # one per operation); without them the toggle is a plain button.
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "REDOC_DIST": "SIDECAR",
    # onStale and onUnknown share one choice set: name it once.
    # Request bodies get their own components (read-only fields left out, unknown fields
    # refused: profiles.api.schema.postprocess_schema); the error codes are one enum.
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "profiles.api.schema.postprocess_schema",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ErrorCodeEnum": "profiles.api.exceptions.ERROR_CODE_CHOICES",
        "DetailEnum": "resolver.request.DETAILS",
        "ResolutionDetailEnum": ["summary"],
        "CurrentnessActionEnum": "profiles.models.CurrentnessAction",
        "ChangeRequestStatusEnum": "profiles.models.ChangeRequestStatus",
        "EntityKindEnum": "profiles.workspace.entity_changes.KINDS",
        "EntityOpEnum": "profiles.workspace.entity_changes.OPS",
        "ResolutionStatusEnum": ["RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED"],
        "ImportJobModeEnum": "profiles.import_export.imports.IMPORT_MODES",
        # Import and bulk ingest jobs share their statuses (one enum, not two derived names).
        "ImportJobStatusEnum": "profiles.models.ImportJob.Status",
    },
}

# The impact of a draft resolves each saved scenario twice (saved rules, draft): at most this
# many resolutions a call; the scenarios beyond are listed as skipped (docs/decisions.md).
IMPACT_MAX_RESOLUTIONS = int(os.environ.get("IMPACT_MAX_RESOLUTIONS", "200"))

# Import jobs not yet finished (queued or running) per user, and the bytes they hold; an
# upload beyond either answers 429 (profiles.import_export.jobs).
IMPORT_MAX_QUEUED_JOBS_PER_USER = int(os.environ.get("IMPORT_MAX_QUEUED_JOBS_PER_USER", "3"))
IMPORT_MAX_QUEUED_BYTES_PER_USER = int(
    os.environ.get("IMPORT_MAX_QUEUED_BYTES_PER_USER", str(30 * 1024 * 1024))
)

# Bulk ingest (POST /api/v1/layers/<key>/bulk): the most operations one request may carry; a
# larger batch is refused (413) with the advice to split it (profiles.material.bulk_ingest).
BULK_INGEST_MAX_LINES = int(os.environ.get("BULK_INGEST_MAX_LINES", "10000"))
# Operations one background bulk ingest job may carry (?background=true); it writes them
# BULK_INGEST_MAX_LINES at a time, each part in its own transaction.
BULK_INGEST_JOB_MAX_LINES = int(os.environ.get("BULK_INGEST_JOB_MAX_LINES", "1000000"))

# A layer with an itemFilter is served: no worker holds its items, each request fetches its
# customer's items from the database (profiles.workspace.served). "0" holds every layer in
# every worker, as before issue 20 (for comparison in the benchmark).
SERVE_FILTERED_LAYERS = os.environ.get("SERVE_FILTERED_LAYERS", "1") != "0"
# Each worker keeps the candidates of the customers it met last (profiles.workspace.served),
# bounded in customers and in estimated bytes (least recently used out first).
SERVED_CACHE_ENTRIES = int(os.environ.get("SERVED_CACHE_ENTRIES", "20000"))
SERVED_CACHE_BYTES = int(os.environ.get("SERVED_CACHE_BYTES", str(64 * 1024 * 1024)))
# The lean door of applications (ctxstudio.lean_door, issue 35). A process holds the API keys
# it has seen (profiles.workspace.key_cache): a key revoked, or its owner deactivated or
# demoted, elsewhere stops working here within this many seconds (at once in the process
# that made the change).
API_KEY_CACHE_SECONDS = float(os.environ.get("API_KEY_CACHE_SECONDS", "5"))
# While the database cannot be reached, a resolve answers from the compiled workspace the
# worker holds, its served layers unavailable, with "X-Context-Degraded: database-unavailable"
# (profiles.resolution.degraded); off: 503 as for every other request.
DEGRADED_ANSWERS = env_bool("DEGRADED_ANSWERS", True)
# A held layer of at least this many items keeps its item texts in a file every worker
# maps, read only for what is rendered (profiles.workspace.held_texts); "off" holds every
# text in every worker. The files go to MATERIAL_TEXTS_DIR (default: var/texts in the project,
# beside the SQLite database), one folder per database; the folder must be the service's own
# (owned by its user, writable by nobody else: created 0700, files 0600) or the texts are held
# in memory and /readyz says why. A file that does not verify is rebuilt from the database.
_MAPPED_TEXTS_MIN_ITEMS = os.environ.get("MAPPED_TEXTS_MIN_ITEMS", "1000")
MAPPED_TEXTS_MIN_ITEMS = None if _MAPPED_TEXTS_MIN_ITEMS == "off" else int(_MAPPED_TEXTS_MIN_ITEMS)
MATERIAL_TEXTS_DIR = os.environ.get("MATERIAL_TEXTS_DIR") or str(BASE_DIR / "var" / "texts")

# Decision log: every API resolution (and, optionally, studio previews) is recorded.
DECISION_LOG_ENABLED = env_bool("DECISION_LOG_ENABLED", True)
DECISION_LOG_PREVIEWS = env_bool("DECISION_LOG_PREVIEWS", False)
DECISION_LOG_STORE_INPUT = env_bool("DECISION_LOG_STORE_INPUT", False)
DECISION_LOG_RETENTION_DAYS = int(os.environ.get("DECISION_LOG_RETENTION_DAYS", "30"))
# Written by a background thread so that logging never slows a resolution.
DECISION_LOG_ASYNC = env_bool("DECISION_LOG_ASYNC", True)

# Writers wait at most this long for the workspace writers' lock (PostgreSQL's lock_timeout,
# a duration such as "5s" or "300ms"); beyond it the write answers 409 with Retry-After.
WRITE_LOCK_TIMEOUT = os.environ.get("WRITE_LOCK_TIMEOUT", "20s")

# Safe change: in an environment that requires change requests, staff may write directly only
# when this is on; every such write is flagged on the profile version and logged as a warning.
SAFE_CHANGE_STAFF_BYPASS = env_bool("SAFE_CHANGE_STAFF_BYPASS", False)

# Outgoing webhooks (profiles.notifications). A webhook may not point at a loopback,
# link-local or private address (SSRF) unless this is on; it is on with DEBUG, so a receiver
# on one's own machine can be tried. Each delivery attempt has WEBHOOKS_TIMEOUT_SECONDS in
# all; a failed one is retried after BASE × 5^(n-1) seconds, WEBHOOKS_MAX_ATTEMPTS in all.
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", DEBUG)
WEBHOOKS_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOKS_TIMEOUT_SECONDS", "5"))
if not 0 < WEBHOOKS_TIMEOUT_SECONDS <= 30:
    # An attempt holds the deliveries' worker that long: bounded, so a silent receiver costs
    # at most its own retries.
    raise ImproperlyConfigured("WEBHOOKS_TIMEOUT_SECONDS must be more than 0 and at most 30.")
WEBHOOKS_RETRY_BASE_SECONDS = float(os.environ.get("WEBHOOKS_RETRY_BASE_SECONDS", "60"))
WEBHOOKS_MAX_ATTEMPTS = int(os.environ.get("WEBHOOKS_MAX_ATTEMPTS", "5"))
WEBHOOKS_MAX = int(os.environ.get("WEBHOOKS_MAX", "50"))
# Delivered and failed deliveries older than this are deleted when a worker starts.
WEBHOOKS_LOG_RETENTION_DAYS = int(os.environ.get("WEBHOOKS_LOG_RETENTION_DAYS", "30"))

# The cache holds throttling counters; with CACHE_URL (Redis) they are shared by every worker.
if os.environ.get("CACHE_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["CACHE_URL"],
            "KEY_PREFIX": "ctxstudio",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Axes' warning about a per-process cache names AXES_CACHE and CACHES; ctxstudio.W001 says it
# instead, once, naming CACHE_URL (and not in development: make run is one process).
# models.W040: SQLite has no index with included columns; ItemKey's lookup index includes
# two on PostgreSQL only (an index-only served read there), on purpose.
SILENCED_SYSTEM_CHECKS = ["axes.W001", "models.W040"]

# Application log lines: UTC time, level, logger, the request's id ("-" outside a request),
# as a plain line (LOG_FORMAT=text, the development default) or one JSON object a line
# (LOG_FORMAT=json, for production: docs/operations.md "Logs"). LOG_ACCESS adds one access
# line a request (door, method, status, duration, user and key ids). No customer text in any
# line, at any level (ctxstudio.log_format).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "").strip().lower() or "text"
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be text or json, not {LOG_FORMAT!r}.")
LOG_ACCESS = env_bool("LOG_ACCESS", False)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "ctxstudio.log_context.RequestIdFilter"},
        "request_path": {"()": "ctxstudio.log_context.RequestPathFilter"},
    },
    "formatters": {
        "line": {
            "()": "ctxstudio.log_format.UtcFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        },
        "json": {"()": "ctxstudio.log_format.JsonLineFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "line",
            "filters": ["request_id", "request_path"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # Django's own console handler (DEBUG only, plain lines) would print each of its lines a
    # second time beside ours: its records reach the root's handler alone, at its INFO level
    # (its DEBUG lines include the SQL queries with their parameters: customer text).
    # (django.server keeps its handler: the development server's access lines.)
    # The access lines are INFO, whatever LOG_LEVEL (LOG_ACCESS turns them on and off).
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "ctxstudio.access": {"level": "INFO"},
    },
}
