"""Attention station: weights, statistics, views, and the `/attention` endpoint.

Engine tests use a tiny random BERT (2 layers, 4 heads, hidden 32) with the packaged
MiniLM tokenizer; one test checks the packaged MiniLM itself against its own
`output_attentions`.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from engine import attention as att
from engine import attention_views as views
from engine.errors import UserInputError


class TinyBundle:
    def __init__(self, model, tokenizer, max_length=512):
        self.model, self.tokenizer, self.max_length = model, tokenizer, max_length


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from engine.models.mlm import minilm_base_dir

    return AutoTokenizer.from_pretrained(str(minilm_base_dir()))


@pytest.fixture(scope="module")
def tiny(tokenizer):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128)
    config._attn_implementation = "eager"
    return TinyBundle(BertModel(config).eval(), tokenizer)


def direct(bundle, text, max_length=att.MAX_TOKENS):
    enc = bundle.tokenizer(text, return_tensors="pt", truncation=True, max_length=max_length)
    with torch.no_grad():
        out = bundle.model(**enc, output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()


def test_rows_sum_to_one_and_match_output_attentions(tiny):
    r = att.compute(tiny, "The cat sat on the mat because it was tired.")
    assert r.attention.shape == (2, 4, len(r.tokens), len(r.tokens))
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]"
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.attention, direct(tiny, "The cat sat on the mat because it was tired."), atol=1e-6)


def test_packaged_minilm_matches_its_own_output_attentions():
    from engine.registry import REGISTRY

    loaded = REGISTRY.get("contextual_bert", "all-minilm-l6-v2")
    text = "The animal didn't cross the street because it was too tired."
    r = att.run(text, "all-minilm-l6-v2")
    assert (r.layers, r.heads) == (6, 12)
    assert r.model == loaded.label()
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.attention, direct(loaded.obj, text), atol=1e-5)
    assert att.run(text, "all-minilm-l6-v2") is r  # memoised: clicking through heads never reruns


def test_long_text_is_cut_and_says_so(tiny):
    r = att.compute(tiny, "word " * 500)
    assert len(r.tokens) == att.MAX_TOKENS and r.truncated and r.total_tokens == 502
    assert any("first 64" in n for n in r.notes)


@pytest.mark.parametrize("text", ["", "   ", "x" * (att.MAX_CHARS + 1)])
def test_bad_text_is_a_clear_error(tiny, text):
    with pytest.raises(UserInputError):
        att.compute(tiny, text)


def test_emoji_and_cjk(tiny):
    r = att.compute(tiny, "I love 🍕 and 北京")
    assert "[UNK]" in r.tokens and any("[UNK]" in n for n in r.notes)
    assert "北" in r.tokens and "京" in r.tokens
    with pytest.raises(UserInputError):  # nothing the tokenizer can read
        att.compute(tiny, "\u200b\u200b")


def _result(matrix: np.ndarray, tokens: list[str]) -> att.AttentionResult:
    return att.AttentionResult("m", "package", "m", tokens, matrix[None, None].astype(np.float32))


def test_statistics_on_known_patterns():
    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    T = len(tokens)
    eye = _result(np.eye(T), tokens)
    s = att.head_stats(eye)
    assert s["self"][0, 0] == pytest.approx(1.0) and s["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert s["distance"][0, 0] == pytest.approx(0.0)
    prev = np.eye(T, k=-1)
    prev[0, 0] = 1.0
    s = att.head_stats(_result(prev, tokens))
    assert s["prev"][0, 0] == pytest.approx(1.0) and s["next"][0, 0] == pytest.approx(0.0)
    assert att.head_kind(s, 0, 0) == "previous token"
    sink = np.zeros((T, T))
    sink[:, -1] = 1.0
    s = att.head_stats(_result(sink, tokens))
    assert s["sep"][0, 0] == pytest.approx(1.0) and att.head_kind(s, 0, 0) == "[SEP] sink"
    uniform = _result(np.full((T, T), 1 / T), tokens)
    assert att.head_stats(uniform)["entropy"][0, 0] == pytest.approx(np.log2(T))


def test_stats_rows_sort_and_reject_unknown_columns(tiny):
    r = att.compute(tiny, "one two three four five")
    rows = att.stats_rows(r, "sep")
    assert len(rows) == r.layers * r.heads
    assert [x["sep"] for x in rows] == sorted((x["sep"] for x in rows), reverse=True)
    with pytest.raises(UserInputError):
        att.stats_rows(r, "nonsense")
    with pytest.raises(UserInputError):
        att.check_head(r, 2, 0)


def test_overview_grid_click_maps_back_to_each_head(tiny):
    r = att.compute(tiny, "the the the cat")
    img, layout = views.overview_image(r, selected=(1, 3))
    assert img.size[0] >= layout.left + r.heads * layout.tile
    for layer in range(r.layers):
        for head in range(r.heads):
            x = layout.left + head * (layout.tile + layout.gap) + layout.tile // 2
            y = layout.top + layer * (layout.tile + layout.gap) + layout.tile // 2
            assert views.grid_cell(x, y, layout) == (layer, head)
    assert views.grid_cell(2, 2, layout) is None
    assert views.grid_layout(r.layers, r.heads) == layout


def test_heatmap_keeps_repeated_tokens_apart(tiny):
    r = att.compute(tiny, "the the the cat")
    fig = views.heatmap_figure(r, 1, 2)
    assert fig.data[0].z.shape == (len(r.tokens), len(r.tokens))
    assert list(fig.layout.yaxis.ticktext) == r.tokens and fig.layout.height
    assert views.stats_figure(r, "entropy").layout.height


def test_head_view_page_is_standalone_and_safe(tiny):
    r = att.compute(tiny, "a </script><script>alert(1)</script> b")
    page = views.head_view_html(r, 1)
    assert not re.search(r"(src|href|url)\s*[=(]\s*[\"']?(https?:)?//", page) and "<link" not in page
    assert "import(" not in page and "fetch(" not in page
    assert page.count("<script>") == 2 and "PTX_ATTENTION" in page
    path = views.save_head_view(page)
    assert path.read_text(encoding="utf-8") == page
    assert "srcdoc=" in views.head_view_iframe(page, len(r.tokens))


def test_api_attention(client):
    out = client.predict("The cat sat on the mat.", "", api_name="/attention")
    assert {"model", "tokens", "layers", "heads", "attention"} <= set(out)
    a = np.array(out["attention"])
    T = len(out["tokens"])
    assert a.shape == (out["layers"], out["heads"], T, T)
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-3)
    assert "MiniLM" in out["model"] or "BERT" in out["model"]


@pytest.mark.parametrize("text", ["", "x" * 10_001])
def test_api_attention_bad_input_keeps_serving(client, text):
    with pytest.raises(Exception, match="empty|limit"):
        client.predict(text, "", api_name="/attention")
    assert client.predict("still here", "", api_name="/attention")["tokens"][1] == "still"
