"""The payloads an inline HTML report (agentbench report --format html) carries, by name."""

from __future__ import annotations

import json
import re
from typing import Any

DELIVERY = re.compile(r'<script>agentbench\.deliver\(("(?:[^"\\]|\\.)*"),(.*?)\);\n</script>', re.S)


def payloads_of(html: str) -> dict[str, Any]:
    return {json.loads(name): json.loads(data) for name, data in DELIVERY.findall(html)}
