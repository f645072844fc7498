"""The "Misuse the ticket" playground: its lab, switches, and the words and views of a played move.
"""
