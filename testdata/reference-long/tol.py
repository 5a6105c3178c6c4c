#!/usr/bin/env python3
"""tol.py KEPT VARIANT...: per variant, the largest difference of a top-10 logit that both runs rank in
their top 10 and the largest lse difference, over all tf lines and the gtop lines of the common greedy
prefix (also over the thinned tf positions only); the common greedy prefix; tf argmax changes; then
logit_tol = max(1.5*max, 0.05), lse_tol = max(1.5*max, 0.02), stable_gen = shortest common prefix."""
import json, sys

def load(p):
    r = {"tf": {}, "gen": [], "gtop": []}
    for l in open(p):
        o = json.loads(l)
        k = o["kind"]
        if k == "prompt": r["prompt"] = o["tokens"]
        elif k == "tf": r["tf"][o["pos"]] = o
        elif k == "gen": r["gen"].append(o["token"])
        elif k == "gtop": r["gtop"].append(o)
    return r

def kept_pos(n):  # the thinning of the committed files
    return {p for p in range(n) if p % 16 == 0 or p >= n - 64}

def d_line(x, y):
    dx, dy = dict((t, v) for t, v in x["top"]), dict((t, v) for t, v in y["top"])
    return max([abs(dx[t] - dy[t]) for t in dx.keys() & dy.keys()] + [0.0]), abs(x["lse"] - y["lse"])

def cmp(a, b):
    assert a["prompt"] == b["prompt"], "prompts differ"
    pre = 0
    while pre < min(len(a["gen"]), len(b["gen"])) and a["gen"][pre] == b["gen"][pre]: pre += 1
    n = len(a["prompt"]); kp = kept_pos(n)
    ml = mlse = mlk = mlsek = 0.0; where = None; am = 0; per = []
    for p in sorted(a["tf"]):
        d, dl = d_line(a["tf"][p], b["tf"][p]); per.append(d)
        if d > ml: ml, where = d, p
        mlse = max(mlse, dl)
        if p in kp: mlk, mlsek = max(mlk, d), max(mlsek, dl)
        if a["tf"][p]["top"][0][0] != b["tf"][p]["top"][0][0]: am += 1
    for x, y in zip(a["gtop"][:pre], b["gtop"][:pre]):
        d, dl = d_line(x, y)
        if d > ml: ml, where = d, "gtop%d" % x["pos"]
        mlse = max(mlse, dl); mlk = max(mlk, d); mlsek = max(mlsek, dl)
    per.sort()
    med = per[len(per)//2]; p99 = per[int(len(per)*0.99)]
    # largest difference by position range
    rng = {}
    for p in sorted(a["tf"]):
        q = p // 1024
        rng[q] = max(rng.get(q, 0), d_line(a["tf"][p], b["tf"][p])[0])
    return ml, mlse, pre, where, am, mlk, mlsek, med, p99, rng

kept = load(sys.argv[1])
res = []
for v in sys.argv[2:]:
    ml, mlse, pre, where, am, mlk, mlsek, med, p99, rng = cmp(kept, load(v))
    res.append((ml, mlse, pre))
    print(f"  {v}: top10 {ml:.4f} at {where} (thinned {mlk:.4f}; median {med:.4f} p99 {p99:.4f}; by 1024-range " +
          " ".join(f"{rng[q]:.3f}" for q in sorted(rng)) + f"), lse {mlse:.4f} (thinned {mlsek:.4f}), common greedy {pre}, tf argmax changes {am}")
ml = max(r[0] for r in res); mlse = max(r[1] for r in res); sg = min(r[2] for r in res)
print(f"RESULT {sys.argv[1]} " + " / ".join(f"{r[0]:.3f}" for r in res) +
      f" | lse " + " / ".join(f"{r[1]:.3f}" for r in res) +
      f" | logit_tol {max(1.5*ml, 0.05):.3f} lse_tol {max(1.5*mlse, 0.02):.3f} stable_gen {sg}")
