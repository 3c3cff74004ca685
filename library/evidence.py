"""Research is admitted, not assumed (seed 001, invariant 5).

Evidence that cites research is valid only when every cited research id is an
item admitted for the same book; decisive digital or forensic evidence must cite
admitted research. Claim promotion and charter approval call
:func:`evidence_findings` and refuse (409) while it returns anything.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from .models import ResearchItem

RESEARCH_REQUIRED_KINDS = {"digital": "DIGITAL-RESEARCH-001", "forensic": "FORENSIC-RESEARCH-001"}
GENERIC_CODE = "RESEARCH-ADMISSION-001"


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    research_id: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "research_id": self.research_id}


def normalise_id(value: Any) -> str:
    """A research id in one canonical form: hyphenated lower-case UUID text when it is a UUID.

    "7A0C...E1" (hex) and "7a0c...-...e1" (hyphenated) compare equal; anything else is kept as text.
    """
    if isinstance(value, uuid.UUID):
        return str(value)
    text = str(value).strip()
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return text


def _research_ids_in_refs(source_refs: list[dict] | None) -> list[str]:
    if not isinstance(source_refs, list):
        return []
    return [
        normalise_id(ref.get("id"))
        for ref in source_refs
        if isinstance(ref, dict) and ref.get("type") == "research" and ref.get("id") is not None
    ]


def _evidence_ids(evidence: dict) -> list[str]:
    raw = evidence.get("research_ids") or []
    if isinstance(raw, str | uuid.UUID):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    return [normalise_id(rid) for rid in raw if rid is not None and str(rid).strip()]


def evidence_findings(
    *, book_id: Any, evidence: dict | None = None, source_refs: list[dict] | None = None
) -> list[Finding]:
    """Every reason the evidence and research citations of a proposal are not yet admissible."""
    findings: list[Finding] = []
    evidence = evidence if isinstance(evidence, dict) else {}
    kind = evidence.get("kind") if isinstance(evidence.get("kind"), str) else None
    evidence_ids = _evidence_ids(evidence)
    code = RESEARCH_REQUIRED_KINDS.get(kind, GENERIC_CODE)
    if kind in RESEARCH_REQUIRED_KINDS and evidence.get("decisive") and not evidence_ids:
        findings.append(Finding(code, f"decisive {kind} evidence needs admitted research; none is cited"))
    cited = list(dict.fromkeys(evidence_ids + _research_ids_in_refs(source_refs)))
    if not cited:
        return findings
    admitted = {
        str(pk)
        for pk in ResearchItem.objects.filter(
            book_id=book_id, status=ResearchItem.Status.ADMITTED, pk__in=[uuid.UUID(c) for c in cited if _is_uuid(c)]
        ).values_list("pk", flat=True)
    }
    for research_id in cited:
        if research_id not in admitted:
            finding_code = code if research_id in evidence_ids else GENERIC_CODE
            findings.append(Finding(finding_code, f"research {research_id} is not admitted for this book", research_id))
    return findings


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
