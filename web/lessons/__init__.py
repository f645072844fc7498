"""The course home, the lesson pages and the data behind their live figures.
"""
