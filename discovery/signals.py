"""What discovery announces, for the apps above it to act on (the loop listens from ``LoopConfig.ready()``).

Each is sent inside the transaction that makes the change, so whatever a receiver writes commits or rolls back
with it, and a receiver's refusal (a domain error) refuses the whole change.
"""

from django.dispatch import Signal

# A book's discovery started: a new session was opened (``book``). The loop ensures itself, and refuses a book
# whose discovery was handed off at G3.
discovery_started = Signal()
# A new Story Charter version was proposed (``charter``, ``proposed_by``: the role, ``user``).
charter_proposed = Signal()
# The author decided a charter version (``charter``, ``approved``, ``detail``: the log entry's detail, which a
# receiver may add to).
charter_decided = Signal()
# The author (or an editor) acted on the book's discovery: a turn, a confirmation (``book``, ``user``, ``act``). The
# agents take their next step from it (``discovery.agents``), when the book lets them act on their own.
person_acted = Signal()
# The author is changing her book's premise (``book``, before the change): each receiver answers the impact on
# what it keeps (a dict; the loop: whether G0 reopens, and what the premise feeds). Reads only.
premise_impact = Signal()
# The author changed her book's premise (``book``, ``previous``, ``user``): the loop reopens G0.
premise_changed = Signal()
