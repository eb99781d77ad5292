"""Setting svc-mcp up in MCP hosts: the host table (`table`), the host's file (`files`), what an
entry runs (`runners`), the entry itself (`entries`), the install/uninstall plan (`plan`), and
doctor's start of each entry as its host would (`probe`)."""
