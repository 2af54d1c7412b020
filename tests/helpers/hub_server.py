"""A local, in-memory **test double** of the Hugging Face Hub's HTTP protocol.

The real Hub (huggingface.co) cannot be reached from the machines this
project is tested on, so these tests never talk to it.  Instead,
:class:`HubServer` answers, on ``127.0.0.1`` and a free port, the subset of
the Hub's HTTP API that ``huggingface_hub`` 2.x calls for:

* ``create_repo`` / ``delete_repo``    POST /api/repos/create, /api/repos/delete
* ``upload_folder`` / ``create_commit``  POST /api/{type}s/{repo}/preupload/{rev} (every file "regular"),
                                        POST /api/{type}s/{repo}/commit/{rev} (NDJSON: header, file (base64),
                                        deletedFile, deletedFolder; ``lfsFile`` is refused: preupload never
                                        asks for LFS)
* ``hf_hub_download``                    HEAD/GET /{repo}/resolve/{rev}/{path} (also /spaces/..., /datasets/...) with
                                        ETag, X-Repo-Commit, Content-Length and Range support
* repo info, refs, branches, tags, tree listing, paths-info, commits, whoami
* a few Space endpoints (runtime, restart, secrets, variables, hardware), so a Gradio Space deploy can be tested.

Files live in memory per ``(repo_type, repo_id, revision)`` (see :attr:`HubServer.files`); every commit is kept,
so a commit sha is a valid revision.  Errors carry the Hub's ``X-Error-Code`` headers (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``), so the client raises the same exception types as with the real Hub.

Failure injection: :meth:`HubServer.fail_next` makes the next N requests whose path matches a pattern answer an
HTTP error, or stall (to exercise client timeouts), so retry logic can be tested.

It is a test double, not a Hub: no LFS/Xet storage, no pull requests, no auth beyond an optional fixed token.

Point ``huggingface_hub`` at a server with :func:`use_hub` (in-process) or :meth:`HubServer.env` (subprocess).
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qs, unquote, urlsplit

REPO_TYPES = ("model", "dataset", "space")
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
DEFAULT_USER = "user"


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a blob: what the Hub reports as a regular file's oid / ETag."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubError(Exception):
    """Raised inside a handler: becomes an HTTP error response with the Hub's error headers."""

    def __init__(self, status: int, message: str, code: Optional[str] = None, commit: Optional[str] = None,
                 **extra):
        super().__init__(message)
        self.status, self.message, self.code, self.commit, self.extra = status, message, code, commit, extra


@dataclass
class Commit:
    oid: str
    files: Dict[str, bytes]
    title: str
    parents: List[str]
    date: float = field(default_factory=time.time)


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    sdk: Optional[str] = None
    branches: Dict[str, str] = field(default_factory=dict)  # name -> commit oid
    tags: Dict[str, str] = field(default_factory=dict)
    commits: Dict[str, Commit] = field(default_factory=dict)
    secrets: Dict[str, str] = field(default_factory=dict)
    variables: Dict[str, str] = field(default_factory=dict)
    hardware: str = "cpu-basic"
    restarts: int = 0
    created: float = field(default_factory=time.time)

    def resolve(self, revision: str) -> Commit:
        oid = self.branches.get(revision) or self.tags.get(revision)
        if oid is None and revision in self.commits:
            oid = revision
        if oid is None and len(revision) >= 7:  # short sha
            matches = [c for c in self.commits if c.startswith(revision)]
            oid = matches[0] if len(matches) == 1 else None
        if oid is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return self.commits[oid]


@dataclass
class FailureRule:
    """Answer the next ``remaining`` matching requests with ``status`` (after ``delay`` seconds).

    ``status=None`` with a ``delay`` only slows the request down, then serves it normally.
    """

    pattern: str
    remaining: int
    status: Optional[int] = 500
    method: Optional[str] = None
    delay: float = 0.0
    message: str = "injected failure (test hub server)"
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        return (self.remaining > 0 and (self.method is None or self.method.upper() == method)
                and re.search(self.pattern, path) is not None)


class HubServer:
    """The test double: ``start()`` / ``stop()`` (or use as a context manager); ``url`` once started."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None) -> None:
        self.host, self.port = host, port
        self.token = token  # when set, every request must send "Authorization: Bearer <token>"
        self.home: Optional[Path] = None  # the HF_HOME the ``hub_server`` fixture points the client at
        self.repos: Dict[Tuple[str, str], Repo] = {}
        self.requests: List[Tuple[str, str]] = []  # (method, path) of every request, in order
        self.unhandled: List[Tuple[str, str]] = []  # requests no route matched (answered 404)
        self.rules: List[FailureRule] = []
        self.lock = threading.RLock()
        self._stopping = threading.Event()
        self._counter = itertools.count()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the test hub server is not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def start(self) -> "HubServer":
        handler = type("BoundHubHandler", (_Handler,), {"hub": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="test-hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in an injected delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def env(self, home: Path, **extra: str) -> Dict[str, str]:
        """Environment variables that point a *subprocess*'s huggingface_hub at this server."""
        home = Path(home)
        return {"HF_ENDPOINT": self.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(home),
                "HF_HUB_CACHE": str(home / "hub"), "HF_TOKEN": self.token or "hf_test_token",
                "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                "HF_HUB_ETAG_TIMEOUT": "5", "HF_HUB_DOWNLOAD_TIMEOUT": "5", **extra}

    # ------------------------------------------------------------------ test helpers
    def fail_next(self, count: int = 1, status: Optional[int] = 500, path: str = ".*", method: Optional[str] = None,
                  delay: float = 0.0, message: str = "injected failure (test hub server)") -> FailureRule:
        """Make the next ``count`` requests whose path matches regex ``path`` fail with HTTP ``status``.

        ``delay`` seconds are waited first (interrupted when the server stops): with a delay longer than the
        client's timeout the client sees a timeout; with ``status=None`` the request is only slowed down.
        Returns the rule: ``rule.hits`` counts the requests it caught, ``rule.remaining`` what is left.
        """
        rule = FailureRule(path, count, status, method, delay, message)
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear_failures(self) -> None:
        with self.lock:
            self.rules.clear()

    @property
    def files(self) -> Dict[Tuple[str, str, str], Dict[str, bytes]]:
        """{(repo_type, repo_id, revision): {path: content}} for every branch, tag and commit sha."""
        with self.lock:
            out = {}
            for (repo_type, repo_id), repo in self.repos.items():
                for rev, oid in itertools.chain(repo.branches.items(), repo.tags.items(),
                                                ((oid, oid) for oid in repo.commits)):
                    out[(repo_type, repo_id, rev)] = dict(repo.commits[oid].files)
            return out

    def files_at(self, repo_id: str, revision: str = "main", repo_type: str = "model") -> Dict[str, bytes]:
        with self.lock:
            return dict(self._repo(repo_type, repo_id).resolve(revision).files)

    def commits(self, repo_id: str, repo_type: str = "model") -> List[str]:
        """Commit oids of a repo, oldest first."""
        with self.lock:
            return list(self._repo(repo_type, repo_id).commits)

    def create(self, repo_id: str, repo_type: str = "model", private: bool = False, sdk: Optional[str] = None) -> Repo:
        """Create a repo directly (as if ``create_repo`` had been called); returns it."""
        with self.lock:
            if (repo_type, repo_id) in self.repos:
                raise HubError(409, f"You already created this {repo_type} repo: {repo_id}")
            repo = Repo(repo_type, repo_id, private=private, sdk=sdk)
            initial = {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"}
            self._commit(repo, "main", initial, "initial commit")
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def put_files(self, repo_id: str, files: Dict[str, bytes], repo_type: str = "model", revision: str = "main",
                  message: str = "test upload") -> str:
        """Commit ``files`` directly (creating the repo if needed), bypassing HTTP; returns the commit oid.

        Useful to serve content the client would never upload (a hostile checkpoint, a pickle file ...).
        """
        with self.lock:
            repo = self.repos.get((repo_type, repo_id)) or self.create(repo_id, repo_type)
            return self._commit(repo, revision, files, message, base=repo.branches.get(revision)).oid

    # ------------------------------------------------------------------ state changes
    def _repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None:
            raise HubError(404, f"Repository not found: {repo_type} {repo_id}", "RepoNotFound")
        return repo

    def _commit(self, repo: Repo, branch: str, added: Dict[str, bytes], title: str, deleted: Tuple[str, ...] = (),
                base: Optional[str] = None) -> Commit:
        files = dict(repo.commits[base].files) if base else {}
        for path in deleted:
            files = {p: c for p, c in files.items() if p != path and not p.startswith(path.rstrip("/") + "/")}
        files.update(added)
        seed = f"{repo.repo_type}/{repo.repo_id}/{branch}/{next(self._counter)}/{time.time()}/{sorted(files)}"
        oid = hashlib.sha1(seed.encode()).hexdigest()
        commit = Commit(oid, files, title, [base] if base else [])
        repo.commits[oid] = commit
        repo.branches[branch] = oid
        return commit


# ---------------------------------------------------------------------- the HTTP side
class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    server_version = "TestHub/1.0"

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # ----------------------------------------------------------------- plumbing
    def _body(self) -> bytes:
        """The request body (read once; later calls return the same bytes)."""
        if getattr(self, "_raw_body", None) is None:
            self._raw_body = self._read_body()
        return self._raw_body

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json_body(self):
        raw = self._body()
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise HubError(400, f"invalid JSON body: {exc}")

    def _send(self, status: int, body: bytes = b"", headers: Optional[Dict[str, str]] = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _send_json(self, data, status: int = 200, headers: Optional[Dict[str, str]] = None) -> None:
        self._send(status, json.dumps(data).encode(), headers)

    def _dispatch(self, method: str) -> None:
        hub = self.hub
        self._raw_body = None
        parts = urlsplit(self.path)
        self.query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        raw_segments = [s for s in parts.path.split("/") if s]
        segments = [unquote(s) for s in raw_segments]
        with hub.lock:
            hub.requests.append((method, parts.path))
            rule = next((r for r in hub.rules if r.matches(method, parts.path)), None)
            if rule is not None:
                rule.remaining -= 1
                rule.hits += 1
        try:
            if rule is not None:
                if rule.delay and hub._stopping.wait(rule.delay):
                    return  # server stopping: drop the connection
                if rule.status is not None:
                    raise HubError(rule.status, rule.message)
            if hub.token is not None and self.headers.get("Authorization") != f"Bearer {hub.token}":
                raise HubError(401, "Invalid credentials in Authorization header")
            if not self._route(method, segments):
                with hub.lock:
                    hub.unhandled.append((method, parts.path))
                raise HubError(404, f"test hub server: no route for {method} {parts.path}")
        except HubError as err:
            self._body()  # drain it: closing on unread data would reset the connection under the response
            headers = {"X-Error-Message": err.message}
            if err.code:
                headers["X-Error-Code"] = err.code
            if err.commit:
                headers["X-Repo-Commit"] = err.commit
            self._send_json({"error": err.message, **err.extra}, err.status, headers)

    # ----------------------------------------------------------------- routing
    def _route(self, method: str, seg: List[str]) -> bool:
        hub = self.hub
        if seg[:1] == ["api"]:
            rest = seg[1:]
            if rest == ["whoami-v2"] and method == "GET":
                self._send_json({"type": "user", "name": DEFAULT_USER, "fullname": "Test User", "orgs": [],
                                 "auth": {"type": "access_token", "accessToken": {"displayName": "test",
                                                                                   "role": "write"}}})
                return True
            if rest == ["validate-yaml"] and method == "POST":
                errors = validate_card_metadata(self._json_body().get("content", ""))
                self._send_json({"errors": errors, "warnings": []}, 400 if errors else 200)
                return True
            if rest[:1] == ["repos"] and method == "POST" and rest[1:2] in (["create"], ["delete"]):
                self._repos(rest[1])
                return True
            if rest and rest[0].endswith("s") and rest[0][:-1] in REPO_TYPES and len(rest) >= 3:
                repo_type, repo_id, tail = rest[0][:-1], f"{rest[1]}/{rest[2]}", rest[3:]
                with hub.lock:
                    return self._repo_api(method, hub._repo(repo_type, repo_id), tail)
            return False
        # file resolution: [/{datasets|spaces}]/{ns}/{name}/resolve/{rev}/{path...}
        repo_type = "model"
        if seg[:1] in (["datasets"], ["spaces"]):
            repo_type, seg = seg[0][:-1], seg[1:]
        if len(seg) >= 5 and seg[2] == "resolve" and method in ("GET", "HEAD"):
            self._resolve(repo_type, f"{seg[0]}/{seg[1]}", seg[3], "/".join(seg[4:]))
            return True
        return False

    def _repos(self, action: str) -> None:
        hub, body = self.hub, self._json_body()
        repo_type = body.get("type") or "model"
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"unsupported repo type {repo_type!r}")
        name = body.get("name") or ""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}", name):
            raise HubError(400, f"invalid repo name {name!r}")
        repo_id = f"{body.get('organization') or DEFAULT_USER}/{name}"
        url = f"{hub.url}/{URL_PREFIX[repo_type]}{repo_id}"
        with hub.lock:
            if action == "delete":
                hub._repo(repo_type, repo_id)
                del hub.repos[(repo_type, repo_id)]
                self._send_json({})
                return
            if (repo_type, repo_id) in hub.repos:  # the Hub's conflict answer carries the url too
                raise HubError(409, f"You already created this {repo_type} repo", url=url)
            if repo_type == "space" and not body.get("sdk"):
                raise HubError(400, "a Space needs an sdk")
            private = bool(body.get("private")) or body.get("visibility") == "private"
            hub.create(repo_id, repo_type, private=private, sdk=body.get("sdk"))
        self._send_json({"url": url, "name": repo_id, "id": repo_id})

    def _repo_api(self, method: str, repo: Repo, tail: List[str]) -> bool:
        if not tail and method == "GET":
            self._send_json(self._info(repo, repo.resolve("main")))
        elif tail[:1] == ["revision"] and len(tail) == 2 and method == "GET":
            self._send_json(self._info(repo, repo.resolve(tail[1])))
        elif tail[:1] == ["preupload"] and len(tail) == 2 and method == "POST":
            commit = repo.resolve(tail[1])
            files = self._json_body().get("files", [])
            self._send_json({"commitOid": commit.oid, "files": [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                 "oid": git_blob_sha1(commit.files[f["path"]]) if f["path"] in commit.files else None}
                for f in files]})
        elif tail[:1] == ["commit"] and len(tail) == 2 and method == "POST":
            self._commit(repo, tail[1])
        elif tail[:1] == ["branch"] and len(tail) == 2 and method in ("POST", "DELETE"):
            branch = tail[1]
            if method == "DELETE":
                if branch not in repo.branches or branch == "main":
                    raise HubError(404 if branch != "main" else 403, f"cannot delete branch {branch}")
                del repo.branches[branch]
            else:
                if branch in repo.branches:
                    raise HubError(409, f"Reference already exists: {branch}")
                start = self._json_body().get("startingPoint") or "main"
                repo.branches[branch] = repo.resolve(start).oid
            self._send_json({})
        elif tail[:1] == ["tag"] and len(tail) == 2 and method in ("POST", "DELETE"):
            if method == "DELETE":
                if repo.tags.pop(tail[1], None) is None:
                    raise HubError(404, f"tag {tail[1]} not found", "RevisionNotFound")
            else:
                tag = self._json_body().get("tag")
                if not tag or tag in repo.tags or tag in repo.branches:
                    raise HubError(409, f"Tag already exists: {tag}")
                repo.tags[tag] = repo.resolve(tail[1]).oid
            self._send_json({})
        elif tail == ["refs"] and method == "GET":
            def ref(kind: str, name: str, oid: str) -> dict:
                return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}

            self._send_json({"branches": [ref("heads", n, o) for n, o in repo.branches.items()],
                             "tags": [ref("tags", n, o) for n, o in repo.tags.items()], "converts": []})
        elif tail[:1] == ["commits"] and len(tail) == 2 and method == "GET":
            commit, history = repo.resolve(tail[1]), []
            while commit is not None:
                history.append({"id": commit.oid, "title": commit.title, "message": "", "authors": [],
                                "date": _iso(commit.date)})
                commit = repo.commits[commit.parents[0]] if commit.parents else None
            self._send_json(history)
        elif tail[:1] == ["tree"] and len(tail) >= 2 and method == "GET":
            commit = repo.resolve(tail[1])
            prefix = "/".join(tail[2:]).strip("/")
            recursive = self.query.get("recursive", "").lower() in ("1", "true")
            self._send_json(self._tree(commit, prefix, recursive))
        elif tail[:1] == ["paths-info"] and len(tail) == 2 and method == "POST":
            commit = repo.resolve(tail[1])
            raw = self._body()
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                paths = json.loads(raw or b"{}").get("paths", [])
            else:
                paths = parse_qs(raw.decode()).get("paths", [])
            entries = {e["path"]: e for e in self._tree(commit, "", True)}
            self._send_json([entries[p] for p in paths if p in entries])
        elif repo.repo_type == "space" and tail in (["runtime"], ["restart"], ["hardware"], ["pause"]):
            if tail == ["restart"]:
                repo.restarts += 1
            if tail == ["hardware"]:
                repo.hardware = self._json_body().get("flavor") or repo.hardware
            self._send_json(self._runtime(repo))
        elif repo.repo_type == "space" and tail[:1] in (["secrets"], ["variables"]):
            store = repo.secrets if tail[0] == "secrets" else repo.variables
            if method == "GET" and tail[0] == "variables":
                self._send_json({k: {"value": v, "updatedAt": _iso(time.time())} for k, v in store.items()})
            elif method == "POST":
                body = self._json_body()
                store[body["key"]] = body.get("value", "")
                self._send_json({})
            elif method == "DELETE":
                store.pop(self._json_body().get("key"), None)
                self._send_json({})
            else:
                return False
        else:
            return False
        return True

    def _commit(self, repo: Repo, revision: str) -> None:
        if self.query.get("create_pr"):
            raise HubError(400, "pull requests are not supported by the test hub server")
        if revision not in repo.branches:
            raise HubError(404, f"Invalid rev id: {revision} (commits go to an existing branch)", "RevisionNotFound")
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "a commit payload starts with a header line")
        header, added, deleted = lines[0]["value"], {}, []
        parent = header.get("parentCommit")
        if parent and parent != repo.branches[revision]:
            raise HubError(412, f"parent commit {parent} is not the head of {revision}")
        for line in lines[1:]:
            key, value = line.get("key"), line.get("value", {})
            path = value.get("path", "")
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise HubError(400, f"invalid path in repo {path!r}")
            if key == "file":
                if value.get("encoding") != "base64":
                    raise HubError(400, f"unsupported encoding {value.get('encoding')!r}")
                added[path] = base64.b64decode(value["content"])
            elif key in ("deletedFile", "deletedFolder"):
                deleted.append(path)
            elif key == "lfsFile":
                raise HubError(422, f"{path}: LFS uploads are not supported by the test hub server "
                                    "(its preupload answers uploadMode 'regular')")
            else:
                raise HubError(400, f"unknown commit operation {key!r}")
        commit = self.hub._commit(repo, revision, added, header.get("summary", ""), tuple(deleted),
                                  base=repo.branches[revision])
        self._send_json({"success": True, "commitOid": commit.oid, "pullRequestUrl": None,
                         "commitUrl": f"{self.hub.url}/{URL_PREFIX[repo.repo_type]}{repo.repo_id}/commit/{commit.oid}"})

    def _resolve(self, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        hub = self.hub
        with hub.lock:
            repo = hub._repo(repo_type, repo_id)
            commit = repo.resolve(revision)
            if path not in commit.files:
                raise HubError(404, f"Entry not found: {path}", "EntryNotFound", commit=commit.oid)
            data = commit.files[path]
        headers = {"ETag": f'"{git_blob_sha1(data)}"', "X-Repo-Commit": commit.oid, "Accept-Ranges": "bytes"}
        status = 200
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match and self.command == "GET":
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else len(data) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            data, status = data[start:end + 1], 206
        self._send(status, data, headers, content_type="application/octet-stream")

    # ----------------------------------------------------------------- JSON shapes
    def _info(self, repo: Repo, commit: Commit) -> dict:
        info = {"id": repo.repo_id, "author": repo.repo_id.split("/")[0], "sha": commit.oid,
                "private": repo.private, "disabled": False, "gated": False, "downloads": 0, "likes": 0,
                "tags": [], "lastModified": _iso(commit.date), "createdAt": _iso(repo.created),
                "siblings": [{"rfilename": p, "size": len(c)} for p, c in sorted(commit.files.items())]}
        if repo.repo_type == "model":
            info["modelId"] = repo.repo_id
        if repo.repo_type == "space":
            info.update(sdk=repo.sdk, runtime=self._runtime(repo), subdomain=repo.repo_id.replace("/", "-"))
        return info

    @staticmethod
    def _runtime(repo: Repo) -> dict:
        return {"stage": "RUNNING", "hardware": {"current": repo.hardware, "requested": repo.hardware},
                "storage": None, "gcTimeout": None, "devMode": False}

    @staticmethod
    def _tree(commit: Commit, prefix: str, recursive: bool) -> List[dict]:
        entries: Dict[str, dict] = {}
        for path, content in sorted(commit.files.items()):
            if prefix and not path.startswith(prefix + "/"):
                continue
            relative = path[len(prefix) + 1:] if prefix else path
            parts = relative.split("/")
            for depth in range(1, len(parts)):
                folder = "/".join(([prefix] if prefix else []) + parts[:depth])
                if recursive or depth == 1:
                    entries.setdefault(folder, {"type": "directory", "path": folder,
                                                "oid": hashlib.sha1(folder.encode()).hexdigest(), "size": 0})
            if recursive or len(parts) == 1:
                entries[path] = {"type": "file", "path": path, "size": len(content), "oid": git_blob_sha1(content)}
        return list(entries.values())


def validate_card_metadata(readme: str) -> List[dict]:
    """A small stand-in for the Hub's README metadata check: the YAML header must parse to a mapping and the
    keys the Hub indexes must have the right types.  Returns the Hub-style error list (empty when valid)."""
    import yaml

    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", readme, re.DOTALL)
    if match is None:
        return []  # no metadata: the Hub accepts it (with a warning)
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        return [{"message": f"YAML metadata does not parse: {exc}"}]
    if not isinstance(meta, dict):
        return [{"message": "YAML metadata must be a mapping"}]
    errors = []
    for key in ("license", "library_name", "pipeline_tag", "model_name"):
        if key in meta and not isinstance(meta[key], str):
            errors.append({"message": f"'{key}' must be a string"})
    for key in ("language", "tags", "datasets", "metrics"):
        value = meta.get(key)
        if value is not None and not (isinstance(value, str) or
                                      (isinstance(value, list) and all(isinstance(v, str) for v in value))):
            errors.append({"message": f"'{key}' must be a string or a list of strings"})
    index = meta.get("model-index")
    if index is not None:
        if not (isinstance(index, list) and all(isinstance(m, dict) and "name" in m and
                                                isinstance(m.get("results"), list) for m in index)):
            errors.append({"message": "'model-index' must be a list of {name, results: [...]}"})
    return errors


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(timestamp))


# ---------------------------------------------------------------------- pointing the client at the server
@contextlib.contextmanager
def use_hub(url: str, home: Path, token: str = "hf_test_token", timeout: float = 5.0) -> Iterator[None]:
    """Point this process's ``huggingface_hub`` at ``url`` (a :class:`HubServer`), caching under ``home``.

    ``huggingface_hub`` reads ``HF_ENDPOINT`` and friends once, at import, and keeps module-level copies
    (``constants``, the ``HfApi`` instance behind ``create_repo``/``upload_folder``...), so the environment
    alone is not enough in-process: those copies are patched too, and everything is restored on exit.
    Xet is disabled (the test double speaks plain HTTP), the token is a fake one and timeouts are ``timeout``.
    """
    import pytest
    from huggingface_hub import constants, hf_api
    from huggingface_hub.utils import _http

    hf_tqdm = importlib.import_module("huggingface_hub.utils.tqdm")  # the module, not the class of that name

    home = Path(home)
    host = urlsplit(url).hostname
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {"HF_ENDPOINT": url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(home),
                           "HF_HUB_CACHE": str(home / "hub"), "HF_TOKEN": token, "HF_HUB_OFFLINE": "0",
                           "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                           "HF_HUB_ETAG_TIMEOUT": str(max(1, round(timeout))),
                           "HF_HUB_DOWNLOAD_TIMEOUT": str(max(1, round(timeout)))}.items():
            mp.setenv(key, value)
        for name, value in {
            "ENDPOINT": url,
            "HUGGINGFACE_CO_URL_TEMPLATE": url + "/{repo_id}/resolve/{revision}/{filename}",
            "HF_URL_HOSTS": constants.HF_URL_HOSTS | {host},
            "HF_HUB_DISABLE_XET": True, "HF_HUB_OFFLINE": False, "HF_HUB_DISABLE_TELEMETRY": True,
            "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_XET_CACHE": str(home / "xet"),
            "HF_ASSETS_CACHE": str(home / "assets"), "HF_TOKEN_PATH": str(home / "token"),
            "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
            "HF_HUB_ETAG_TIMEOUT": timeout, "HF_HUB_DOWNLOAD_TIMEOUT": timeout,
        }.items():
            mp.setattr(constants, name, value, raising=False)
        mp.setattr(hf_api.api, "endpoint", url)
        mp.setattr(hf_tqdm, "HF_HUB_DISABLE_PROGRESS_BARS", True)
        _http.close_session()  # no pooled connection to another server survives
        try:
            yield
        finally:
            _http.close_session()


@contextlib.contextmanager
def fast_retries(max_sleep: float = 0.01, retry_timeout: float = 1.0) -> Iterator[None]:
    """Shrink huggingface_hub's retry back-off sleeps (1, 2, 4, 8 s ...) and its 60 s second-chance HEAD timeout.

    The retries still happen (and hit the server); only the waiting between them is cut, so a test of
    "the server times out" or "the server answers 500" takes a second, not half a minute.
    """
    import types

    import pytest
    from huggingface_hub import file_download
    from huggingface_hub.utils import _http

    real_sleep = time.sleep
    with pytest.MonkeyPatch.context() as mp:
        short_sleeps = types.SimpleNamespace(**{**vars(time), "sleep": lambda s: real_sleep(min(s, max_sleep))})
        mp.setattr(_http, "time", short_sleeps)  # only _http's view of the time module changes
        mp.setattr(file_download, "_ETAG_RETRY_TIMEOUT", retry_timeout)
        yield
