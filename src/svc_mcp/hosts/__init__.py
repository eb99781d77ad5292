"""Setting svc-mcp up in MCP hosts. `table`: one row per host, the only place a host is described;
`files`: a host's file read, merged and written atomically; `backups`: where the old file goes;
`runners`: what an entry runs; `entries`: the entry in the row's form, with install's refusals;
`cleartext`: no token over plain http to another machine; `plan`: install and uninstall;
`report`: what install says; `probe` and `expansion`: doctor's start of each entry, with only
svc-mcp's own variables."""
