"""The gateway: the MCP server over streamable HTTP, behind its gates (`app` builds it)."""
