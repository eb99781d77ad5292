"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP: the loopback
check and uvicorn's fast HTTP protocol with a bounded request head; and one help style for every
command line (`help_style`). It imports neither side, so
the client never depends on the stubs, nor the stubs on the client."""
