"""One manager per memory kind; the vault exposes them as ``vault.memories``, ``vault.checkpoints``, ..."""
