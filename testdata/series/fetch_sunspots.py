#!/usr/bin/python3
"""Make sunspots_yearly.csv in this folder from Debian's python3-statsmodels.

The package ships statsmodels/datasets/sunspots/sunspots.csv (header
"YEAR","SUNACTIVITY", the years 1700..2008, one value a year). This script
copies it into the folder's format, header t,value with t the year and the
value as the package writes it; it needs only the standard library (it does
not import statsmodels).

    python3 fetch_sunspots.py [--src FILE] [--deb] [--out DIR] [--check]

Where the file is read from:
  --src FILE   that file;
  --deb        `apt-get download python3-statsmodels` and `dpkg-deb -x`
               into a temporary folder (run `apt-get update` once first);
               nothing is installed;
  otherwise    the installed package's copy
               (/usr/lib/python3/dist-packages/statsmodels/datasets/sunspots/sunspots.csv,
               Debian: apt-get install python3-statsmodels).
--check compares with the CSV already in DIR instead of writing it (exit 1 on
any difference). The source file's SHA-256 is printed, to compare with the
one in README.md.
"""
import argparse
import csv
import glob
import hashlib
import io
import os
import subprocess
import sys
import tempfile

INSTALLED = "/usr/lib/python3/dist-packages/statsmodels/datasets/sunspots/sunspots.csv"
MEMBER = "usr/lib/python3/dist-packages/statsmodels/datasets/sunspots/sunspots.csv"
NAME = "sunspots_yearly.csv"


def from_deb(tmp):
    """Downloads python3-statsmodels' .deb into tmp and extracts it there."""
    subprocess.run(["apt-get", "download", "python3-statsmodels"], cwd=tmp, check=True)
    debs = glob.glob(os.path.join(tmp, "python3-statsmodels_*.deb"))
    if len(debs) != 1:
        sys.exit("fetch_sunspots: apt-get download gave %r" % debs)
    print("from", os.path.basename(debs[0]), file=sys.stderr)
    root = os.path.join(tmp, "x")
    subprocess.run(["dpkg-deb", "-x", debs[0], root], check=True)
    return os.path.join(root, MEMBER)


def convert(raw):
    """Returns the t,value CSV text of the package's YEAR,SUNACTIVITY text."""
    rows = list(csv.reader(io.StringIO(raw.decode("ascii"))))
    if rows[0] != ["YEAR", "SUNACTIVITY"]:
        sys.exit("fetch_sunspots: header %r, want YEAR,SUNACTIVITY" % rows[0])
    out = ["t,value"]
    prev = None
    for year, value in rows[1:]:
        y = int(year)
        float(value)  # a number, written back as the package writes it
        if prev is not None and y != prev + 1:
            sys.exit("fetch_sunspots: year %d after %d" % (y, prev))
        prev = y
        out.append("%d,%s" % (y, value))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src")
    ap.add_argument("--deb", action="store_true")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = a.src
        if src is None and a.deb:
            src = from_deb(tmp)
        if src is None and os.path.exists(INSTALLED):
            src = INSTALLED
        if src is None:
            sys.exit("fetch_sunspots: %s not found; install python3-statsmodels, or pass --deb or --src" % INSTALLED)
        with open(src, "rb") as f:
            raw = f.read()
    print("source", src, "sha256", hashlib.sha256(raw).hexdigest(), file=sys.stderr)
    text = convert(raw)
    path = os.path.join(a.out, NAME)
    if a.check:
        with open(path) as f:
            if f.read() != text:
                print("%s differs" % path)
                return 1
        print("%s matches" % path)
        return 0
    with open(path, "w") as f:
        f.write(text)
    print("wrote", path, len(text.splitlines()) - 1, "rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
