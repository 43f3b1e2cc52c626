"""The directory kdispatch-run prepends to PYTHONPATH (its sitecustomize.py)."""
