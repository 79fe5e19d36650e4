"""How wide a label is set: Helvetica's advance widths, which Graphviz lays labels out with.

Arial and Liberation Sans share them; a reader's other sans-serif may be wider (DejaVu Sans by
about 12 %), which is why the drawings keep room to spare.
"""

from __future__ import annotations

__all__ = ["helvetica_width"]

# Thousandths of the font size, for the printable ASCII characters from the space on;
# anything else is taken as wide as `_WIDE`.
_WIDTHS = (
    "278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 556 556 556 556 556 556 "
    "556 556 556 556 278 278 584 584 584 556 1015 667 667 722 722 667 611 778 722 278 500 667 "
    "556 833 722 778 667 778 722 667 611 722 667 944 667 667 611 278 278 278 469 556 333 556 "
    "556 500 556 556 278 556 556 222 222 500 222 833 556 556 556 556 333 500 278 556 500 722 "
    "500 500 500 334 260 334 584"
)
_ADVANCE = {chr(32 + index): int(width) for index, width in enumerate(_WIDTHS.split())}
_WIDE = 1000


def helvetica_width(text: str, size: float) -> float:
    """Points `text` takes set in Helvetica at `size` points."""
    return sum(_ADVANCE.get(char, _WIDE) for char in text) * size / 1000
