"""Error pages for people: the one place an exception becomes a page or a fragment.
"""
