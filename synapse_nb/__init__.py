"""synapse_nb: memory for LLM agents and the people who steer them, living in Jupyter."""

from __future__ import annotations

from synapse_nb._version import __version__
from synapse_nb.errors import SynapseError

__all__ = ["SynapseError", "__version__"]
