"""Cross-cutting records: failed logins (for throttling across every server worker)."""

from __future__ import annotations

from django.db import models


class LoginFailure(models.Model):
    """One failed login. Rows older than the throttle window are pruned on the next failure."""

    username = models.CharField(max_length=150)
    ip = models.CharField(max_length=45)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["username", "ip", "at"])]

    def __str__(self) -> str:
        return f"{self.username}@{self.ip} {self.at:%Y-%m-%d %H:%M:%S}"
