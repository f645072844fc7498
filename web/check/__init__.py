"""/check: the server checker in the browser, its page, its background runs and its guards.
"""
