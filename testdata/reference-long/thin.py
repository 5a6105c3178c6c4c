#!/usr/bin/env python3
"""thin.py IN OUT: keep the prompt line, the tf lines of positions p % 16 == 0 and of the last 64
positions, and every other line, byte for byte."""
import json, sys
lines = open(sys.argv[1]).read().split("\n")
if lines[-1] == "": lines = lines[:-1]
n = len(json.loads(lines[0])["tokens"])
out = []
for l in lines:
    o = json.loads(l)
    if o["kind"] == "tf" and not (o["pos"] % 16 == 0 or o["pos"] >= n - 64): continue
    out.append(l)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
TF = '"kind":"tf"'
print("%s: %d prompt tokens, %d tf lines of %d" % (sys.argv[2], n, sum(1 for l in out if TF in l), sum(1 for l in lines if TF in l)))
