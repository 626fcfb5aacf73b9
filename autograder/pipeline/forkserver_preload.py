"""Imported first by the grading processes' forkserver (its preload list), and by nothing else.

The forkserver imports nbgrader, torch and matplotlib once for every grading process it
forks. It ends when the command does, and tearing those modules down took it 0.7 s, during
which it still held the command's output open: it now ends without the teardown
(:mod:`autograder.quick_exit`). The processes it forks end with ``os._exit`` anyway
(multiprocessing's), so this changes nothing for them.
"""

from autograder import quick_exit

quick_exit.skip_teardown(0)
