"""/mcp: the real MRTR server's Streamable HTTP endpoint, both protocol eras, over the `mrtr` core.
"""
