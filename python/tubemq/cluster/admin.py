"""The master's HTTP admin API (``/webapi.htm?method=...``), as far as the cluster needs it."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from tubemq.cluster.config_files import ADMIN_TOKEN
from tubemq.cluster.errors import ClusterError

_USER = "tubemqpython"


class AdminClient:
    def __init__(self, web_address: str, timeout_s: float = 10.0) -> None:
        self.base = f"http://{web_address}/webapi.htm"
        self.timeout_s = timeout_s

    def query(self, method: str, **params: Any) -> dict[str, Any]:
        """Calls a read-only method; returns the decoded answer, whatever its ``result``."""
        query = urllib.parse.urlencode({"method": method, **params})
        try:
            with urllib.request.urlopen(f"{self.base}?{query}", timeout=self.timeout_s) as reply:
                body = reply.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as error:
            raise ClusterError(f"admin call {method} failed: {error}") from error
        try:
            return json.loads(body)
        except ValueError as error:
            raise ClusterError(f"admin call {method} answered non-JSON: {body[:300]!r}") from error

    def modify(self, method: str, **params: Any) -> dict[str, Any]:
        """Calls a modifying method; raises unless the call and every item in it succeeded."""
        answer = self.query(
            method, confModAuthToken=ADMIN_TOKEN, createUser=_USER, modifyUser=_USER, **params
        )
        failures = [
            item
            for item in answer.get("data") or []
            if isinstance(item, dict) and item.get("success") is False
        ]
        if not answer.get("result") or failures:
            raise ClusterError(
                f"admin call {method}({params}) was refused: "
                f"{answer.get('errMsg')} {failures or ''}".strip()
            )
        return answer
