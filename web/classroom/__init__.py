"""The live class: the presenter's screen, learners' phones, the live quiz and the attack round.
"""
