"""Install's and doctor's words for a token that would go over plain `http://` to a host that is
not loopback (the rule itself is the client core's: `svc_mcp.core.settings.cleartext_host`)."""

from __future__ import annotations

from svc_mcp.core.settings import INSECURE_HOSTS_VARIABLE


def refusal(what: str, url_variable: str, host: str) -> str:
    return (
        f"{what} would go in clear text over http:// to {host} ({url_variable}), which is not "
        f"loopback: use https://, or name the host in {INSECURE_HOSTS_VARIABLE} "
        f"(comma-separated) if the network between is yours"
    )
