#!/usr/bin/env bash
# The Dockerfile without a Docker engine: its stages and user, its runtime
# packages against `ldd plimsoll`, and its entrypoint run as the image runs it.
# PLIMSOLL_DEBOOTSTRAP=1 also builds the runtime stage in a clean debootstrap tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${PLIMSOLL_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
dockerfile=$root/deploy/docker/Dockerfile
binary=${PLIMSOLL_BINARY:-$root/build/release/plimsoll}
[ -x "$binary" ] || { echo "FAIL: $binary is not built" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== stages"
grep -q '^FROM debian:12 AS build$' "$dockerfile" || fail "no Debian 12 build stage"
grep -q '^FROM debian:12-slim AS runtime$' "$dockerfile" || fail "no slim Debian 12 runtime stage"
grep -q 'scripts/install-deps' "$dockerfile" && grep -q 'scripts/build release' "$dockerfile" ||
  fail "the build stage must run scripts/install-deps and scripts/build release"
grep -q '^USER 10001:10001$' "$dockerfile" || fail "the runtime must run as the non-root uid 10001"
grep -q '^ENTRYPOINT \["/usr/local/bin/plimsoll", "serve"\]$' "$dockerfile" || fail "the entrypoint must be plimsoll serve"
echo "ok   build + slim runtime stages, USER 10001, ENTRYPOINT plimsoll serve"

echo "== runtime packages cover ldd"
runtime=$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$dockerfile")
[ -n "$runtime" ] || fail "no ARG RUNTIME_PACKAGES"
for p in $runtime; do
  apt-cache show "$p" >/dev/null 2>&1 || fail "runtime package $p is not in Debian's archive here"
done
# What debian:12-slim already has that binaries link (priority required), plus what apt pulls in.
base="libc6 libgcc-s1 libstdc++6 zlib1g"
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $runtime 2>/dev/null | grep -v '^ ' | sed 's/:.*//' | sort -u)
missing=0
while read -r lib path; do
  real=$(readlink -f "$path")
  pkg=$(dpkg -S "$real" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)
  pkg=${pkg%%:*}
  if [ -z "$pkg" ]; then echo "FAIL $lib ($real): no Debian package owns it"; missing=1; continue; fi
  if [[ " $base $runtime " == *" $pkg "* ]]; then
    echo "ok   $lib <- $pkg"
  elif grep -qx "$pkg" <<< "$closure"; then
    echo "ok   $lib <- $pkg (a dependency of the runtime packages)"
  else
    echo "FAIL $lib <- $pkg: not in RUNTIME_PACKAGES nor the base image"; missing=1
  fi
done < <(ldd "$binary" | awk '/=> \// {print $1, $3}')
[ "$missing" = 0 ] || fail "the runtime stage lacks libraries the binary links"

echo "== the entrypoint as the image runs it (non-root, settings by environment)"
model=$root/models/stories260K/stories260K.gguf
if [ ! -r "$model" ]; then echo "not run: no model at $model" >&2; exit 77; fi
work=$(mktemp -d); chmod 755 "$work"
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
cp "$binary" "$work/plimsoll"; cp "$model" "$work/model.gguf"; chmod 555 "$work/plimsoll"; chmod 444 "$work/model.gguf"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_user=()
if [ "$(id -u)" = 0 ]; then as_user=(setpriv --reuid 10001 --regid 10001 --clear-groups); fi
# ENV of the Dockerfile + what the Deployment adds (downward API value, HOSTNAME = pod name).
env -i PATH=/usr/bin:/bin MODEL_ID="$work/model.gguf" PORT="$port" PLIMSOLL_MEMORY_FRACTION=0.9 \
  PLIMSOLL_MEMORY_LIMIT=268435456 HOSTNAME=plimsoll-7d4b9c-x2x9z MAX_TOTAL_TOKENS=256 \
  "${as_user[@]}" "$work/plimsoll" serve --hostname 0.0.0.0 2> "$work/serve.log" &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$work/serve.log"; fail "/health did not answer"; }
grep -q 'memory limit 256.00 MiB from --memory-limit' "$work/serve.log" || { cat "$work/serve.log"; fail "the limit from PLIMSOLL_MEMORY_LIMIT was not used"; }
curl -sf "http://127.0.0.1:$port/generate" -H 'Content-Type: application/json' \
  -d '{"inputs":"Once upon a time","parameters":{"max_new_tokens":8}}' | grep -q generated_text || fail "/generate failed"
kill -TERM "$pid"; wait "$pid" || fail "serve did not exit cleanly on SIGTERM"
pid=
echo "ok   serve as uid 10001 from env only: /health, /generate, limit from PLIMSOLL_MEMORY_LIMIT, clean SIGTERM"

if [ "${PLIMSOLL_DEBOOTSTRAP:-0}" = 1 ]; then
  echo "== runtime stage in a clean debootstrap tree"
  command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
  tree=$work/rootfs
  debootstrap --variant=minbase bookworm "$tree" >/dev/null
  chroot "$tree" apt-get install -y --no-install-recommends $runtime >/dev/null
  cp "$binary" "$tree/usr/local/bin/plimsoll"
  chroot --userspec=10001:10001 "$tree" /usr/local/bin/plimsoll serve --help >/dev/null
  chroot --userspec=10001:10001 "$tree" /usr/local/bin/plimsoll webhook --help >/dev/null
  echo "ok   the binary runs in a minbase Debian 12 with only RUNTIME_PACKAGES"
fi
echo "dockerfile: all checks passed"
