#!/usr/bin/env bash
# e2e_recipes.sh — the published training recipes shipped in scenarios/ (README "Published recipes")
# run at plan and step level: simrun exits 0, the point is ok, both levels report a step time, and
# reruns with --reproducible are byte-identical.
set -u
BIN=${MOESIM_BIN:?MOESIM_BIN must point at the tools folder of the build}
SRC=${MOESIM_SOURCE_DIR:-$(pwd)}
TMP=$(mktemp -d /tmp/moesim-recipes-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

for name in deepseek-v3-1024-h100 llama31-405b-1024-h100 qwen3-235b-256-h100 deepseek-v3-256-gb200; do
    for run in a b; do
        out="$TMP/$name-$run"
        if ! "$BIN/simrun" run "$SRC/scenarios/$name.json" --levels plan,step --reproducible --out "$out" -q -j 1 \
             > "$out.log" 2>&1; then
            fail "$name: simrun exited non-zero"; cat "$out.log"; continue 2
        fi
    done
    r="$TMP/$name-a/results.json"
    grep -q '"status":[[:space:]]*"ok"' "$r" || fail "$name: the point is not ok"
    n=$(grep -c '"step_time_s":' "$r")
    [ "$n" -ge 2 ] || fail "$name: $n step times in results.json (want plan and step)"
    sed '/"version":/d' "$r" > "$TMP/a.json"
    sed '/"version":/d' "$TMP/$name-b/results.json" > "$TMP/b.json"
    cmp -s "$TMP/a.json" "$TMP/b.json" || fail "$name: two --reproducible runs differ"
    echo "ok: $name"
done
[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "all recipes ran"
