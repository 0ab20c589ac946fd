#!/usr/bin/env bash
# Install Debian's Prometheus 2.42 (prometheus, promtool) and Alertmanager 0.25 (prometheus-alertmanager, amtool)
# under .tools/prometheus without touching the system: `apt-get download` fetches each package and `dpkg-deb -x`
# unpacks it. Idempotent; prints the bin folder.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.tools/prometheus
BIN=$DEST/usr/bin
if [ -x "$BIN/prometheus" ] && [ -x "$BIN/promtool" ] && [ -x "$BIN/prometheus-alertmanager" ] && [ -x "$BIN/amtool" ]
then echo "$BIN"; exit 0; fi
mkdir -p .tools/download
cd .tools/download
if ! apt-get download prometheus prometheus-alertmanager >/dev/null 2>&1; then
  # a fresh machine may have no package lists yet
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get download prometheus prometheus-alertmanager >/dev/null
fi
cd ../..
for deb in .tools/download/*.deb; do dpkg-deb -x "$deb" "$DEST"; done
rm -rf .tools/download
"$BIN/promtool" --version >/dev/null
"$BIN/amtool" --version >/dev/null 2>&1
echo "$BIN"
