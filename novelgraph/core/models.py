"""Cross-cutting records below the apps: API keys (who a caller is) and failed logins."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q

from .db import TimeStampedModel
from .roles import KEY_ROLES


def hash_api_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


class ApiKey(TimeStampedModel):
    """A bearer key. Only its SHA-256 is stored; the key itself is shown once.

    The role on the key is the role the caller acts in: an agent role (sol, terra,
    luna), or "author" for a personal key that acts as its owner. ``books`` limits the
    key to those books, for every role; no books named means all of the owner's books.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    role = models.CharField(max_length=10, choices=KEY_ROLES)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a key in lists.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    books = models.ManyToManyField(
        "discovery.Book", blank=True, related_name="api_keys", db_table="discovery_apikey_books"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "discovery_apikey"  # created by the discovery app before keys moved below the apps
        verbose_name = "API key"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=[value for value, _ in KEY_ROLES]), name="apikey_role_valid")
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.role}, {self.owner})"


class LoginFailure(models.Model):
    """One failed login. Rows older than the throttle window are pruned on the next failure."""

    username = models.CharField(max_length=150)
    ip = models.CharField(max_length=45)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["username", "ip", "at"])]

    def __str__(self) -> str:
        return f"{self.username}@{self.ip} {self.at:%Y-%m-%d %H:%M:%S}"
