# SPDX-License-Identifier: MIT
# Shared by the drop-ins' shell tests (sourced): reading fio's results.

# check_json FILE: fio's JSON output in FILE has no job error; prints the
# bytes moved as "read write". Text fio prints before the JSON is skipped.
check_json() {
	python3 - "$1" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
r = w = 0
for job in doc["jobs"]:
    if job["error"] != 0:
        sys.exit("fio job error %d" % job["error"])
    r += job["read"]["io_bytes"]
    w += job["write"]["io_bytes"]
print(r, w)
PY
}
