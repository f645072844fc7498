"""The out-of-band page a URL-mode question sends the user to.
"""
