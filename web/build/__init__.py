"""The build lessons: steps, the pasted report, the in-page checker's files and its Python side on Pyodide, and the
learner's client run against the grading flows.
"""
