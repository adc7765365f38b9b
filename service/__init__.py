"""ctxlamp's background side: the engine, the channels, and everything around them.

One package per job (docs/architecture.md); `paths` and `config` are shared by all.
"""
__version__ = "0.1.0"
