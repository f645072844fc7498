"""Targets the move engine plays against: `lab` (in process), `http` and `stdio` (remote servers)."""
