# bench/malloc/pyjson.py - an allocation-heavy Python workload for comparing
# libdmm's modes under callgrind (docs/malloc.md, "Hardening"): 20,000
# small objects dumped to JSON, parsed back and searched with a regular
# expression.  Run with PYTHONMALLOC=malloc so every object is malloc's.
import json
import re

d = [{"k": i, "v": [str(j) for j in range(i % 40)]} for i in range(20000)]
s = json.dumps(d)
e = json.loads(s)
print(len(s), len(e), len(re.findall(r'"\d+"', s)))
