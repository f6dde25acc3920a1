"""The test cluster's admin calls, on top of the public :class:`tubemq.AdminClient`.

The harness needs a few raw calls the public client does not offer (broker setup, topic
settings, group flow control), and reports every failure as a :class:`ClusterError`; the
transport, the token handling and the error checks are the public client's.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tubemq.admin import AdminClient as PublicAdminClient
from tubemq.cluster.config_files import ADMIN_TOKEN
from tubemq.cluster.errors import ClusterError
from tubemq.errors import TubeMQError


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        # A standby master redirects admin calls; the caller wants to know, not to follow.
        return None


class AdminClient(PublicAdminClient):
    """The public client with the cluster's token, plus raw ``query``/``modify``.
    Without ``follow_redirects`` a redirect (a standby master's answer) raises."""

    def __init__(
        self, web_address: str, timeout_s: float = 10.0, follow_redirects: bool = True
    ) -> None:
        super().__init__(web=web_address, token=ADMIN_TOKEN, timeout=timeout_s)
        if not follow_redirects:
            self._opener = urllib.request.build_opener(_NoRedirects())

    def query(self, method: str, **params: Any) -> dict[str, Any]:
        """Calls a read-only method; returns the decoded answer, whatever its ``result``."""
        try:
            return self._get(self.web_address, method, params)
        except TubeMQError as error:
            raise ClusterError(f"admin call {method} failed: {error}") from error

    def modify(self, method: str, **params: Any) -> dict[str, Any]:
        """Calls a modifying method; raises unless the call and every item in it succeeded."""
        try:
            return self._modify(method, **params)
        except TubeMQError as error:
            raise ClusterError(f"admin call {method}({params}) was refused: {error}") from error

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
