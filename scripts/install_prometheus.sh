#!/usr/bin/env bash
# Install Debian's Prometheus 2.42 (prometheus + promtool) under .tools/prometheus without touching the system:
# `apt-get download` fetches the package and `dpkg-deb -x` unpacks it. Idempotent; prints the bin folder.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.tools/prometheus
BIN=$DEST/usr/bin
if [ -x "$BIN/prometheus" ] && [ -x "$BIN/promtool" ]; then echo "$BIN"; exit 0; fi
mkdir -p .tools/download
cd .tools/download
if ! apt-get download prometheus >/dev/null 2>&1; then
  # a fresh machine may have no package lists yet
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get download prometheus >/dev/null
fi
cd ../..
dpkg-deb -x .tools/download/prometheus_*.deb "$DEST"
rm -rf .tools/download
"$BIN/promtool" --version >/dev/null
echo "$BIN"
