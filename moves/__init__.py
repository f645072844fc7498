"""moves: the misuse-move engine. A move is data (`moves/moves.toml`); the engine plays it against a target.

Builds on `mrtr` (the protocol) and never the other way round. Never imports Flask.
"""
