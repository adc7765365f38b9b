"""How money, counts and sizes read everywhere a user sees them: the tray, the window, the terminal, the status
line.

No imports: the status line, which counts its start-up in milliseconds, reads money through it too.
"""

DASH = "–"  # a figure the service did not send


def usd(v) -> str:
    """$1,234 / $12.34 / $0.42 / $0.004: enough digits to tell small sums apart (the tray, the window and
    the terminal alike)."""
    if v is None:
        return DASH
    v = float(v)
    if v == 0:
        return "$0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    if a >= 100:
        return f"{sign}${a:,.0f}"
    if a >= 0.995:
        return f"{sign}${a:,.2f}"
    if a >= 0.01:
        return f"{sign}${a:.2f}"
    if a >= 0.0005:
        return f"{sign}${a:.3f}"
    return f"{sign}${a:.4f}" if a >= 0.00005 else f"{sign}<$0.0001"


def count(n) -> str:
    """A whole number with thousands separators."""
    if n is None:
        return DASH
    return f"{int(round(float(n))):,}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 session', '3 sessions' (the count with separators)."""
    return f"{count(n)} {word if int(n) == 1 else (many or word + 's')}"


def size(n) -> str:
    """Bytes in decimal units: 512 B, 12.3 kB, 4.5 MB, 1.2 GB."""
    if n is None:
        return DASH
    n = float(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"
