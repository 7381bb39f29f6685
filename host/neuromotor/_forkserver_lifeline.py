"""Preloaded by the multiprocessing forkserver of a sweep (neuromotor.training.sweep.run_local) and of
a population's shards (neuromotor.training.parallel).

The forkserver otherwise lives as long as any process it forked, and those are its own
children, so a killed sweep or train would leave both running. Importing this module has the
forkserver end with the process that started it; its workers end with it in turn.
"""

from neuromotor.lifeline import die_with_parent

die_with_parent()
