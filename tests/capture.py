"""Running a recipe's ``main`` inside a module or session fixture, which has no capsys."""

import io
from contextlib import redirect_stderr, redirect_stdout


def call_captured(main, argv: list) -> tuple:
    """``main(argv)``'s return code, the lines it printed to stdout, and what it wrote to stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue().strip().splitlines(), err.getvalue()
