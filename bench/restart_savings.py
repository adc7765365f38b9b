"""Cost per call of the restart counterfactual (docs/measurement.md section 14) against a segment's length.

The live service adds every call to its segment's envelope and takes a snapshot
(one query, the latest call counted as it stands) after each batch. This feeds
seeded segments of growing length call by call, as the engine does, and prints
the median microseconds per call of the last 1,000 calls of each: flat when the
cost does not grow with the segment. Beside it, the schedules of the same calls
(service/engine/schedule.py: the best schedule's programme of restarts and /compacts,
that of restarts alone and the followed notices), fed and read the same way.

    python bench/restart_savings.py --lengths 1000 10000 100000
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.engine.advice import AdviceBasis, MovePrices  # noqa: E402
from service.engine.restart_savings import RestartLedger  # noqa: E402
from service.engine.schedule import ScheduleCall, ScheduleLedger  # noqa: E402

PRICES = ((0.3e-6, 3.75e-6), (0.6e-6, 7.5e-6), (0.5e-6, 6.25e-6), (0.1e-6, 1.25e-6))


def per_call_us(length: int, seed: int, tail: int = 1000) -> float:
    """Median microseconds of add + snapshot query over the last `tail` calls of a segment of `length`."""
    rnd = random.Random(seed)
    ledger = RestartLedger()
    stock, useful = 20_000, 20_000.0
    times = []
    for call in range(1, length + 1):
        stock += rnd.randint(-2_000, 6_000)  # edits shrink it, reads grow it: slopes in any order
        stock = max(stock, 1_000)
        useful = min(float(stock), useful + rnd.choice((0, 0, 0, 800, 3_000)))
        p_r, p_w5 = PRICES[rnd.randrange(len(PRICES))]
        carry = p_w5 if rnd.random() < 0.04 else p_r  # a call in 25 missed the cache
        start = time.perf_counter_ns()
        ledger.add_call(call, p_r, p_w5, stock, useful, carry)
        ledger.figures((call + 1, p_r, p_w5, stock + 500, useful, p_r))  # the snapshot, the next call pending
        if call > length - tail:
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def schedule_per_call_us(length: int, seed: int, tail: int = 1000) -> float:
    """Median microseconds of a schedule ledger's add + snapshot over the last `tail` calls of a segment."""
    rnd = random.Random(seed)
    ledger, basis = ScheduleLedger(), AdviceBasis()
    stock, useful, t = 20_000, 20_000.0, 0.0
    times = []
    for call in range(1, length + 1):
        stock = max(stock + rnd.randint(-2_000, 6_000), 1_000)
        useful = min(float(stock), useful + rnd.choice((0, 0, 0, 800, 3_000)))
        p_r, p_w5 = PRICES[rnd.randrange(len(PRICES))]
        t += rnd.choice((5.0, 20.0, 60.0, 900.0))
        rates = MovePrices(p_r=p_r, p_w=p_w5, p_w5=p_w5, p_out=50 * p_r)
        carry = p_w5 if rnd.random() < 0.04 else p_r
        row = ScheduleCall(call, t, carry, rates, stock, useful, 20_000.0, 500.0, carry * stock, p_r, p_w5)
        start = time.perf_counter_ns()
        ledger.add_call(row, basis)
        ledger.figures(row._replace(call=call + 1, stock=stock + 500), basis)  # the snapshot, the next call
        if call > length - tail:
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args(argv)
    print(f"{'calls in segment':>16}  {'us per call (median of the last 1,000)':>40}  {'schedules':>10}")
    for n in args.lengths:
        print(f"{n:>16,}  {per_call_us(n, args.seed):>40.1f}  {schedule_per_call_us(n, args.seed):>10.1f}")


if __name__ == "__main__":
    main()
