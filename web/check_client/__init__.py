"""/check-client: a learner's own client pointed at a fresh grading endpoint, graded live.
"""
