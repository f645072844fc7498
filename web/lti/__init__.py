"""MRTR Lab as an LTI 1.3 tool: launches, key sets, activities and scores back to the platform.
"""
