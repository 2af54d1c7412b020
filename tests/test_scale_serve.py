"""The REST API as a Ray Serve application (space/scale.py) answers as ``python app.py``'s REST routes do: the same
status and JSON for /translate, /detect, /languages and for hostile bodies; space/serve.yaml is a valid config."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from helpers.space_fixtures import free_port, serving

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"


def _serve():
    try:
        import ray
        from ray import serve
    except ImportError:
        pytest.skip("Ray Serve is not installed (pip install 'transformer_hub[scale]')")
    return ray, serve


def call(url: str, path: str, body=None, content_type: str = "application/json"):
    """(status, parsed JSON) of one request (GET without ``body``; bytes go as they are, else JSON)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": content_type} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def both():
    """(app.py's server URL, the Serve application's URL), both over the shipped models."""
    ray, serve = _serve()
    from space.scale import deployment

    with serving([], models_dir=MODELS) as reference:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        port = free_port()
        try:
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            serve.run(deployment(1).bind(models_dir=str(MODELS)), name="libretranslate", route_prefix="/")
            yield reference.url, f"http://127.0.0.1:{port}/"
        finally:
            serve.shutdown()
            ray.shutdown()


REQUESTS = [
    ("/languages", None),
    ("/detect", {"q": "Zwei Hunde spielen im Schnee."}),
    ("/translate", {"q": "A dog runs on the beach.", "source": "auto", "target": "de"}),
    ("/translate", {"q": ["Un homme fait du vélo.", "Two children play.", ""], "source": "auto", "target": "de",
                    "alternatives": 2}),
    ("/translate", {"q": "Ein Mann fährt Fahrrad.", "source": "de", "target": "fr", "format": "html"}),
]
HOSTILE = [
    ("/translate", b'{"q": "unterminated', "application/json"),
    ("/translate", {"source": "en", "target": "de"}, "application/json"),
    ("/translate", {"q": "A dog.", "source": "en", "target": "xx"}, "application/json"),
    ("/translate", {"q": 42, "source": "en", "target": "de"}, "application/json"),
    ("/translate", {"q": "A dog.", "source": "en", "target": "de", "alternatives": "many"}, "application/json"),
    ("/translate", {"q": "word " * 5000, "source": "en", "target": "de"}, "application/json"),
    ("/detect", b"\xff\xfe\x00garbage", "application/x-www-form-urlencoded"),
]


@pytest.mark.slow
@pytest.mark.parametrize("path, body", REQUESTS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(REQUESTS)])
def test_the_serve_app_answers_as_the_rest_app_does(both, path, body):
    reference, scaled = both
    status, answer = call(reference, path, body)
    assert status == 200
    assert call(scaled, path, body) == (status, answer)


@pytest.mark.slow
@pytest.mark.parametrize("path, body, content_type", HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_a_hostile_body_gets_the_same_4xx(both, path, body, content_type):
    reference, scaled = both
    status, answer = call(reference, path, body, content_type)
    assert 400 <= status < 500 and set(answer) == {"error"}
    assert call(scaled, path, body, content_type) == (status, answer)


def test_the_serve_config_file_is_valid_and_builds_the_application():
    _serve()
    import yaml
    from ray.serve.schema import ServeDeploySchema

    from space.scale import DEPLOYMENT, app_builder

    config = ServeDeploySchema.model_validate(yaml.safe_load((ROOT / "space" / "serve.yaml").read_text()))
    (application,) = config.applications
    assert application.import_path == "space.scale:app_builder" and application.route_prefix == "/"
    assert [d.name for d in application.deployments] == [DEPLOYMENT]
    assert application.deployments[0].autoscaling_config["max_replicas"] >= 2
    built = app_builder(application.args)
    assert type(built).__name__ == "Application"
