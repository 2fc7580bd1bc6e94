#!/usr/bin/env bash
# Role: fetch Debian 12's busybox-static for another guest architecture (arm64
# by default) without touching the system's apt state: apt runs with its own
# package lists and cache under the output folder, for that architecture only,
# downloads the .deb and extracts /bin/busybox.
# Usage: scripts/fetch_guest_busybox.sh [debian-arch] [out-dir]
#   default: arm64 build/guest-busybox  ->  build/guest-busybox/arm64/busybox
# Who calls it: the behaviour tests' users and CI (scripts/test.sh), and
# bench/run_bench.sh for the aarch64 figures.
# Invariant: idempotent; when the binary is already there it does nothing (no
# network). Needs the network and apt's sources (the system's sources.list).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-arm64}
out=${2:-build/guest-busybox}
target="$out/$arch/busybox"
if [ -x "$target" ]; then
  echo "$target"
  exit 0
fi
state="$out/$arch/apt"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
apt_options=(-q -o "APT::Architectures::=$arch" -o "APT::Architecture=$arch"
             -o "Dir::State::Lists=$(realpath "$state/lists")" -o "Dir::Cache=$(realpath "$state/cache")"
             -o Dir::State::Status=/dev/null -o APT::Sandbox::User=root)
# A list that fails to update (a mirror mid-sync, say bookworm-security's) is not
# fatal: busybox-static comes from the main archive; the download decides.
apt-get "${apt_options[@]}" update >/dev/null || echo "fetch_guest_busybox: apt-get update reported errors" >&2
(cd "$state" && apt-get "${apt_options[@]}" download "busybox-static:$arch" >/dev/null)
deb=$(ls "$state"/busybox-static_*_"$arch".deb | head -n 1)
rm -rf "$state/extract"
dpkg-deb -x "$deb" "$state/extract"
install -m 0755 "$state/extract/bin/busybox" "$target"
echo "$target"
