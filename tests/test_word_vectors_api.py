"""`/analogy`, `/neighbors`, `/word_map` through gradio_client against the launched app
(API.md): the listed keys, the model named, bad input as a readable error, the server
still serving afterwards."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.slow


def test_analogy_contract(client):
    out = client.predict("king - man + woman", 5, "", api_name="/analogy")
    assert {"model", "positive", "negative", "results"} <= set(out)
    assert "GloVe" in out["model"] and out["positive"] == ["king", "woman"] and out["negative"] == ["man"]
    assert out["results"][0]["word"] == "queen" and len(out["results"]) == 5
    assert all(set(r) >= {"word", "score"} and isinstance(r["score"], float) for r in out["results"])
    assert not {"king", "man", "woman"} & {r["word"] for r in out["results"]}
    same = client.predict("man : king :: woman : ?", 5, "glove-6b-50d", api_name="/analogy")
    assert same["results"] == out["results"]


def test_neighbors_contract(client):
    out = client.predict("frog", 7, "", api_name="/neighbors")
    assert {"model", "word", "results"} <= set(out) and out["word"] == "frog"
    assert len(out["results"]) == 7 and "frog" not in [r["word"] for r in out["results"]]
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)


def test_word_map_contract_and_umap(client):
    out = client.predict("man:woman, king:queen, uncle:aunt, zzqxv", "pca", "", api_name="/word_map")
    assert {"model", "method", "points", "missing"} <= set(out)
    assert out["method"] == "pca" and out["missing"] == ["zzqxv"]
    assert [p["word"] for p in out["points"]] == ["man", "woman", "king", "queen", "uncle", "aunt"]
    assert all(isinstance(p["x"], float) and isinstance(p["y"], float) for p in out["points"])
    two = client.predict("paris rome", "umap", "", api_name="/word_map")
    assert two["method"] == "pca" and "UMAP needs" in two["note"]
    words = "cat dog horse cow apple pear banana grape red blue green one two three"
    deadline = time.time() + 300  # the first UMAP request compiles in the background and answers with PCA
    while time.time() < deadline:
        umap = client.predict(words, "umap", "", api_name="/word_map")
        if umap["method"] == "umap":
            break
        assert "compiling" in umap["note"]
        time.sleep(1)
    assert umap["method"] == "umap" and len(umap["points"]) == 14


@pytest.mark.parametrize("endpoint, args, message", [
    ("/analogy", ("", 5, ""), "empty"),
    ("/analogy", ("king - - man", 5, ""), "two operators"),
    ("/analogy", ("+", 5, ""), "no words"),
    ("/analogy", ("kingg - man + woman", 5, ""), "kingg"),
    ("/analogy", ("😀 - man + 北京", 5, ""), "Not in the vocabulary"),
    ("/analogy", ("king", 5, ""), "one word"),
    ("/analogy", ("king - man + woman", 5, "nope"), "unknown static_vectors model"),
    ("/neighbors", ("x" * 10_000, 5, ""), "characters"),
    ("/word_map", (" ".join(f"w{i}" for i in range(500)), "pca", ""), "at most 200"),
    ("/word_map", ("cat dog", "tsne", ""), "pca' or 'umap"),
])
def test_bad_input_is_a_readable_error_and_the_server_keeps_serving(client, endpoint, args, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=message):
        client.predict(*args, api_name=endpoint)
    assert client.predict("paris", 1, "", api_name="/neighbors")["results"]
