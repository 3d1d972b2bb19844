"""The check of a multi-worker answer (exercise 08): a rehearsal in this process, then two workers.

Starting two worker processes costs two TensorFlow imports; most wrong answers already show
on two replicas of a ``MirroredStrategy`` in this process, so the check rehearses there first
and starts the workers only for an answer that passes the rehearsal.
"""

from __future__ import annotations
