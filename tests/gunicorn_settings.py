"""Settings for a gunicorn started by the tests: the project's, with the fast, counting password hasher."""

from novelgraph.settings import *  # noqa: F403

PASSWORD_HASHERS = ["tests.counting_hasher.CountingMD5PasswordHasher"]
