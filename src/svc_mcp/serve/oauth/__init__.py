"""The gateway as an OAuth 2.1 resource server: settings, the issuer's keys, tokens, the gate."""
