"""Running a recipe's ``main`` inside a module or session fixture, which has no capsys."""

import io
import sys
from contextlib import redirect_stderr, redirect_stdout


def call_captured(main, argv: list) -> tuple:
    """``main(argv)``'s return code, the lines it printed to stdout, and what it wrote to stderr.
    A run that raises leaves what it printed on the real stderr (pytest shows it beside the
    traceback)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
    except BaseException:
        sys.stderr.write(f"stdout:\n{out.getvalue()}\nstderr:\n{err.getvalue()}\n")
        raise
    return code, out.getvalue().strip().splitlines(), err.getvalue()
