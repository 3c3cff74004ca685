"""The loop's roster (LOOP.md, seed 002): who takes part, as data rather than code paths.

Seeded by the loop's data migration and restored after every migrate and flush; both import
it from here. Existing rows are left as staff edited them unless a migration overwrites.
"""

from __future__ import annotations

from discovery.access import capabilities_of
from novelgraph.core.db import tables_exist

from .models import RosterEntry

ROSTER = [
    # slug, name, kind, agent_role, required, required_at_gate, rerun_cost, description
    ("discovery-lead", "Sol — discovery lead", "controller", "sol", True, "", 1.0,
     "Controller: writes the loop's state, raises option cards; never the approver."),
    ("explore-options", "Terra — explore options", "divergence", "terra", True, "", 2.0,
     "Divergence: candidates that differ in altitude and mechanic; not-chosen kept with rationale."),
    ("plan-validation", "Plan validation", "validation", "luna", True, "", 1.0,
     "Validation: assumption, kill condition, real-world activity, validation status."),
    # The canon-integrity lens reads approved series canon, so its role must hold series:read (Terra; never
    # Luna). The required G2 lenses are filed by distinct roles (tests/test_loop_integrity.py checks both).
    ("canon-integrity", "Canon-integrity lens", "lens", "terra", True, "G2", 1.0,
     "Contradictions with approved series canon, scratchpad leaking into canon, source licences, "
     "decisive evidence without admitted research."),
    ("reader-trust", "Reader-trust lens", "lens", "luna", True, "G2", 1.0,
     "Promises with payoffs, fair-play visibility, genre obligations, arcs that end."),
    ("research", "Research lens (the literary library)", "lens", "luna", False, "", 1.0,
     "Optional: detect and degrade when the literary library is absent."),
    ("ux", "UX / reading-experience lens", "lens", "terra", False, "", 1.0, "Optional: detect and degrade."),
    ("architecture", "Architecture lens", "lens", "terra", False, "", 1.0, "Optional: detect and degrade."),
]  # fmt: skip


# What the discovery does without each optional lens (its degrade label, shown on the loop page's roster).
DEGRADE = {
    "research": "Absent: no literary library is loaded, so the reviews cite no craft passages",
    "ux": "Absent: no reading-experience review; the discovery goes on without it",
    "architecture": "Absent: no architecture review; the discovery goes on without it",
}


# What a lens must be able to read to do its review: the role the roster names must hold these capabilities.
LENS_NEEDS = {"canon-integrity": ("series:read", "discovery:read")}


def lens_role_problem(slug: str, agent_role: str) -> str | None:
    """Why ``agent_role`` cannot file lens ``slug``'s review (it cannot read what the lens checks), or None."""
    missing = [cap for cap in LENS_NEEDS.get(slug, ()) if cap not in capabilities_of(agent_role)]
    if not agent_role:
        return f"the roster names no role for the lens {slug}"
    if missing:
        return f"the lens {slug} needs {', '.join(missing)}, which {agent_role} lacks"
    return None


def seed_roster(RosterEntry, *, overwrite: bool) -> None:
    upsert = RosterEntry.objects.update_or_create if overwrite else RosterEntry.objects.get_or_create
    for slug, name, kind, agent, required, gate, cost, description in ROSTER:
        upsert(
            slug=slug,
            defaults={
                "name": name,
                "kind": kind,
                "agent_role": agent,
                "required": required,
                "required_at_gate": gate,
                "rerun_cost": cost,
                "description": description,
            },
        )


def seed_roster_after_migrate(sender, using: str = "default", **kwargs) -> None:
    """``post_migrate``: the roster rows exist (after a flush in tests, too); staff's edits are kept."""
    if not tables_exist(using, "loop_rosterentry"):
        return
    seed_roster(RosterEntry, overwrite=False)
