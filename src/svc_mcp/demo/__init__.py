"""`svc-mcp demo`: the stubs started with demo data (`stubs`), the MCP session against them
(`run`), what the terminal shows (`view`) and the trace it can print (`trace`)."""
