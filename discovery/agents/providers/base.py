"""What every provider returns, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ProviderError(Exception):
    """The provider gave no usable answer: unreachable, an error status, a reply that is not JSON or
    too large. The run fails with this message and writes nothing (the tokens spent still count)."""

    def __init__(self, message: str, *, tokens: int = 0):
        super().__init__(message)
        self.tokens = tokens


@dataclass
class Reply:
    data: Any  # the plan as JSON, validated by the runner
    tokens: int = 0  # tokens the model reported (0 for the offline rules)
