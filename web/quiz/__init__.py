"""The quick check: questions, answers by doing, and the items drawn per learner from the live server.
"""
