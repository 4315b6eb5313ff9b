#!/usr/bin/env bash
# e2e_readme_run.sh — the README's first output block (section "The two commands": what
# `bash tools/setup.sh run`, i.e. `simrun scenarios/seed-4096.json --out results/seed-4096`, prints) is
# what the build prints: the same command is run into a temporary folder (its name put back as
# results/seed-4096) and every line compared: stdout whole, and stderr's warnings (its progress line
# holds a rate and an ETA, wall-clock figures, and is left out). The block is taken from the README itself: the first ``` block after "`run`
# prints".
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
TMP=$(mktemp -d /tmp/moesim-readme-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

awk '/^`run` prints/ { after = 1; next }
     after && /^```/ { if (inside) exit; inside = 1; next }
     inside { print }' "$SRC/README.md" > "$TMP/readme.txt"
[ -s "$TMP/readme.txt" ] || { echo "FAIL: no output block after \"\`run\` prints\" in README.md"; exit 1; }
grep -q "bash tools/setup.sh run" "$SRC/README.md" &&
    grep -q 'simrun scenarios/seed-4096.json --out results/seed-4096' "$SRC/tools/setup.sh" ||
    { echo "FAIL: setup.sh run no longer runs simrun scenarios/seed-4096.json --out results/seed-4096"; exit 1; }

cd "$SRC" || exit 1
"$BIN/simrun" scenarios/seed-4096.json --out "$TMP/seed-4096" > "$TMP/out" 2> "$TMP/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: simrun exited $rc"; cat "$TMP/err"; exit 1; }
# stderr: the point's warnings (not the progress line, nor what a sanitizer build adds)
{ grep '^warning: ' "$TMP/err"; cat "$TMP/out"; } | sed "s|$TMP/seed-4096|results/seed-4096|g" > "$TMP/got.txt"
if ! diff -u "$TMP/readme.txt" "$TMP/got.txt"; then
    echo "FAIL: README.md's output block (above, -) differs from what the build prints (+): update the README"
    exit 1
fi
echo "ok: the README's run output is what simrun prints"
