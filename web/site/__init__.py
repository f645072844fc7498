"""What every feature shares, below them all: the course read from lessons/, the long-lived services, the guards
every request passes (inputs, admission, security headers, proxies), htmx's headers, compression, the sequence
diagram and the words for moves. Nothing here imports a feature; web/blueprints.py and web/templating.py, above
every feature, assemble them.
"""
