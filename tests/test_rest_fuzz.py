"""The REST routes fuzzed from their own OpenAPI description (``/openapi.json``) with schemathesis.

Bounded: a fixed number of generated requests per route (valid and invalid ones), against ``build_app`` on
loopback.  No answer may be a 5xx, and every answer must be one the description allows (status, content type,
body schema); invalid requests must be refused with a 4xx.
"""
from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (content_type_conformance, negative_data_rejection,  # noqa: E402
                                               response_schema_conformance, status_code_conformance)

from helpers.space_fixtures import model_for_tests, serving
from space.hosting.limits import Limits  # noqa: E402
from space.rest.routes import RestSettings  # noqa: E402

LIMITS = Limits(max_chars=200, max_lines=4, max_sentences=4, max_output_tokens=12, max_beam=4, max_models=2)
EXAMPLES = 40  # per route and generation mode; about 30 s on one core
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          negative_data_rejection]


@pytest.fixture(scope="module")
def served(request):
    from helpers.corpus import cache_folder

    with serving([model_for_tests(cache_folder(request, "space"))], LIMITS,
                 RestSettings(max_body_bytes=8192, queue=8)) as running:
        yield running


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_rest_routes_answer_as_their_description_says(served, mode):
    """Every route, ``EXAMPLES`` generated requests each (schemathesis's strategies driven by hypothesis
    directly: its pytest plugin does not run under this pytest)."""
    from hypothesis import given
    from schemathesis.generation.modes import GenerationMode

    schema = schemathesis.openapi.from_url(served.url + "openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert sorted(op.path for op in operations) == ["/detect", "/download_file/{name}", "/frontend/settings",
                                                    "/health", "/languages", "/suggest", "/translate",
                                                    "/translate_file"]
    for operation in operations:
        if mode == "negative" and operation.method.upper() == "GET":
            continue  # /languages takes no input to get wrong

        @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def answers_as_described(case):
            case.call_and_validate(base_url=served.url.rstrip("/"), checks=CHECKS, timeout=60)

        answers_as_described()
