#!/usr/bin/env python3
"""Checks a `penumbra run --trace` file against the trace-event format and against the report of
the same run: tracecheck.py TRACE.json REPORT.json (the report from `run -f json`).

- every event has the fields its phase needs (M: args.name; X: tid, ts, dur >= 0; C: ts and
  numeric args >= 0; s / f: tid, ts, id), pids and tids are integers;
- each flow id has one "s" and one "f", at the same time, each inside a P2P task (a "pp_*"
  slice) of its thread, the "f" with "bp": "e";
- summed over GPUs and divided by their number, the exposed spans of each class (dur x share)
  equal the report's exposed_comm_s, and the bubble spans its bubble_s (within 1 ns per span).
Standard library only."""
import bisect, json, sys
from collections import defaultdict

trace, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
events = trace["traceEvents"]
slices = defaultdict(list)
flows = defaultdict(list)
exposed, bubble, n_spans = defaultdict(float), 0.0, 0
gpus = set()


def need(cond, e, why):
    if not cond:
        sys.exit(f"FAIL: {why}: {json.dumps(e)}")


for e in events:
    ph = e.get("ph")
    need(isinstance(e.get("pid"), int) and isinstance(e.get("name"), str), e, "pid and name")
    if ph == "M":
        need(isinstance(e.get("args", {}).get("name"), str), e, "a metadata event names something")
        if e["name"] == "process_name":
            gpus.add(e["pid"])
        continue
    need(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, e, "ts >= 0")
    if ph == "X":
        need(isinstance(e.get("tid"), int) and isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e,
             "a complete event has tid and dur >= 0")
        slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        if e.get("cat") == "exposed":
            cls = e["name"].split()[-1]
            exposed[cls] += e["dur"] * e["args"]["share"]
            n_spans += 1
        elif e.get("cat") == "bubble":
            bubble += e["dur"]
            n_spans += 1
    elif ph == "C":
        need(e.get("args") and all(isinstance(v, (int, float)) and v >= 0 for v in e["args"].values()), e,
             "counter values are numbers >= 0")
    elif ph in ("s", "f"):
        need(isinstance(e.get("tid"), int) and "id" in e, e, "a flow event has tid and id")
        need(ph == "s" or e.get("bp") == "e", e, "a flow's end binds to its enclosing slice")
        flows[e["id"]].append(e)
    else:
        need(False, e, "unknown phase")

for key in slices:
    slices[key].sort()
for fid, pair in flows.items():
    phs = sorted(p["ph"] for p in pair)
    need(phs == ["f", "s"], pair[0], f"flow {fid} has {phs}, expected one s and one f")
    need(pair[0]["ts"] == pair[1]["ts"], pair[0], "a flow's ends are at the rendezvous")
    for p in pair:
        s = slices[(p["pid"], p["tid"])]
        i = bisect.bisect_right(s, (p["ts"], float("inf"), "")) - 1
        need(i >= 0 and s[i][0] <= p["ts"] <= s[i][1] and s[i][2].startswith("pp_"), p,
             "a flow end lies inside a P2P task of its thread")

n = len(gpus)
for cls, want in report["exposed_comm_s"].items():
    got = exposed.get(cls, 0.0) * 1e-6 / n
    need(abs(got - want) <= 1e-9 * (n_spans + 1) + 1e-8 * want, {"class": cls, "trace": got, "report": want},
         "exposed spans sum to the reported exposed_comm_s")
got = bubble * 1e-6 / n
need(abs(got - report["bubble_s"]) <= 1e-9 * (n_spans + 1) + 1e-8 * report["bubble_s"],
     {"trace": got, "report": report["bubble_s"]}, "bubble spans sum to the reported bubble_s")
print(f"trace: {len(events)} events, {len(flows)} P2P flows matched, exposed per class "
      f"{ {c: round(v * 1e-6 / n, 6) for c, v in sorted(exposed.items())} } s = the report's")
