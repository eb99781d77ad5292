"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP, and the rules both
sides keep once: the loopback rule (`loopback`), uvicorn's fast HTTP protocol bounded in time,
bytes and connections (`bounded`), the `OTEL_*` settings reader (`otel_settings`), which names
hold secrets (`secret_names`), the check that refuses guessable secrets, the Landlock confinement,
and one help style for every command line (`help_style`). It imports neither side, so the client
never depends on the stubs, nor the stubs on the client."""
