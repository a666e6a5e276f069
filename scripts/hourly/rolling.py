#!/usr/bin/env python3
"""Cuts rolling forecast origins out of whole hourly series, for
../shared/tools/eval_hourly.py: many 48-hour windows per series instead of
one, each with the 700 or 960 hours before it to learn from (as the public
hourly competition's series), alternately.

    /usr/bin/python3 scripts/hourly/rolling.py FULL OUTDIR [--per N] [--part all|tune|check] [--by group|series]
    /usr/bin/python3 ../shared/tools/eval_hourly.py ./forecastd OUTDIR

FULL holds one folder per group of `*.csv` or `*.csv.gz` files (`t,value`, t in
Unix seconds, one point an hour), as ../shared/data/hourly/full does. Each
series gets N windows (default 12) with origins spread evenly over the part
of the series --part names: `tune` the first 60 % of its time, `check` the
last 40 %, `all` the whole (the default). A series too short for a window
of 748 hours in its part gets none. OUTDIR/GROUP/NAME-K.csv (--by group, the
default) or OUTDIR/NAME/NAME-K.csv (--by series: one table row per series)
are written, each 748 or 1008 points ending with the 48 to forecast. The
standard library only, so that the files are the same on every machine.
"""
import csv, gzip, os, sys

H = 48


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return [(r["t"], r["value"]) for r in csv.DictReader(f)]


def main(argv):
    args = list(argv)
    opts = {"--per": "12", "--part": "all", "--by": "group"}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2 or opts["--part"] not in ("all", "tune", "check") or opts["--by"] not in ("group", "series"):
        sys.exit(__doc__)
    full, out = args
    per = int(opts["--per"])
    written = 0
    for group in sorted(os.listdir(full)):
        gdir = os.path.join(full, group)
        if not os.path.isdir(gdir):
            continue
        for fn in sorted(os.listdir(gdir)):
            if not (fn.endswith(".csv") or fn.endswith(".csv.gz")):
                continue
            name = fn.split(".csv")[0]
            rows = read(os.path.join(gdir, fn))
            n = len(rows)
            lo, hi = {"all": (0, n), "tune": (0, int(0.6 * n)), "check": (int(0.6 * n), n)}[opts["--part"]]
            # origins o (the first forecast point) with room for 960 hours
            # before them inside the part, and H after
            first, last = lo + 960, hi - H
            if last < lo + 700:
                continue
            first = min(first, last)
            k = per if last > first else 1
            sub = os.path.join(out, group if opts["--by"] == "group" else name)
            os.makedirs(sub, exist_ok=True)
            for i in range(k):
                o = first + (last - first) * i // max(1, k - 1) if k > 1 else last
                train = 700 if i % 2 else 960
                if o - train < lo:
                    train = 700
                with open(os.path.join(sub, "%s-%02d.csv" % (name, i)), "w") as f:
                    f.write("t,value\n")
                    for t, v in rows[o - train:o + H]:
                        f.write("%s,%s\n" % (t, v))
                written += 1
    print("%d windows in %s" % (written, out), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
