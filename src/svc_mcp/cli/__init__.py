"""The `svc-mcp` command line (`main`), its tool listing and the terminal side of a tool call. Each
face is imported only when its command runs, so `svc-mcp tools` never loads `mcp`."""
