#!/usr/bin/env python3
"""Merges the per-launch result files of e2e.py (one per world size and process group) into one
e2e-results.json; the top-level "env" is the first file's, each launch's is under harness.groups."""
import json
import sys


def main(out, parts):
    doc = None
    for p in parts:
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            print(f"merge: skipping {p}: {e}", file=sys.stderr)
            continue
        if doc is None:
            doc = d
            doc["harness"]["groups"] = []
        else:
            doc["results"].extend(d["results"])
        doc["harness"]["groups"].append({"file": p.rsplit("/", 1)[-1], "world_size": (d["env"] or {}).get("world_size"),
                                         "env": (d["env"] or {}).get("env"),
                                         "wall_s": d["harness"].get("wall_s"),
                                         "configs": [r["config"] for r in d["results"]]})
    if doc is None:
        print("merge: nothing to merge", file=sys.stderr)
        return 1
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{'config':16s} {'step ms':>9s} {'exposed':>8s} {'comm':>8s} {'compute':>9s} {'loss0':>9s} {'gnorm0':>9s}")
    for r in doc["results"]:
        def g(k):
            v = r.get(k)
            return float("nan") if v is None else v
        print(f"{r['config']:16s} {g('step_time_ms'):9.2f} {g('exposed_comm_ms'):8.2f} {g('comm_total_ms'):8.2f} "
              f"{g('compute_ms'):9.2f} {g('first_step_loss'):9.5f} {g('first_step_grad_norm'):9.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
