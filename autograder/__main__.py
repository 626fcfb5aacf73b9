"""Entry point for ``python -m autograder``."""

import sys

# Guarded: ``--jobs N`` starts worker processes that import this module again.
if __name__ == "__main__":
    from autograder import quick_exit

    # First, so that every atexit handler registered by what the command imports runs.
    quick_exit.skip_teardown()
    from autograder.cli import main

    try:
        status = main()
    except SystemExit as stop:  # argparse's --help and errors
        quick_exit.exit_status(stop.code)
        raise
    except KeyboardInterrupt:  # Ctrl-C: the status a shell gives a command it interrupted
        quick_exit.exit_status(130)
        raise
    sys.exit(quick_exit.exit_status(status))
