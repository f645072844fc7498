"""Catalogs of tools, prompts and resources that the core serves: the lesson's own (`lesson`: deploy,
with its confirmation) and the fixtures the official MCP conformance suite calls by name
(`conformance`). Handlers only: no transport, no settings, no I/O."""
