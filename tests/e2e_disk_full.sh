#!/usr/bin/env bash
# e2e_disk_full.sh — a disk that fills up in the middle of a sweep.
#
# The disk: a 4 MiB tmpfs mounted in a private mount namespace (`unshare -r -m`: no root needed where
# unprivileged user namespaces are enabled; the test is skipped, exit 77, where they are not). A
# 16,900-point plan-level sweep needs about 10 MiB of results.db, committed every 5,000 points, so the
# disk fills after the first batches are committed: a real ENOSPC from the kernel, not an injected error.
#
# What it checks, against what truth:
#   1. simrun exits 1 and says the disk is full and how to go on (--resume);
#   2. results.db still opens, passes PRAGMA integrity_check and holds only whole points, fewer than
#      the sweep's;
#   3. no stale or half-written export is left (no results.csv/results.json, no temporary);
#   4. once the disk has room, --resume completes the sweep, and results.csv equals, byte for byte,
#      the export of the same sweep run once on a disk with room (the truth).
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SIMRUN=$BIN/simrun
command -v sqlite3 >/dev/null || { echo "SKIP: the sqlite3 command-line shell is not installed"; exit 77; }
unshare -r -m true 2>/dev/null || { echo "SKIP: no unprivileged user and mount namespaces here"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sc=$tmp/disk-full.json
sed -e 's/"sweep": *{[^}]*}/"sweep": {"layouts": "all", "layout.global_batch": [15360, 30720, 46080, 61440, 76800, 92160, 107520, 122880, 138240, 153600], "model.seq_len": [1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192, 9216, 10240]}/' \
    scenarios/layout-sweep.json > "$sc"
grep -q '"model.seq_len"' "$sc" || { echo "FAIL: could not write the sweep scenario"; exit 1; }

"$SIMRUN" "$sc" --levels plan --out "$tmp/truth" --quiet || { echo "FAIL: the uninterrupted run failed"; exit 1; }

export SIMRUN sc tmp
unshare -r -m bash -s <<'EOF'
set -u
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/disk"
mount -t tmpfs -o size=4m tmpfs "$tmp/disk" || { echo "SKIP: tmpfs cannot be mounted here"; exit 77; }
out=$tmp/disk/out
"$SIMRUN" "$sc" --levels plan --out "$out" --quiet 2> "$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || { cat "$tmp/err"; fail "a full disk: exit $rc, expected 1"; }
grep -q "full" "$tmp/err" || { cat "$tmp/err"; fail "the message does not say the disk is full"; }
grep -q -- "--resume" "$tmp/err" || { cat "$tmp/err"; fail "the message does not say how to go on"; }
[ "$(sqlite3 "$out/results.db" 'PRAGMA integrity_check')" = ok ] || fail "results.db does not pass integrity_check"
n=$(sqlite3 "$out/results.db" "SELECT count(*) FROM points WHERE status = 'ok'")
[ "$n" -gt 0 ] && [ "$n" -lt 16900 ] || fail "results.db holds $n points; expected some, not all, of 16900"
ls -A "$out" | grep -q -E 'results\.(csv|json)|tmp' && { ls -la "$out"; fail "an export or a temporary was left beside the database"; }
mount -o remount,size=256m "$tmp/disk" || fail "remount"
"$SIMRUN" "$sc" --levels plan --out "$out" --resume --quiet || fail "--resume after the disk had room again"
[ "$(sqlite3 "$out/results.db" 'SELECT count(*) FROM points')" = 16900 ] || fail "not every point after --resume"
cmp -s "$out/results.csv" "$tmp/truth/results.csv" || fail "results.csv after --resume differs from the uninterrupted run's"
cmp -s "$out/results.json" "$tmp/truth/results.json" || fail "results.json after --resume differs from the uninterrupted run's"
echo "disk full at $n of 16900 points: exit 1, database intact, resumed to byte-identical exports"
EOF
