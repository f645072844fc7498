"""Stores on disk and in Redis that the protocol core only knows by their contract
(`mrtr.redeemed.RedeemedStore`): the redeemed-ticket store in SQLite or Redis, and the one way this
project opens a shared SQLite file (`sqlite_files`). Never imports a web framework."""
