"""DefSent+: sentence embeddings from definitions projected into a frozen space of entry embeddings."""

__version__ = "0.1.0"
