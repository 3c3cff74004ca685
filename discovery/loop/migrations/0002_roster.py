"""Seed the loop's roster (LOOP.md, seed 002): the roster is data, not code paths."""

from django.db import migrations

ROSTER = [
    # slug, name, kind, agent_role, required, required_at_gate, rerun_cost, description
    ("discovery-lead", "Sol — discovery lead", "controller", "sol", True, "", 1.0,
     "Controller: writes the loop's state, raises option cards; never the approver."),
    ("explore-options", "Terra — explore options", "divergence", "terra", True, "", 2.0,
     "Divergence: candidates that differ in altitude and mechanic; not-chosen kept with rationale."),
    ("plan-validation", "Plan validation", "validation", "luna", True, "", 1.0,
     "Validation: assumption, kill condition, real-world activity, validation status."),
    ("canon-integrity", "Canon-integrity lens", "lens", "luna", True, "G2", 1.0,
     "Contradictions with approved series canon, scratchpad leaking into canon, source licences, "
     "decisive evidence without admitted research."),
    ("reader-trust", "Reader-trust lens", "lens", "terra", True, "G2", 1.0,
     "Promises with payoffs, fair-play visibility, genre obligations, arcs that end."),
    ("research", "Research lens (the literary library)", "lens", "luna", False, "", 1.0,
     "Optional: detect and degrade when the literary library is absent."),
    ("ux", "UX / reading-experience lens", "lens", "terra", False, "", 1.0, "Optional: detect and degrade."),
    ("architecture", "Architecture lens", "lens", "terra", False, "", 1.0, "Optional: detect and degrade."),
]


def seed(apps, schema_editor, *, overwrite=True):
    RosterEntry = apps.get_model("loop", "RosterEntry")
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


def unseed(apps, schema_editor):
    apps.get_model("loop", "RosterEntry").objects.filter(slug__in=[r[0] for r in ROSTER]).delete()


class Migration(migrations.Migration):
    dependencies = [("loop", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
