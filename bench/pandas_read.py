#!/usr/bin/python3
"""What users run today: pandas read_sql of the kernel columns. Prints seconds as JSON."""
import json, sqlite3, sys, time
import pandas as pd

t0 = time.perf_counter()
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
df = pd.read_sql("SELECT start, end, deviceId, streamId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
con.close()
print(json.dumps({"rows": len(df), "seconds": time.perf_counter() - t0}))
