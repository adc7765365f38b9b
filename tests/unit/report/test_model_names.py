"""Every model of the price table has a name of its own (service/client/words.py's `model_name`), so the
report never sums two models under one name."""
from __future__ import annotations

import json
from pathlib import Path

from service.client.words import SHARED_NAMES, model_name

TABLE = json.loads((Path(__file__).resolve().parents[3] / "resources" / "prices.json").read_text())["models"]


def test_every_model_of_the_price_table_has_a_name_no_other_model_has():
    names = {model: model_name(model) for model in TABLE}
    assert len(set(names.values())) == len(names), sorted(names.items(), key=lambda kv: kv[1])
    assert len(set(model_name(m + "-fast") for m in TABLE)) == len(TABLE)
    for model, name in names.items():
        assert name[0].isupper() and not name.startswith("Claude") and "-" not in name, (model, name)


def test_an_alias_is_named_as_its_model_and_no_other_model_answers_to_its_name():
    own = {model_name(m): m for m in TABLE}
    for model, row in TABLE.items():
        for alias in row.get("aliases", []):
            name = model_name(alias)
            if alias.endswith("-latest") and model_name(model).split(" (")[0] in SHARED_NAMES:
                assert name.endswith(" (latest)") and name not in own  # which release "latest" is: not said
            else:
                assert name == model_name(model), (alias, model)


def test_old_ids_read_as_their_family_and_version_and_a_shared_name_as_its_release_month():
    assert model_name("claude-3-7-sonnet-20250219") == "Sonnet 3.7"
    assert model_name("claude-3-5-haiku-20241022") == "Haiku 3.5"
    assert model_name("claude-3-opus-20240229") == "Opus 3"
    assert model_name("claude-3-haiku-20240307") == "Haiku 3"
    assert model_name("claude-3-5-sonnet-20241022") == "Sonnet 3.5 (Oct 2024)"
    assert model_name("claude-3-5-sonnet-20240620") == "Sonnet 3.5 (Jun 2024)"
    assert model_name("claude-opus-4-0") == model_name("claude-opus-4-20250514") == "Opus 4"


def test_the_report_text_keeps_two_old_models_apart():
    from service.cli.report import _spend_lines

    sp = {"total_usd": 3.0, "calls": 3, "subagents_usd": 0.0,
          "by_model": {"claude-3-5-haiku-20241022": 1.0, "claude-3-5-sonnet-20241022": 1.25,
                       "claude-3-5-sonnet-20240620": 0.75}}
    billed = [line.strip() for line in _spend_lines(sp)[1:]]
    assert [" ".join(line.split()) for line in billed] == [
        "Sonnet 3.5 (Oct 2024) $1.25", "Haiku 3.5 $1.00", "Sonnet 3.5 (Jun 2024) $0.75"]
