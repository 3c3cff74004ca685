"""What every provider returns, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ProviderError(Exception):
    """The provider gave no usable answer: unreachable, an error status, a reply that is not JSON or
    too large. The run fails with this message and writes nothing (the tokens spent still count)."""

    def __init__(self, message: str, *, tokens: int = 0):
        super().__init__(message)
        self.tokens = tokens


# The most tokens one reply may report: well above any model's context window, well below what the
# run's columns hold. A report outside 0..MAX_REPORTED_TOKENS, or not a whole number, is not believed.
MAX_REPORTED_TOKENS = 10_000_000


def reported_tokens(value: Any) -> int:
    """The token usage a model server reported, as a whole number in 0..MAX_REPORTED_TOKENS (no report is 0).

    Anything else (negative, absurd, a fraction, a string, a boolean) refuses the reply with
    :class:`ProviderError`: the run fails with that note and is charged its fixed cost, never less."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS:
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    raise ProviderError(f"the model server reported an impossible token usage ({shown}); the reply was refused")


@dataclass
class Reply:
    data: Any  # the plan as JSON, validated by the runner
    tokens: int = 0  # tokens the model reported (0 for the offline rules)
    notes: list[str] = field(default_factory=list)  # what the provider did to read it (a repaired reply), for the run

    def __post_init__(self) -> None:
        # Whatever the provider, a reply carries a believable usage or is refused.
        self.tokens = reported_tokens(self.tokens)
