"""LibreTranslate's REST API as a Ray Serve application: N replicas behind Serve's HTTP proxy, each one the
routes of ``python app.py`` (``server.rest_app``: the same handlers, limits and answers) over its own
``SpaceContext`` (the models loaded once per replica, its own decoding worker).  The Gradio page stays the
single-process app.  Ray is the optional extra ``scale`` (``pip install 'transformer_hub[scale]'``).

    python -m space.scale --replicas 2                 # a local cluster: http://127.0.0.1:8000/translate
    serve deploy space/serve.yaml                      # a running cluster (autoscaling from the file)

``app_builder`` is the application builder the config file's ``import_path`` names.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, Iterable, List, Optional

INSTALL = "pip install 'transformer_hub[scale]'"
DEPLOYMENT = "rest"  # the deployment's name (space/serve.yaml's deployments refer to it)


def require_serve():
    """``ray.serve``, or a ``SystemExit`` line naming the extra that installs it."""
    try:
        from ray import serve
    except ImportError:
        raise SystemExit(f"space.scale: error: Ray Serve is not installed: {INSTALL}") from None
    return serve


class RestReplica:
    """One replica: its ``SpaceContext`` built (and its decoder started) once; Serve asks it for its ASGI app."""

    def __init__(self, models_dir: Optional[str] = None, model_ids: Iterable[str] = ()) -> None:
        from .page.demo import configure_torch, serving_context

        configure_torch()  # one intra-op thread, as app.py: the replicas, not torch, share out the cores
        self.context = serving_context(list(model_ids), models_dir=models_dir)

    def __serve_build_asgi_app__(self):
        from .server import rest_app

        return rest_app(self.context)

    def check_health(self) -> None:
        """Serve restarts a replica whose decoding worker has died."""
        if self.context.decoder is None:
            raise RuntimeError("no decoder")

    def __del__(self) -> None:
        context = getattr(self, "context", None)
        if context is not None and context.decoder is not None:
            context.decoder.close()


def deployment(replicas: Optional[int] = 1, autoscaling: Optional[Dict[str, Any]] = None):
    """The Serve deployment of ``RestReplica``: ``replicas`` of them, or ``autoscaling`` (Serve's
    ``autoscaling_config``), one CPU each."""
    serve = require_serve()
    options: Dict[str, Any] = dict(name=DEPLOYMENT, ray_actor_options={"num_cpus": 1}, max_ongoing_requests=64)
    options.update({"autoscaling_config": autoscaling} if autoscaling else {"num_replicas": replicas})
    return serve.deployment(serve.ingress()(RestReplica), **options)


def app_builder(args: Dict[str, Any]):
    """Serve's application builder (``import_path: space.scale:app_builder``); ``args``: ``models_dir``,
    ``model_ids`` (a list), ``replicas`` (the config file's ``deployments`` section overrides them)."""
    args = dict(args or {})
    return deployment(int(args.get("replicas", 1))).bind(models_dir=args.get("models_dir"),
                                                          model_ids=list(args.get("model_ids") or ()))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m space.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="replicas, one CPU each (default 2)")
    parser.add_argument("--models-dir", default=None, help="shipped models folder (default: space/models)")
    parser.add_argument("--model", action="append", default=[], help="local folder or Hub repo id[@revision]")
    parser.add_argument("--host", default="127.0.0.1", help="where Serve's proxy listens (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="its port (default 8000)")
    parser.add_argument("--address", default=None, help="a running Ray cluster ('auto'); default: a local one")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error(f"--replicas must be >= 1, got {args.replicas}")
    serve = require_serve()
    import ray

    ray.init(address=args.address, include_dashboard=False)
    serve.start(http_options={"host": args.host, "port": args.port})
    models_dir = os.path.abspath(args.models_dir) if args.models_dir else None  # replicas run elsewhere
    app = deployment(args.replicas).bind(models_dir=models_dir, model_ids=args.model)
    serve.run(app, name="libretranslate", route_prefix="/")
    print(f"Serving LibreTranslate's REST API on http://{args.host}:{args.port}/ ({args.replicas} replicas); "
          "Ctrl-C stops it", flush=True)
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
