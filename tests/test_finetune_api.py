"""`/finetune` and `/runs` through gradio_client against the launched app (API.md)."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

pytestmark = pytest.mark.slow


def test_finetune_streams_then_returns_the_contract_keys(client):
    job = client.submit("sentiment", "frozen", 3, 1e-2, 0, "glove", api_name="/finetune")
    result = job.result(timeout=300)
    updates = job.outputs()
    assert len(updates) >= 3  # streamed: loading, steps, test, result
    assert {"run_id", "task", "mode", "device", "seconds", "history", "eval"} <= set(result)
    assert result["task"] == "sentiment" and result["mode"] == "frozen" and result["status"] == "done"
    assert [h["step"] for h in result["history"]] == [1, 2, 3]
    assert all(isinstance(h["loss"], float) for h in result["history"])
    assert result["eval"]["n"] == 400 and 0.0 <= result["eval"]["accuracy"] <= 1.0
    assert result["model"] == "GloVe 6B 50d" and "package" in result["source"]

    runs = client.predict(api_name="/runs")["runs"]
    assert runs[0]["run_id"] == result["run_id"]  # newest first
    assert {"run_id", "task", "mode", "steps", "eval_accuracy", "created_at"} <= set(runs[0])
    assert runs[0]["steps"] == 3 and runs[0]["eval_accuracy"] == pytest.approx(result["eval"]["accuracy"])


@pytest.mark.parametrize("args, match", [
    (("poetry", "frozen", 5, 1e-3, 0), "unknown task"),
    (("sentiment", "melted", 5, 1e-3, 0), "unknown mode"),
    (("sentiment", "frozen", 0, 1e-3, 0), "at least 1"),
    (("sentiment", "frozen", 5, 0.0, 0), "positive"),
    (("sentiment", "frozen", 5, -0.1, 0), "positive"),
    (("sentiment", "frozen", 5, 1e300, 0), "too large"),
])
def test_bad_settings_are_clear_errors(client, args, match):
    with pytest.raises(AppError, match=match):
        client.predict(*args, api_name="/finetune")
    assert "runs" in client.predict(api_name="/runs")  # still serving
