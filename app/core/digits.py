"""Non-negative integers written in ASCII digits, the one way the hook reads a number from text."""


def ascii_int(text: str) -> int | None:
    """The number `text` writes in ASCII digits alone, else None. `str.isdigit` alone is true of
    "²", "①" or "٣", which `int` refuses or reads as a number nobody wrote."""
    if text.isascii() and text.isdigit():
        return int(text)
    return None
