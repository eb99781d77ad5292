"""The client core both backends use: settings, the backend table, `ToolSpec`, argument checks,
transports, calls, typed errors and exit codes. It imports nothing of the faces above it."""
