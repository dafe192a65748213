"""Configuration from the environment (prefix ``PIXRECON_``) and an optional ``.env`` file."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///pixrecon.db"
HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
DASHBOARD_USER_NAME = re.compile(r"[A-Za-z0-9._@-]{1,64}")
DASHBOARD_SECRET_MIN_LENGTH = 32


def _header_name(value: str, example: str) -> str:
    if not HTTP_TOKEN.fullmatch(value):
        raise ValueError(
            "an HTTP header name: letters, digits and ! # $ % & ' * + - . ^ _ ` | ~, "
            f"no spaces or colon (e.g. {example})"
        )
    return value


def _split_csv(value: object) -> object:
    # Comma-separated env values are friendlier for operators than JSON lists.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


CsvList = Annotated[list[str], NoDecode]


# What a provider API needs besides its URL: each setting, with the API's URL and name.
_QRCODE = ("qrcode_api_url", "the QR code API")
_ACCOUNTS = ("accounts_api_url", "the accounts API")
_API_OF = {
    "qrcode_client_id": _QRCODE,
    "qrcode_client_secret": _QRCODE,
    "accounts_client_id": _ACCOUNTS,
    "accounts_client_secret": _ACCOUNTS,
    "accounts_account_id": _ACCOUNTS,
}


def _renamed(name: str, former: str) -> AliasChoices:
    """Read ``PIXRECON_<name>``, or the variable's former name so that an existing
    deployment's environment keeps working after the QR code API settings were renamed."""
    return AliasChoices(f"PIXRECON_{name}", f"PIXRECON_{former}")


MAX_SECONDS = 365 * 86400
MAX_DAYS = 36500


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PIXRECON_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        # ``inf`` is a float Python reads, and no interval, lag or timeout: refused when
        # a command starts, not when a job turns it into a date.
        allow_inf_nan=False,
    )

    database_url: str = DEFAULT_DATABASE_URL
    broker_url: str | None = None

    webhook_secret_header: str = "X-Webhook-Secret"  # noqa: S105 (a header name)
    webhook_secrets: CsvList = Field(default_factory=list)
    allow_ips: CsvList = Field(default_factory=list)
    trusted_proxies: CsvList = Field(default_factory=list)
    insecure_no_auth: bool = False
    max_body_bytes: int = Field(default=1_048_576, gt=0)
    # The whole body must arrive within this long of the request's headers: a sender
    # that stalls mid-body (a slow or hostile client) would otherwise hold one of the
    # PIXRECON_MAX_WAITING_DELIVERIES slots for good, and enough of them turn the
    # provider away with 503.
    body_timeout_seconds: float = Field(default=10.0, gt=0)
    # Backpressure. Deliveries in progress are bounded: beyond this many (counted from a
    # request's start, and again among those waiting for their commit), or when one has
    # waited this long without its transaction starting (the provider gives up after a few
    # seconds and retries), it is answered 503 with Retry-After and nothing of it is
    # stored. Memory stays bounded and every 2xx still means "committed".
    max_waiting_deliveries: int = Field(default=512, gt=0)
    commit_deadline_seconds: float = Field(default=4.0, gt=0)
    # On SIGTERM the receiver finishes the requests in flight for at most this long, then
    # drops what is left (a sender stalled mid-body would otherwise hold it for ever, and
    # systemd kills it after TimeoutStopSec, in-process workers and all). A delivery
    # dropped unanswered was not acknowledged: the provider sends it again.
    shutdown_timeout_seconds: int = Field(default=30, gt=0)

    # Which defences guard each route family ("secret", "ip", "mtls", "hmac"); empty means
    # every defence that is configured. Several listed means all of them must pass.
    qrcode_auth: CsvList = Field(default_factory=list)
    accounts_auth: CsvList = Field(default_factory=list)
    # Mutual TLS. Terminated by `pixrecon serve` itself (certificate, key and the CA that
    # signs client certificates) ...
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    tls_client_ca: str | None = None
    # ... or by a proxy (nginx, Caddy) that passes the verification result in a header,
    # believed only when the request comes from a trusted proxy.
    mtls_verified_header: str | None = None
    mtls_verified_value: str = "SUCCESS"
    mtls_subject_header: str | None = None
    mtls_allowed_subjects: CsvList = Field(default_factory=list)
    # Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature),
    # for providers that sign; several secrets for rotation ("whsec_<base64>" or raw).
    hmac_secrets: CsvList = Field(default_factory=list)
    hmac_tolerance_seconds: int = Field(default=300, gt=0)
    # Rejected deliveries keep their metadata (and the body, when authenticated) for
    # forensics; the oldest are pruned beyond this many rows.
    quarantine_max_rows: int = Field(default=10_000, gt=0)

    # Worker side: threads of the in-process worker, and the sweeper that re-dispatches
    # committed-but-unprocessed inbox rows (the broker is only a wake-up signal).
    worker_threads: int = Field(default=4, gt=0)
    sweep_interval_seconds: float = Field(default=10.0, gt=0)
    redispatch_after_seconds: float = Field(default=30.0, gt=0)
    sweep_batch_size: int = Field(default=500, gt=0)
    # /healthz turns 503 when the oldest unprocessed inbox row is older than this.
    health_max_lag_seconds: float = Field(default=300.0, gt=0)
    # /healthz turns 503 when a periodic job the workers should be running (polling,
    # confirmation, reconciling today) has not succeeded for this long — or for four of
    # the job's own intervals, when that is longer. 30 minutes is six runs of the slowest
    # default jobs (every 5 minutes): a provider hiccup or a crashed run (its lease holds
    # for two intervals) passes unnoticed, a worker that is gone or a provider refusing us
    # does not. Nothing is expected while no provider API is configured, and a job that
    # never succeeded is counted from the receiver's start (reconcile/schedule.py).
    health_max_job_age_seconds: float = Field(default=1800.0, gt=0)

    # Each `pixrecon worker` serves Prometheus metrics of all its processes (theirs and
    # Dramatiq's, plus gauges read from the database) here. Loopback by default: the
    # figures (amounts at risk, verdicts) are the merchant's business.
    worker_metrics_host: str = "127.0.0.1"
    worker_metrics_port: int = Field(default=9191, ge=0, le=65535)

    # Raw bodies and processed inbox items older than this many days are deleted by
    # `pixrecon prune` (and the workers' daily `prune` job), and personal data in the
    # rows that stay is masked. Days not yet reconciled and open exceptions keep theirs.
    retention_days: int = Field(default=90, gt=0)
    prune_interval_seconds: float = Field(default=86400.0, gt=0)

    # The provider's QR code API (it follows the BCB standard Pix API); client certificate
    # for its mutual TLS.
    qrcode_api_url: str | None = Field(
        default=None, validation_alias=_renamed("QRCODE_API_URL", "PIX_API_URL")
    )
    # Checked even when unset (validate_default): an API URL without its credentials is
    # refused, not silently taken as "not configured".
    qrcode_client_id: str | None = Field(
        default=None,
        validation_alias=_renamed("QRCODE_CLIENT_ID", "PIX_CLIENT_ID"),
        validate_default=True,
    )
    qrcode_client_secret: str | None = Field(
        default=None,
        validation_alias=_renamed("QRCODE_CLIENT_SECRET", "PIX_CLIENT_SECRET"),
        validate_default=True,
    )
    qrcode_client_cert: str | None = Field(
        default=None, validation_alias=_renamed("QRCODE_CLIENT_CERT", "PIX_CLIENT_CERT")
    )
    qrcode_client_key: str | None = Field(
        default=None, validation_alias=_renamed("QRCODE_CLIENT_KEY", "PIX_CLIENT_KEY")
    )
    qrcode_ca_bundle: str | None = Field(
        default=None, validation_alias=_renamed("QRCODE_CA_BUNDLE", "PIX_CA_BUNDLE")
    )
    # The provider's accounts (cash-out) API, with its own credentials and certificate.
    accounts_api_url: str | None = None
    accounts_client_id: str | None = Field(default=None, validate_default=True)
    accounts_client_secret: str | None = Field(default=None, validate_default=True)
    accounts_account_id: str | None = Field(default=None, validate_default=True)
    accounts_client_cert: str | None = None
    accounts_client_key: str | None = None
    accounts_ca_bundle: str | None = None

    # Confirm-by-API (docs/design.md §1.5): "api" looks every notified movement up before its
    # money counts; "none" trusts webhooks (only for providers that sign, say).
    confirm_policy: Literal["api", "none"] = "api"
    # A notified movement the API does not know yet stays pending this long, then it is
    # flagged unconfirmed_webhook (the provider's own lists can lag).
    # How long one call to the provider keeps retrying what may pass (429, 5xx, timeouts)
    # before it fails, on the clock from its first attempt (a provider that never answers
    # costs a whole timeout per attempt, which counting only the waits left out) —
    # exponential backoff with jitter up to provider_max_backoff, and a
    # Retry-After honoured up to provider_max_retry_after (longer: the call fails now and
    # is tried again at the job's next run). Minutes, so that a throttled nightly run rides
    # it out; a run that still fails exits 2 naming what it could not read.
    provider_retry_seconds: float = Field(default=300.0, ge=0)
    provider_max_backoff_seconds: float = Field(default=30.0, gt=0)
    provider_max_retry_after_seconds: float = Field(default=120.0, ge=0)
    confirm_grace_seconds: float = Field(default=900.0, gt=0)
    confirm_batch_size: int = Field(default=100, gt=0)
    # Polling is a primary source. Each window starts `overlap` before the previous one
    # ended, so a Pix booked late with an earlier time is still seen.
    poll_qrcode_interval_seconds: float = Field(
        default=60.0,
        gt=0,
        validation_alias=_renamed("POLL_QRCODE_INTERVAL_SECONDS", "POLL_PIX_INTERVAL_SECONDS"),
    )
    poll_accounts_interval_seconds: float = Field(default=300.0, gt=0)
    poll_overlap_seconds: float = Field(default=900.0, ge=0)
    poll_initial_lookback_seconds: float = Field(default=86400.0, gt=0)
    # The worker reconciles the current business day this often, with the same engine as
    # the nightly command, so dashboards are never more than this far behind.
    reconcile_interval_seconds: float = Field(default=300.0, gt=0)
    # A statement line may be booked a little after midnight for a Pix of the day before:
    # within this lag it is matched across the two days instead of being a break.
    reconcile_date_lag_seconds: float = Field(default=300.0, ge=0, le=86400)
    # Money the merchant must or may return (overpaid, paid twice, unknown Pix) can be
    # refunded for this many days after it settled; exceptions this close to that last
    # day come first.
    refund_deadline_days: int = Field(default=90, gt=0)
    refund_warning_days: int = Field(default=10, ge=0)
    scheduler_enabled: bool = True

    # The dashboard (GET /dashboard): people who may sign in, as NAME:HASH pairs (hashes
    # from `pixrecon dashboard hash-password`), and the key that signs their session
    # cookie. Without both the dashboard answers 404 with a page saying so.
    dashboard_users: CsvList = Field(default_factory=list)
    dashboard_secret: SecretStr | None = None
    dashboard_session_seconds: int = Field(default=8 * 3600, gt=0)
    # Send the session cookie over HTTPS only. Browsers accept it on http://localhost too;
    # switch it off only for a dashboard reached over plain HTTP on a trusted network.
    dashboard_cookie_secure: bool = True

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    # Unset: JSON lines unless stderr is a terminal, where a person reads them.
    log_json: bool | None = None

    @field_validator(
        "webhook_secrets",
        "allow_ips",
        "trusted_proxies",
        "qrcode_auth",
        "accounts_auth",
        "mtls_allowed_subjects",
        "hmac_secrets",
        mode="before",
    )
    @classmethod
    def _csv(cls, value: object) -> object:
        return _split_csv(value)

    @field_validator(
        *(
            name
            for name in (
                "commit_deadline_seconds",
                "shutdown_timeout_seconds",
                "hmac_tolerance_seconds",
                "sweep_interval_seconds",
                "redispatch_after_seconds",
                "health_max_lag_seconds",
                "health_max_job_age_seconds",
                "prune_interval_seconds",
                "provider_retry_seconds",
                "provider_max_backoff_seconds",
                "provider_max_retry_after_seconds",
                "confirm_grace_seconds",
                "poll_qrcode_interval_seconds",
                "poll_accounts_interval_seconds",
                "poll_overlap_seconds",
                "poll_initial_lookback_seconds",
                "reconcile_interval_seconds",
                "dashboard_session_seconds",
            )
        ),
        mode="after",
    )
    @classmethod
    def _at_most_a_year(cls, value: float) -> float:
        # Beyond this, a date computed from it leaves what a date can hold: the jobs would
        # crash at every run instead of the command refusing it when it starts.
        if value > MAX_SECONDS:
            raise ValueError(f"at most {MAX_SECONDS} seconds (a year)")
        return value

    @field_validator("retention_days", "refund_deadline_days", "refund_warning_days")
    @classmethod
    def _at_most_a_century(cls, value: int) -> int:
        if value > MAX_DAYS:
            raise ValueError(f"at most {MAX_DAYS} days")
        return value

    @field_validator("worker_metrics_host", mode="after")
    @classmethod
    def _host(cls, value: str) -> str:
        # Empty, as a template .env leaves it, means unset, as for every setting; taken
        # as given it would listen on every interface, and the figures the endpoint
        # serves are the merchant's business.
        return value.strip() or "127.0.0.1"

    @field_validator("accounts_account_id", mode="after")
    @classmethod
    def _header_value(cls, value: str | None) -> str | None:
        # Sent as an HTTP header, which carries ASCII only.
        if value is not None and not value.isascii():
            raise ValueError("not ASCII; it is sent as an HTTP header (x-account-id)")
        return value

    @field_validator("broker_url", mode="after")
    @classmethod
    def _broker_url(cls, value: str | None) -> str | None:
        if not value:
            return None  # an empty variable, as a template .env leaves it, means unset
        # Checked here, so that every command refuses it when it starts, not only the
        # ones that send messages.
        if urlsplit(value).scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                "not a Redis URL; expected redis://HOST:PORT/DB (or unset it for the "
                "in-process broker)"
            )
        return value

    @field_validator("webhook_secret_header", mode="after")
    @classmethod
    def _header_name(cls, value: str) -> str:
        # A name no client can send would answer every delivery 401, and the provider
        # disables a webhook that keeps failing.
        return _header_name(value, "X-Webhook-Secret")

    @field_validator("mtls_verified_header", "mtls_subject_header", mode="after")
    @classmethod
    def _proxy_header_name(cls, value: str | None) -> str | None:
        if not value:
            return None  # an empty variable, as a template .env leaves it, means unset
        # A name no proxy can send would refuse every delivery with 401, as above.
        return _header_name(value, "X-SSL-Client-Verify")

    @field_validator("dashboard_users", mode="before")
    @classmethod
    def _dashboard_users(cls, value: object) -> object:
        users = _split_csv(value)
        if isinstance(users, list):
            for entry in users:
                name, _, hashed = str(entry).partition(":")
                if not DASHBOARD_USER_NAME.fullmatch(name) or not hashed:
                    raise ValueError(
                        "each user is NAME:HASH (NAME of letters, digits and . _ @ -; HASH "
                        "from `pixrecon dashboard hash-password NAME`), separated by commas"
                    )
        return users

    @field_validator("dashboard_secret", mode="after")
    @classmethod
    def _dashboard_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value():
            return None  # an empty variable, as a template .env leaves it, means unset
        if value is not None and len(value.get_secret_value()) < DASHBOARD_SECRET_MIN_LENGTH:
            raise ValueError(
                f"use at least {DASHBOARD_SECRET_MIN_LENGTH} random characters, e.g. "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return value

    @field_validator("qrcode_api_url", "accounts_api_url", mode="after")
    @classmethod
    def _api_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None  # an empty variable, as a template .env leaves it, means unset
        try:
            parts = urlsplit(value.strip())
            readable = parts.scheme in ("http", "https") and bool(parts.hostname)
            readable = readable and (parts.port is None or parts.port > 0)
        except ValueError:  # a port out of range, an unclosed [IPv6]
            readable = False
        # Anything else would only fail at the first call, after minutes of retrying.
        if not readable:
            raise PydanticCustomError(
                "api_url",
                "not an http(s) URL; expected the API's base URL, https://HOST[:PORT][/PATH]",
            )
        return value.strip()

    @field_validator(*_API_OF, mode="after")
    @classmethod
    def _api_credential(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not value.strip():
            value = None  # an empty variable means unset
        url_field, api = _API_OF[str(info.field_name)]
        # A URL that could not be read is reported on its own, not again here.
        if value is None and info.data.get(url_field) is not None:
            raise PydanticCustomError(
                "setting_missing",
                "not set, but PIXRECON_{url} is: {api} needs its URL and all of its "
                "credentials (unset the URL to run without it)",
                {
                    # Either name may have been set: the former one is still read.
                    "url": url_field.upper()
                    + (" (or PIXRECON_PIX_API_URL, its former name)" if api == _QRCODE[1] else ""),
                    "api": api,
                },
            )
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_name(cls, value: object) -> object:
        # Any case is accepted; an unknown name is reported as it was written.
        upper = value.upper() if isinstance(value, str) else value
        return upper if upper in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else value

    @property
    def qrcode_configured(self) -> bool:
        return bool(self.qrcode_api_url and self.qrcode_client_id and self.qrcode_client_secret)

    @property
    def accounts_configured(self) -> bool:
        return bool(
            self.accounts_api_url
            and self.accounts_client_id
            and self.accounts_client_secret
            and self.accounts_account_id
        )

    @property
    def confirmation(self) -> str:
        """How notified money comes to count, in words (``/healthz``, start-up warnings)."""
        if self.confirm_policy == "none":
            return "off by policy (PIXRECON_CONFIRM_POLICY=none): webhooks are trusted"
        if not (self.qrcode_configured or self.accounts_configured):
            return (
                "impossible: no provider API is configured, so notified money never counts "
                "and every day is incomplete (configure the provider, or set "
                "PIXRECON_CONFIRM_POLICY=none to trust webhooks)"
            )
        if not self.qrcode_configured:
            return "partial: the QR code API is not configured, Pix received cannot be confirmed"
        if not self.accounts_configured:
            return "partial: the accounts API is not configured, payouts cannot be confirmed"
        return "by API look-up"

    @property
    def confirmation_ok(self) -> bool:
        both = self.qrcode_configured and self.accounts_configured
        return self.confirm_policy == "none" or both

    @property
    def dashboard_configured(self) -> bool:
        return bool(self.dashboard_users and self.dashboard_secret)

    @property
    def uses_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


# ``PIXRECON_*`` variables that are no setting of pixrecon's but are read by its own tests
# and benchmarks (tests/conftest.py, tests/bcb_spec.py, benchmarks/): they are set beside
# the settings in CI and on developers' machines, where a warning for each, at every
# command, would teach people to ignore the warning.
NOT_SETTINGS = frozenset(
    {
        "PIXRECON_TEST_POSTGRES_URL",
        "PIXRECON_TEST_REDIS_URL",
        "PIXRECON_BCB_SPEC",
        "PIXRECON_BENCH_DATABASE_URL",
        "PIXRECON_BENCH_BROKER_URL",
    }
)


def setting_variables() -> frozenset[str]:
    """Every environment variable ``Settings`` reads, former names included."""
    names: set[str] = set()
    prefix = str(Settings.model_config.get("env_prefix", ""))
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
        else:
            names.add(f"{prefix}{name}".upper())
    return frozenset(name.upper() for name in names)


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """Each ``PIXRECON_*`` variable of ``environ`` that no setting reads, with the setting
    its name is closest to (``None`` when none is close). A misspelt setting is otherwise
    silently ignored, and its default used: ``PIXRECON_DATABSE_URL`` would run on a
    SQLite file of the working directory."""
    known = setting_variables()
    unknown = []
    for name in sorted(environ):
        # Settings' names are read in any case; so are these.
        upper = name.upper()
        if not upper.startswith("PIXRECON_") or upper in known or upper in NOT_SETTINGS:
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.8)
        unknown.append((name, close[0] if close else None))
    return unknown
