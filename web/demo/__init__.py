"""Presenter mode: the round trip and every move as a full-screen deck.
"""
