"""The Space's entry point: ``python app.py [--model DIR_OR_REPO[@REV] ...]``.

One server: the Gradio page at ``/`` and LibreTranslate's REST routes (``POST /translate``, ``POST /detect``,
``GET /languages``; space/rest/routes.py).  Host and port come from Gradio's own GRADIO_SERVER_NAME /
GRADIO_SERVER_PORT; MODEL_IDS (comma-separated) and --model add models to the shipped ones.
"""
import argparse

from space.page.demo import build_demo, configure_torch
from space.serving.model_store import model_ids_from_env
from space.server import build_app, serve

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="local folder or Hub repo id[@revision]")
    parser.add_argument("--models-dir", default=None, help="shipped models folder (default: space/models)")
    args = parser.parse_args()
    configure_torch()
    demo = build_demo(model_ids_from_env(args.model), models_dir=args.models_dir)
    try:
        serve(build_app(demo), announce="Serving on {url} (the page, and LibreTranslate's /translate, /detect, /languages)",
              on_stop=demo.space_context.close)  # the decoding worker and the Playground's spares, with their queues
    except KeyboardInterrupt:  # Ctrl-C: uvicorn has shut down and raised it again; no traceback
        raise SystemExit(130)
    finally:
        demo.space_context.close()
