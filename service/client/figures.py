"""How money, counts, sizes, tokens and shares read everywhere a user sees them: the tray, the window, the
terminal, the status line.

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


def tokens(n) -> str:
    """850 / 12.3k / 1.24M (the word "tokens" is the caller's: labels say it once)."""
    if n is None:
        return DASH
    n = float(n)
    a = abs(n)
    if a >= 1e6:
        return f"{n / 1e6:.2f}M"
    if a >= 1e4:
        return f"{n / 1e3:.0f}k"
    if a >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def percent(share, digits: int | None = None) -> str:
    """0.37 -> "37 %", 0.004 -> "0.4 %" (a small share keeps one decimal)."""
    if share is None:
        return DASH
    pct = float(share) * 100
    if digits is None:
        digits = 1 if 0 < abs(pct) < 10 else 0
    return f"{pct:.{digits}f} %"
