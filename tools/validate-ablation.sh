#!/usr/bin/env bash
# The validation with each mechanism of a real step switched off in turn (simrun validate --set),
# the committed global fit kept: a markdown table of every step case's error, and the median |error|
# per family, one column per mechanism. README "Accuracy" shows its output.
#   tools/validate-ablation.sh [OUTDIR]        (about 10 s per column on 2 cores)
set -euo pipefail
bin=${MOESIM_BIN:-build/tools}
out=${1:-results/ablation}
mkdir -p "$out"
# column name | the settings that switch it off
columns=(
  "all on|"
  "host side|host.framework=none"
  "FP8 quantize passes|precision.quantization_free=true"
  "own routing samples|routing.group_samples=shared"
  "GPU speed spread|cluster.gpu.speed_cv=0"
  "NCCL rings/tree|cluster.nccl_model=wire"
  "bucketed DP reduce|layout.overlap_grad_reduce=false"
  "joint fit|cluster.gpu.sustained=1 host.call_us=12 cluster.gpu.grouped_gemm_rate=1"
)
i=0
for col in "${columns[@]}"; do
  sets=()
  for kv in ${col#*|}; do sets+=(--set "$kv"); done
  "$bin/simrun" validate --no-loo --quiet --out "$out/$i" ${sets[@]+"${sets[@]}"} >/dev/null
  i=$((i + 1))
done
python3 - "$out" "${#columns[@]}" "${columns[@]}" <<'EOF'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
names = [c.split('|')[0] for c in sys.argv[3:3 + n]]
docs = [json.load(open(f"{out}/{i}/validation.json")) for i in range(n)]
step = lambda d: [c for c in d["cases"] if c["kind"] == "step" and "error_pct" in c]
print("| case | " + " | ".join(f"{m} off" if i else m for i, m in enumerate(names)) + " |")
print("|---" * (n + 1) + "|")
for k, c in enumerate(step(docs[0])):
    row = [f"{step(d)[k]['error_pct']:+.1f}" for d in docs]
    print(f"| {c['name']} | " + " | ".join(row) + " |")
for fam, f in (("median abs, dense", lambda c: not c["moe"]), ("median abs, MoE", lambda c: c["moe"]),
               ("median abs, all", lambda c: True)):
    row = [f"{statistics.median(abs(c['error_pct']) for c in step(d) if f(c)):.1f}" for d in docs]
    print(f"| **{fam}** | " + " | ".join(row) + " |")
EOF
