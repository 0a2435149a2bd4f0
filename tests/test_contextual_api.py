"""`/contextual` through gradio_client against the launched app (offline, packaged MiniLM)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.contextual import MAX_SENTENCES, presets

pytestmark = pytest.mark.slow

BANK = presets()["bank"].text


def test_contextual_bank_preset(client):
    out = client.predict(BANK, "bank", "", api_name="/contextual")
    assert {"model", "layers", "occurrences", "similarity", "skipped"} <= set(out)
    assert "MiniLM" in out["model"] or "BERT" in out["model"]
    n = len(out["occurrences"])
    assert n == 16 and out["skipped"] == []
    assert out["occurrences"][0]["sentence"] == 0 and "river" in out["occurrences"][0]["text"]
    sim = np.array(out["similarity"])
    assert sim.shape == (out["layers"], n, n)
    np.testing.assert_allclose(np.diagonal(sim, axis1=1, axis2=2), 1.0, atol=1e-4)
    np.testing.assert_allclose(sim, np.swapaxes(sim, 1, 2), atol=1e-5)
    if out["layers"] == 7:  # the packaged MiniLM: perfect split from layer 2 on
        assert out["curves"]["split_accuracy"][2:] == [1.0] * 5


def test_contextual_static_and_skips(client):
    text = "The bank opened.\nWe went banking.\n\n银行 🏦 bank!"
    out = client.predict(text, "Bank", "static", api_name="/contextual")
    assert out["layers"] == 1 and out["skipped"] == [1]
    assert out["curves"]["silhouette"] == [0.0]
    assert any("banking" in note for note in out["notes"])


@pytest.mark.parametrize("text, word, model, message", [
    ("The river is wide.", "bank", "bert", "not in any of the sentences"),
    ("Banking and an embankment.", "bank", "bert", "only inside longer words"),
    ("\n".join(["The bank is open."] * 200), "bank", "bert", f"at most {MAX_SENTENCES}"),
    ("The bank.", "", "bert", "type the word"),
    ("The bank.", "bank", "gpt-9", "unknown model"),
])
def test_contextual_bad_input_is_a_clear_error(client, text, word, model, message):
    with pytest.raises(Exception, match=message):
        client.predict(text, word, model, api_name="/contextual")


def test_long_sentence_is_truncated_and_server_keeps_serving(client):
    long = "The bank " + "of the river " * 1000
    assert len(long) >= 10_000
    out = client.predict(long + "\nThe bank lent money.", "bank", "bert", api_name="/contextual")
    assert out["truncated"] == [0] and len(out["occurrences"]) == 2


def test_elmo_works_or_says_unavailable(client):
    try:
        out = client.predict(BANK, "bank", "elmo", api_name="/contextual")
    except Exception as exc:  # until the ELMo model exists
        assert "unavailable" in str(exc).lower()
    else:
        assert out["layers"] == 3 and len(out["occurrences"]) == 16
