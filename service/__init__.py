"""ctxlamp's background side: the engine, the channels, and everything around them."""
__version__ = "0.1.0"
