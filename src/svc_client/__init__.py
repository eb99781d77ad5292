"""The client core both backends use: settings, backends, transports, calls, errors, rows."""
