"""The one error type users see for bad input: it names the file, line or id and what to do."""


class DataError(ValueError):
    """Input that cannot be used as given (a malformed file, an unknown id, a missing file)."""

    def __init__(self, message: str, *, path=None, line=None, hint: str = ""):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        text = where + message
        if hint:
            text += f" ({hint})"
        super().__init__(text)
        self.path = path
        self.line = line


def one_of(value, choices, what: str, hint: str = ""):
    """``value`` when it is one of ``choices``; else ``unknown <what> <value>`` naming the choices."""
    if value not in choices:
        raise DataError(
            f"unknown {what} {value!r}", hint=hint or f"{what} is one of {', '.join(choices)}"
        )
    return value
