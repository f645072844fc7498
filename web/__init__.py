"""MRTR Lab's web layer: one blueprint per feature, thin adapters around the `mrtr` core."""
