"""What approvals announces, for the apps above it to act on.

``verdict_recorded`` is sent once the author's verdict is recorded (``book``, ``user``, ``approval``, ``entry``), after
its transaction's writes: the agents take their next step from it when the book lets them act on their own.
"""

from django.dispatch import Signal

verdict_recorded = Signal()
