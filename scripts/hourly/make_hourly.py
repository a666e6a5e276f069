#!/usr/bin/env python3
"""Makes an hourly benchmark set in the shape of the public hourly
competition forecastd is tuned for (series of 700 or 960 training points,
48 held out), from the shared data: every stream of ../shared/data sampled at an hour or
finer with at least 748 hours, aggregated to hourly means on epoch-aligned hours, cut into
consecutive segments of 1008 points (960 + 48) or, for the rest, 748
(700 + 48); and seeded synthetic series of the kinds that set is made of
(daily and weekly load profiles, trends, level shifts, noise). No numpy:
the standard library's random with fixed seeds, so the files are the same
on every machine.

    /usr/bin/python3 scripts/hourly/make_hourly.py ../shared/data OUTDIR

Each file is CSV `t,value`, t in Unix seconds. Evaluate with
`forecastd backtest --holdout 48 --horizon 48 --coverage 0.95 OUTDIR`.
"""
import csv, math, os, random, sys
from datetime import datetime, timezone

HOUR = 3600

def read(path):
    rows = []
    with open(path) as f:
        r = csv.reader(f)
        head = next(r)
        ti = head.index('timestamp') if 'timestamp' in head else head.index('t')
        vi = head.index('value')
        for rec in r:
            ts = rec[ti]
            try:
                t = float(ts)
            except ValueError:
                t = datetime.strptime(ts, '%Y-%m-%d %H:%M:%S').replace(tzinfo=timezone.utc).timestamp()
            rows.append((t, float(rec[vi])))
    return rows

def hourly(rows):
    """Hourly means on epoch-aligned hours; a missing hour is filled with
    the previous hour's mean (the competition's series have no gaps)."""
    acc = {}
    for t, v in rows:
        b = int(t // HOUR)
        s, n = acc.get(b, (0.0, 0))
        acc[b] = (s + v, n + 1)
    if not acc:
        return []
    lo, hi = min(acc), max(acc)
    out, last = [], None
    for b in range(lo, hi + 1):
        if b in acc:
            s, n = acc[b]
            last = s / n
        out.append((b * HOUR, last))
    return out

def segments(series):
    out, i, n = [], 0, len(series)
    while n - i >= 748:
        size = 1008 if n - i >= 1008 else 748
        out.append(series[i:i + size])
        i += size
    return out

def synthetic(k):
    rnd = random.Random(20261126 + k)
    n = rnd.choice([748, 1008])
    base = rnd.uniform(50, 5000)
    amp = base * rnd.uniform(0.05, 0.6)
    harm = [(rnd.uniform(0.2, 1.0) / (j + 1), rnd.uniform(0, 2 * math.pi)) for j in range(rnd.randint(1, 4))]
    weekend = rnd.choice([1.0, 1.0, rnd.uniform(0.3, 0.9)])
    trend = base * rnd.choice([0.0, 0.0, rnd.uniform(-0.0004, 0.0008)])
    noise = rnd.uniform(0.005, 0.12)
    ar = rnd.uniform(0.0, 0.9)
    shift_at = rnd.randint(200, n - 100) if rnd.random() < 0.2 else -1
    shift = base * rnd.uniform(-0.2, 0.2)
    mult = rnd.random() < 0.5
    t0 = 1420070400 + rnd.randint(0, 200) * 86400  # a midnight, UTC
    e, out = 0.0, []
    for i in range(n):
        h, day = i % 24, (i // 24) % 7
        prof = sum(a * math.cos(2 * math.pi * (j + 1) * h / 24 + p) for j, (a, p) in enumerate(harm))
        w = weekend if day >= 5 else 1.0
        lvl = base + trend * i + (shift if 0 <= shift_at <= i else 0.0)
        e = ar * e + rnd.gauss(0, 1) * math.sqrt(1 - ar * ar)
        if mult:
            v = lvl * (1 + amp / base * prof * w) * (1 + noise * e)
        else:
            v = lvl + amp * prof * w + noise * base * e
        out.append((t0 + i * HOUR, round(max(v, 0.0), 2)))
    return out

def write(path, series):
    with open(path, 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['t', 'value'])
        for t, v in series:
            w.writerow([int(t), repr(v) if isinstance(v, float) else v])

def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    files = []
    for root, _, names in os.walk(src):
        for nm in sorted(names):
            if nm.endswith('.csv'):
                files.append(os.path.join(root, nm))
    for path in sorted(files):
        try:
            rows = read(path)
        except (ValueError, KeyError, StopIteration):
            continue
        gaps = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:]))
        if not gaps or gaps[len(gaps) // 2] > HOUR:
            continue  # coarser than hourly: not hourly data
        stem = os.path.splitext(os.path.basename(path))[0]
        for j, seg in enumerate(segments(hourly(rows))):
            write(os.path.join(dst, 'real_%s_%d.csv' % (stem, j)), seg)
    for k in range(40):
        write(os.path.join(dst, 'syn_%02d.csv' % k), synthetic(k))

if __name__ == '__main__':
    main()
