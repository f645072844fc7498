"""The peers' fixtures, defined in fixtures.py so other test folders can import them too."""

from tests.peers.fixtures import *  # noqa: F403
