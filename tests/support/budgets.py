"""How many examples a property test tries: the number it names, or a fifth of it under the
`fast` hypothesis profile, which `make fast` loads (tests/conftest.py registers it)."""

from hypothesis import settings

FAST = "fast"
FAST_SHARE = 5


def examples(full: int) -> int:
    """`full`, or a fifth of it under the `fast` profile."""
    return full // FAST_SHARE if settings.get_current_profile_name() == FAST else full
