"""The quick check as an embeddable widget and oEmbed.
"""
