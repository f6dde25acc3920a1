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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        # A standby master redirects admin calls; the caller wants to know, not to follow.
        return None


class AdminClient:
    def __init__(
        self, web_address: str, timeout_s: float = 10.0, follow_redirects: bool = True
    ) -> None:
        self.base = f"http://{web_address}/webapi.htm"
        self.timeout_s = timeout_s
        self._opener = (
            urllib.request.build_opener()
            if follow_redirects
            else urllib.request.build_opener(_NoRedirects())
        )

    def query(self, method: str, **params: Any) -> dict[str, Any]:
        """Calls a read-only method; returns the decoded answer, whatever its ``result``.
        Without ``follow_redirects`` a redirect (a standby master's answer) raises."""
        query = urllib.parse.urlencode({"method": method, **params})
        try:
            with self._opener.open(f"{self.base}?{query}", timeout=self.timeout_s) as reply:
                body = reply.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as error:
            raise ClusterError(f"admin call {method} failed: {error}") from error
        try:
            answer = json.loads(body)
        except ValueError as error:
            raise ClusterError(f"admin call {method} answered non-JSON: {body[:300]!r}") from error
        if not isinstance(answer, dict):
            raise ClusterError(
                f"admin call {method} answered {type(answer).__name__}: {body[:300]!r}"
            )
        return answer

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

    # -- consumer-group flow control (behaviour.md §6) -------------------------------------
    def set_group_flow_control(
        self, group: str, rules: str | list[dict[str, Any]], qry_priority_id: int | None = None
    ) -> None:
        """Enables ``rules`` (a rule JSON array, or its Python form) for ``group``,
        replacing any rules it had; members learn them with their next heartbeat."""
        params: dict[str, Any] = {
            "groupName": group,
            "flowCtrlInfo": rules if isinstance(rules, str) else json.dumps(rules),
            "statusId": 1,
        }
        if qry_priority_id is not None:
            params["qryPriorityId"] = qry_priority_id
        known = self.query("admin_query_group_flow_control_rule", groupName=group)
        exists = any(item.get("groupName") == group for item in known.get("data") or [])
        self.modify(
            "admin_upd_group_flow_control_rule" if exists else "admin_set_group_flow_control_rule",
            **params,
        )

    def remove_group_flow_control(self, group: str) -> None:
        """Drops the flow-control rules of ``group`` (no-op if it has none)."""
        known = self.query("admin_query_group_flow_control_rule", groupName=group)
        if any(item.get("groupName") == group for item in known.get("data") or []):
            self.modify("admin_rmv_group_flow_control_rule", groupName=group)
