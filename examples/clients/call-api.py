# Calls a launcher's automation API with its token, from Python (requests).
# LAUNCHER_TOKEN: the token from the launcher's settings; LAUNCHER_URL: the API (default http://127.0.0.1:7878).
import os
import re
import sys

import requests

base = os.environ.get("LAUNCHER_URL", "http://127.0.0.1:7878")
# The environment, not an argument: others see arguments. Pasted with its "Bearer " prefix, it still works.
token = re.sub(r"^bearer\s+", "", os.environ.get("LAUNCHER_TOKEN", "").strip(), flags=re.IGNORECASE)
if not token:
    sys.exit("set LAUNCHER_TOKEN to the token from the launcher's settings")

print("health:", requests.get(f"{base}/health", timeout=5).status_code)
answer = requests.get(f"{base}/apps", headers={"Authorization": f"Bearer {token}"}, timeout=5)
if answer.status_code == 401:
    sys.exit("401: copy the token from the launcher's settings again (was it regenerated?)")
answer.raise_for_status()
print(answer.json())
