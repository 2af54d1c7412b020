"""``GET /docs``: the REST API's description as one self-contained page (no scripts, nothing fetched from
elsewhere), written from the same OpenAPI document ``/spec`` and ``/openapi.json`` serve."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, List

STYLE = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
         "code,pre{background:#f4f4f4;padding:.1rem .3rem;border-radius:3px}pre{padding:.6rem;overflow:auto}"
         "h2{border-top:1px solid #ddd;padding-top:1rem}td,th{text-align:left;padding:.2rem .6rem;vertical-align:top}")


def _resolve(schema: Dict[str, Any], spec: Dict[str, Any]) -> Dict[str, Any]:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/"):
        node: Any = spec
        for part in ref[2:].split("/"):
            node = node.get(part, {})
        return node
    return schema


def _fields(body: Dict[str, Any], spec: Dict[str, Any]) -> List[str]:
    rows = []
    for kind, content in body.get("content", {}).items():
        schema = _resolve(content.get("schema", {}), spec)
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            prop = _resolve(prop, spec)
            shape = prop.get("enum") or prop.get("type") or [_resolve(p, spec).get("type")
                                                             for p in prop.get("anyOf", [])]
            rows.append(f"<tr><td><code>{html.escape(name)}</code>{' (required)' if name in required else ''}</td>"
                        f"<td>{html.escape(json.dumps(shape))}</td>"
                        f"<td>{html.escape(prop.get('description', ''))}</td></tr>")
        return [f"<p>Body: <code>{html.escape(kind)}</code> (also the other forms LibreTranslate reads)</p>"
                "<table><tr><th>field</th><th>type</th><th></th></tr>" + "".join(rows) + "</table>"]
    return []


def render(spec: Dict[str, Any]) -> str:
    """The page for the OpenAPI document ``spec``."""
    info = spec.get("info", {})
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(info.get('title', 'API'))}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(info.get('title', 'API'))}</h1>"
             f"<p>Version {html.escape(str(info.get('version', '')))}. The machine-readable description: "
             "<a href='spec'>/spec</a>. Errors are <code>{\"error\": \"...\"}</code>.</p>"]
    for path, methods in spec.get("paths", {}).items():
        for method, operation in methods.items():
            parts.append(f"<h2><code>{method.upper()} {html.escape(path)}</code></h2>"
                         f"<p>{html.escape(operation.get('summary', ''))}</p>")
            parts += _fields(operation.get("requestBody", {}), spec)
            answers = ", ".join(f"<code>{code}</code> {html.escape(r.get('description', ''))}"
                                for code, r in operation.get("responses", {}).items())
            parts.append(f"<p>Answers: {answers}</p>")
    return "".join(parts) + "</body></html>"
