"""A password hasher that records every password it checks, for the concurrent-login tests.

It is Django's MD5 hasher (the suite's fast hasher) plus one line appended to the file named by
``NOVELGRAPH_PASSWORD_CHECK_LOG`` per ``verify`` call — from any thread or server process
(``O_APPEND`` writes of one short line do not interleave). Used through ``tests.gunicorn_settings``
in server processes and through ``settings.PASSWORD_HASHERS`` in-process.
"""

from __future__ import annotations

import os

from django.contrib.auth.hashers import MD5PasswordHasher

LOG_VARIABLE = "NOVELGRAPH_PASSWORD_CHECK_LOG"


class CountingMD5PasswordHasher(MD5PasswordHasher):
    def verify(self, password, encoded):
        path = os.environ.get(LOG_VARIABLE)
        if path:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            finally:
                os.close(fd)
        return super().verify(password, encoded)


def checks_in(path) -> int:
    try:
        with open(path, "rb") as log:
            return sum(1 for _ in log)
    except FileNotFoundError:
        return 0
