#!/usr/bin/env bash
# Records capture.lp: real Telegraf (v1.32.3, built from the Go module proxy)
# sampling this host's cpu, mem, disk, diskio, net and system metrics every
# second for DURATION (default 21 minutes), in InfluxDB line protocol.
#
#   GONOSUMDB=github.com/influxdata/tail go install github.com/influxdata/telegraf/cmd/telegraf@v1.32.3
#   testdata/telegraf/record.sh [DURATION]
#
# (The GONOSUMDB setting: the checksum database does not know one of
# Telegraf's pinned pseudo-versions; go.sum in Telegraf's module still
# pins its hash.) The capture committed here was made on the project's
# 2-core test machine while the test suite and benchmarks ran on it, so
# that cpu, diskio and net move.
set -euo pipefail
cd "$(dirname "$0")"
duration=${1:-21m}
telegraf=${TELEGRAF:-$(go env GOPATH | cut -d: -f1)/bin/telegraf}
export CAPTURE_FILE=$PWD/capture.lp.tmp
rm -f "$CAPTURE_FILE"
timeout --signal=INT "$duration" "$telegraf" --config telegraf.conf || true
mv "$CAPTURE_FILE" capture.lp
echo "capture.lp: $(wc -l < capture.lp) lines"
