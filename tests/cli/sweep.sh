#!/usr/bin/env bash
# penumbra sweep: a space counted by hand (32 candidates: 8 break tp | heads, 6 interleave
# without a pipeline, 18 left to the memory check and the simulation); -j 1 and -j 2 write the
# same CSV and JSON byte for byte; the steady-state fast-forward agrees with the full simulation
# (--exact) within 0.1% of the iteration time on every layout; Ctrl-C writes what is done and
# exits 130; bad input is one line and exit 2. A model whose layers few pipeline sizes divide is
# pipelined with the split the sweep chooses (DeepSeek-V3's 61 layers, account_for_* on 30 + 2),
# which every output states; a split the scenario states stays.
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=(--model llama3-8b --gpus 8 --seq-length 4096 --global-batch-size 128
  --vary parallel.tensor_model_parallel_size=1,2,3,4 --vary parallel.pipeline_model_parallel_size=1,2
  --vary parallel.virtual_pipeline_model_parallel_size=1,2 --vary parallel.context_parallel_size=1
  --vary training.micro_batch_size=1,2 --vary recompute.recompute_granularity=null)
"$bin" sweep "${base[@]}" -j 1 --csv "$tmp/j1.csv" --json "$tmp/j1.json" --rejected "$tmp/rej.csv" >"$tmp/j1.txt"
"$bin" sweep "${base[@]}" -j 2 --csv "$tmp/j2.csv" --json "$tmp/j2.json" >/dev/null
"$bin" sweep "${base[@]}" -j 2 --exact --csv "$tmp/exact.csv" >/dev/null
head -8 "$tmp/j1.txt"
grep -q '^space: 32 candidates' "$tmp/j1.txt" || { echo "FAIL: expected 32 candidates"; exit 1; }
python3 - "$tmp" <<'PY'
import csv, json, sys
t = sys.argv[1]
j = json.load(open(f"{t}/j1.json"))
c = j["counts"]
assert c["candidates"] == 32, c
reasons = {r["reason"]: r["count"] for r in j["rejected_by_reason"]}
assert reasons.get("tensor_model_parallel_size does not divide num_attention_heads") == 8, reasons
assert reasons.get("virtual_pipeline_model_parallel_size needs pipeline_model_parallel_size > 1") == 6, reasons
assert c["rejected"] == 14 and c["accepted"] + c["over_memory"] == 18, c
assert c["simulated"] == c["accepted"] == len(j["layouts"]), c
rej = list(csv.DictReader(open(f"{t}/rej.csv")))
assert len(rej) == 14 + c["over_memory"], len(rej)
tf = [l["model_tflops_per_gpu"] for l in j["layouts"]]
assert tf == sorted(tf, reverse=True), "not ranked"
fast = {r["index"]: float(r["iteration_time_s"]) for r in csv.DictReader(open(f"{t}/j1.csv"))}
exact = {r["index"]: float(r["iteration_time_s"]) for r in csv.DictReader(open(f"{t}/exact.csv"))}
assert fast.keys() == exact.keys()
worst = max(abs(fast[k] - exact[k]) / exact[k] for k in fast)
print(f"fast-forward vs full simulation: worst {worst * 100:.4f}% over {len(fast)} layouts")
assert worst <= 1e-3, worst
PY
# several GPU counts (8 GPUs: a pipeline stage inside a node; 16 and 32: stages of whole nodes,
# P2P across nodes): every layout within 0.1% of the full simulation
two=(--model llama3-8b --gpus 8:32 --seq-length 4096 --global-batch-size 256
  --vary parallel.tensor_model_parallel_size=1,2 --vary parallel.pipeline_model_parallel_size=2
  --vary parallel.virtual_pipeline_model_parallel_size=1,2 --vary parallel.context_parallel_size=1
  --vary training.micro_batch_size=1 --vary recompute.recompute_granularity=null -j 2)
"$bin" sweep "${two[@]}" --csv "$tmp/two-fast.csv" >/dev/null
"$bin" sweep "${two[@]}" --exact --csv "$tmp/two-exact.csv" >/dev/null
python3 - "$tmp" <<'PY'
import csv, sys
t = sys.argv[1]
fast = {r["index"]: r for r in csv.DictReader(open(f"{t}/two-fast.csv"))}
exact = {r["index"]: r for r in csv.DictReader(open(f"{t}/two-exact.csv"))}
assert fast.keys() == exact.keys() and len(fast) == 12, len(fast)
assert {r["hardware.num_gpus"] for r in fast.values()} == {"8", "16", "32"}
worst = max(abs(float(fast[k]["iteration_time_s"]) / float(exact[k]["iteration_time_s"]) - 1) for k in fast)
print(f"8, 16 and 32 GPUs, fast-forward vs full simulation: worst {worst * 100:.4f}% over {len(fast)} layouts")
assert worst <= 1e-3, worst
PY
cmp "$tmp/j1.csv" "$tmp/j2.csv" || { echo "FAIL: -j 1 and -j 2 CSVs differ"; exit 1; }
cmp <(grep -v '"commit"' "$tmp/j1.json") <(grep -v '"commit"' "$tmp/j2.json") || { echo "FAIL: -j 1 and -j 2 JSON differ"; exit 1; }

# a scenario file: only the given axes vary; moving tp keeps sequence_parallel and the expert
# tensor size following it (no layout refused for expert parallelism on a dense model), and a
# string key (a userbuffers preset) is an axis like any other
"$bin" sweep scenarios/llama3-8b-h100-8gpu.json --vary parallel.tensor_model_parallel_size=1,2 \
  --vary parallel.context_parallel_size=1 --vary comm_overlap.tp_comm_overlap_cfg=null,userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192 \
  -j 2 --json "$tmp/file.json" >/dev/null
python3 - "$tmp/file.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
assert c["candidates"] == 4 and c["rejected"] == 0, c
PY

# a pipeline layout fixes pp x vpp: --layouts varies the pipeline sizes its 8 virtual stages divide
# over (2, 4, 8; pp 1 would interleave without a pipeline) and no virtual size, which follows from
# the layout at each (VPP 4, 2, 1 in the table); every layout simulated runs the layout, and its
# Megatron-LM line carries it
printf '%s' '{"schema_version": 1, "model": {"base": "llama3-8b", "num_layers": 14},
  "hardware": {"profile": "h100-sxm", "num_gpus": 8},
  "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 64},
  "parallel": {"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Et|(tt|)*6,tL"}}' >"$tmp/layout.json"
"$bin" sweep "$tmp/layout.json" --layouts --vary parallel.tensor_model_parallel_size=1 \
  --vary parallel.context_parallel_size=1 --vary training.micro_batch_size=1 --vary recompute.recompute_granularity=null \
  -j 2 --json "$tmp/layout-sweep.json" >"$tmp/layout.txt"
grep -q '^space: 3 candidates over 5 axes (tensor_model_parallel_size 1, pipeline_model_parallel_size 3, ' "$tmp/layout.txt" ||
  { echo "FAIL: a layout's pipeline axis"; cat "$tmp/layout.txt"; exit 1; }
for l in "TP1 PP2 VPP4 CP1 DP4" "TP1 PP4 VPP2 CP1 DP2" "TP1 PP8 VPP1 CP1 DP1"; do
  grep -q "$l" "$tmp/layout.txt" || { echo "FAIL: no row $l"; cat "$tmp/layout.txt"; exit 1; }
done
grep -q -- "--pipeline-model-parallel-layout 'Et|(tt|)\*6,tL'" "$tmp/layout.txt" ||
  { echo "FAIL: the layout not in the best layout's Megatron-LM line"; exit 1; }

# A model whose layers few pipeline sizes divide: DeepSeek-V3's 61 layers split evenly at pp 1
# alone, so the sweep chooses a split Megatron accepts at each pipeline and virtual size
# (workload/split.h, pn_workload_split_choose): an uneven last stage (pp 8: 7 x 8 + 5, pp 16:
# 15 x 4 + 1, as Megatron-Bridge's DeepSeek-V3 layouts), the virtual sizes where 61 + 2
# (account_for_*) divides, and where no keys can say a split, a layout (pp 8 vpp 2:
# "Et*4|(t*4|)*14,tmL", Bridge's layout_map; pp 8 vpp 4: "Et|(tt|)*30,mL", Bridge's H100 run;
# pp 12 and 14 too); none at pp 15. The table, the JSON and CSV rows and the Megatron-LM lines
# say the split (a layout without a count of virtual stages beside it, as Megatron-LM requires).
"$bin" sweep --model deepseek-v3 --profile h100-sxm --gpus 1024 --seq-length 4096 --global-batch-size 8192 \
  --vary parallel.tensor_model_parallel_size=1 --vary parallel.context_parallel_size=1 \
  --vary parallel.expert_model_parallel_size=8 --vary training.micro_batch_size=1 \
  --vary recompute.recompute_granularity=full -j 2 --json "$tmp/ds.json" --csv "$tmp/ds.csv" >"$tmp/ds.txt"
grep -q "PP8 VPP1 last_stage=5 " "$tmp/ds.txt" || { echo "FAIL: no PP8 row with its split"; cat "$tmp/ds.txt"; exit 1; }
grep -q "PP16 VPP1 last_stage=1 " "$tmp/ds.txt" || { echo "FAIL: no PP16 row with its split"; cat "$tmp/ds.txt"; exit 1; }
grep -qF "PP8 VPP2 layout=Et*4|(t*4|)*14,tmL " "$tmp/ds.txt" ||
  { echo "FAIL: no PP8 VPP2 row with Bridge's layout"; cat "$tmp/ds.txt"; exit 1; }
grep -qF "PP8 VPP4 layout=Et|(tt|)*30,mL " "$tmp/ds.txt" ||
  { echo "FAIL: no PP8 VPP4 row with Bridge's H100 layout"; cat "$tmp/ds.txt"; exit 1; }
grep -q -- "^best layout as Megatron-LM arguments:.* --pipeline-model-parallel-size \(8\|16\) .*\(--decoder-last-pipeline-num-layers \(5\|1\) \|--pipeline-model-parallel-layout \)" \
  "$tmp/ds.txt" || { echo "FAIL: the best layout's Megatron-LM line has no split"; cat "$tmp/ds.txt"; exit 1; }
python3 - "$tmp" <<'PY'
import csv, json, sys
t = sys.argv[1]
j = json.load(open(f"{t}/ds.json"))
axes = {a["key"]: a["values"] for a in j["space"]["axes"]}
assert axes["parallel.pipeline_model_parallel_size"] == [str(p) for p in [*range(1, 15), 16]], axes
assert axes["parallel.virtual_pipeline_model_parallel_size"] == [str(v) for v in [*range(1, 10), 11, 16]], axes
last = {2: 30, 4: 13, 8: 5, 16: 1}
layouts = {(8, 2): "Et*4|(t*4|)*14,tmL", (8, 4): "Et|(tt|)*30,mL", (16, 2): "Et|(tt|)*30,mL"}
rows = j["layouts"]
assert any(r["parallel.pipeline_model_parallel_size"] > 1 for r in rows), rows
seen = set()
for r in rows:
    pp, vpp = r["parallel.pipeline_model_parallel_size"], r["parallel.virtual_pipeline_model_parallel_size"]
    layout, args = r.get("parallel.pipeline_model_parallel_layout"), r["megatron_args"]
    if layout is not None:
        seen.add((pp, vpp))
        assert layouts.get((pp, vpp), layout) == layout, r
        assert f"--pipeline-model-parallel-layout '{layout}'" in args, args
        assert "--num-virtual-stages-per-pipeline-rank" not in args, args
        assert "parallel.num_layers_in_last_pipeline_stage" not in r, r
        continue
    assert vpp == 1 or pp in (3, 7, 9), r
    assert r.get("parallel.num_layers_in_last_pipeline_stage") == last.get(pp), r
    assert "parallel.num_layers_in_first_pipeline_stage" not in r, r
    flag = f"--decoder-last-pipeline-num-layers {last[pp]}" if pp in last else "--decoder-last-pipeline-num-layers"
    assert (flag in args) == (pp in last), args
assert (8, 2) in seen and (8, 4) in seen, seen
for r in csv.DictReader(open(f"{t}/ds.csv")):
    if r["parallel.pipeline_model_parallel_layout"]:
        assert r["parallel.num_layers_in_last_pipeline_stage"] == "none", r
        continue
    want = str(last.get(int(r["parallel.pipeline_model_parallel_size"]), "none"))
    assert r["parallel.num_layers_in_last_pipeline_stage"] == want, r
    assert r["parallel.account_for_embedding_in_pipeline_split"] == "false", r
print(f"DeepSeek-V3: {len(rows)} layouts, pipeline sizes {sorted({r['parallel.pipeline_model_parallel_size'] for r in rows})}, layouts at {sorted(seen)}")
PY

# Megatron-Bridge's Llama 3.1 405B way: 30 layers + the embedding + the loss = 32 slots over pp 4
# and 8 (and their chunks at vpp 2), 15 + 15 at pp 2; a split the scenario states stays (first 10
# at pp 2: 10 + 20; pp 4 leaves 20 for three middle stages and is refused as Megatron refuses it)
printf '%s' '{"schema_version": 1, "model": {"base": "llama3-8b", "num_layers": 30},
  "hardware": {"profile": "h100-sxm", "num_gpus": 8},
  "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 64}}' >"$tmp/acc.json"
"$bin" sweep "$tmp/acc.json" --vary parallel.pipeline_model_parallel_size=1,2,4,8 \
  --vary parallel.virtual_pipeline_model_parallel_size=1,2 -j 2 --json "$tmp/acc-out.json" >"$tmp/acc.txt"
grep -q "PP4 VPP1 account_for=embedding,loss" "$tmp/acc.txt" || { echo "FAIL: no account_for row"; cat "$tmp/acc.txt"; exit 1; }
"$bin" sweep "$tmp/acc.json" --set parallel.num_layers_in_first_pipeline_stage=10 \
  --set parallel.pipeline_model_parallel_size=2 --vary parallel.pipeline_model_parallel_size=2,4 -j 2 \
  --json "$tmp/stated.json" >/dev/null
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
rows = json.load(open(f"{t}/acc-out.json"))["layouts"]
both = "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
for r in rows:
    pp = r["parallel.pipeline_model_parallel_size"]
    account = pp in (4, 8) or (pp, r["parallel.virtual_pipeline_model_parallel_size"]) == (2, 2)
    assert r.get("parallel.account_for_embedding_in_pipeline_split", False) == account, r
    assert r.get("parallel.account_for_loss_in_pipeline_split", False) == account, r
    assert (both in r["megatron_args"]) == account, r["megatron_args"]
assert len(rows) == 7, len(rows)
s = json.load(open(f"{t}/stated.json"))
assert [r["parallel.pipeline_model_parallel_size"] for r in s["layouts"]] == [2], s["layouts"]
assert s["layouts"][0]["parallel.num_layers_in_first_pipeline_stage"] == 10, s["layouts"][0]
assert "--decoder-first-pipeline-num-layers 10" in s["layouts"][0]["megatron_args"], s["layouts"][0]
PY

# Ctrl-C: what is done is written, and said; exit 130. (--foreground: timeout signals only the
# sweep, once; without it the signal also goes to the process group, a second Ctrl-C, which kills)
set +e
timeout --foreground --preserve-status -s INT 5 "$bin" sweep --model llama3-70b --gpus 64 --seq-length 8192 \
  --global-batch-size 256 -j 1 --exact --csv "$tmp/int.csv" >/dev/null 2>"$tmp/int.err"
rc=$?
set -e
[ "$rc" = 130 ] || { echo "FAIL: an interrupted sweep exits $rc, want 130"; cat "$tmp/int.err"; exit 1; }
grep -q 'interrupted: [0-9]* of [0-9]* layouts simulated' "$tmp/int.err" || { echo "FAIL: no interruption line"; exit 1; }
head -1 "$tmp/int.csv" | grep -q '^rank,index,' || { echo "FAIL: no CSV after the interruption"; exit 1; }

bad() { # expected-fragment args...: one line on stderr, exit 2
  local want=$1; shift
  set +e; err=$("$bin" sweep "$@" 2>&1 >/dev/null); rc=$?; set -e
  [ "$rc" = 2 ] || { echo "FAIL: exit $rc (want 2) for: $*"; echo "$err"; exit 1; }
  [ "$(echo "$err" | wc -l)" = 1 ] || { echo "FAIL: not one line for: $*"; echo "$err"; exit 1; }
  case "$err" in *"$want"*) ;; *) echo "FAIL: want '$want', got: $err"; exit 1 ;; esac
}
m=(--model llama3-8b --gpus 8 --seq-length 4096 --global-batch-size 128)
bad 'did you mean parallel.tensor_model_parallel_size' "${m[@]}" --vary parallel.tensor_model_parallel_sise=2
bad 'an empty value' "${m[@]}" --vary parallel.tensor_model_parallel_size=2,,4
bad 'expected KEY=VALUE' "${m[@]}" --vary parallel.tensor_model_parallel_size
bad "holds no whole number of 8-GPU nodes" --model llama3-8b --gpus 9:15 --seq-length 4096 --global-batch-size 128
bad 'does not divide num_attention_heads' "${m[@]}" --vary parallel.tensor_model_parallel_size=3
bad '--seq-length: required' --model llama3-8b --gpus 8 --global-batch-size 128
echo '{"parallel.tensor_model_parallel_size": [' >"$tmp/space.json"
bad "$tmp/space.json" "${m[@]}" --space "$tmp/space.json"
echo '{"parallel.tensor_model_parallel_size": []}' >"$tmp/space.json"
bad 'empty array' "${m[@]}" --space "$tmp/space.json"
bad 'expected 1 to 1024 threads' "${m[@]}" -j -3
bad 'expected 1 to 1024 threads' "${m[@]}" -j nan
bad '--top: expected 0 (all)' "${m[@]}" --top 2.5
bad '--seq-length: expected a whole number' --model llama3-8b --gpus 8 --seq-length inf --global-batch-size 128
echo "sweep: ok"
