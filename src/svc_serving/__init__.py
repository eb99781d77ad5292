"""What the stub servers and the `svc-mcp --http` gateway share to serve HTTP, and the rules both
sides keep once: the loopback rule (`loopback`), uvicorn's fast HTTP protocol bounded in time,
bytes and connections (`bounded`, with what it answers by itself in `refusals`), the `OTEL_*`
settings reader (`otel_settings`), which names hold secrets (`secret_names`), the check that
refuses guessable secrets, the Landlock confinement and its start-up line (`confine_line`), the
contracts between the client and the stubs (`contracts`), the small reaches into libraries'
internals (`fence`), and one help style for every command line (`help_style`). It imports
neither side, so the client never depends on the stubs, nor the stubs on the client."""
