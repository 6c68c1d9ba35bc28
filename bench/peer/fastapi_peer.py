"""The FastAPI peer of `npm run bench` (bench/run.ts, bench/peer.ts).

Issue 24 asks Berth to serve every phase of the bench (GET one deployment, the list with
`name_contains`, create) at five times the rate of an honest Python implementation of the same
endpoints, measured in the same run on the same machine. This is that implementation, as one
would write it with FastAPI's documented idioms: pydantic models for the bodies and the answers,
an `X-Api-Key` dependency, `async def` routes on one uvicorn worker (uvloop and httptools when
installed, as `uvicorn[standard]` runs; Debian has uvloop, and an httptools too old for uvicorn) and
Python's sqlite3 in WAL mode: one table whose configurations and secrets are JSON columns, indexed
on the workspace and name (unique) and on the workspace and creation time (the listing's newest
first, as Berth orders it), and a list that is a `LIKE` over the name in the workspace. It serves image deployments only, keeps secrets as given (Berth encrypts them) and makes no
revision rows: what it leaves out is work Berth does. `--seed N` fills the workspace with the
names, statuses and dates of bench/seed.ts, so the listing reads the same rows. Prints one JSON
line (`{"port": N, ...}` with a sample of the seeded ids) once listening.

    python3 bench/peer/fastapi_peer.py --port N --db FILE --api-key KEY [--seed N]

Needs Debian's python3-fastapi and python3-uvicorn (scripts/setup-bench-peer.sh).
"""

import argparse
import asyncio
import hmac
import json
import secrets as random_secrets
import sqlite3
import sys
import uuid
from datetime import datetime, timedelta, timezone
from typing import Dict, List, Literal, Optional, Union

import fastapi
import pydantic
import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, Field, confloat, conint, constr

PYDANTIC_2 = pydantic.VERSION.startswith("2")

# The one workspace, which the one key opens.
WORKSPACE_ID = "0b7e2c4a-6f1d-4e8b-9a3c-5d2f1e0a9b8c"
DEPLOYMENT_STATUSES = ("AWAITING_DATABASE", "READY", "UNUSED", "AWAITING_DELETE", "UNKNOWN")
DEPLOYMENT_TYPES = ("dev_free", "dev", "prod", "dev_zero", "dev_free_zero")
IMAGE_SOURCES = ("external_docker", "internal_docker")
MAX_OFFSET = 2_147_483_647
RESOURCE_SPEC_DEFAULTS = {"min_scale": 1, "max_scale": 1, "cpu": 1, "memory_mb": 2048}

# bench/seed.ts's names: team, word and number; each team is in one name in 20.
TEAMS = [
    "billing", "search", "support", "growth", "payments", "infra", "ml", "data", "mobile", "web",
    "security", "ops", "sales", "marketing", "finance", "legal", "people", "platform", "identity", "catalog",
]
WORDS = ["agent", "assistant", "router", "planner", "summarizer", "classifier", "retriever", "triage", "copilot", "reviewer"]


def text(min_length: Optional[int] = None, max_length: Optional[int] = None, pattern: Optional[str] = None):
    """A constrained string, spelled as the installed pydantic (1 or 2) wants it."""
    options = {"min_length": min_length, "max_length": max_length}
    if pattern:
        options["pattern" if PYDANTIC_2 else "regex"] = pattern
    return constr(**options)


def at_most(items: int):
    """A list's size limit, spelled as the installed pydantic wants it."""
    return Field(..., **{"max_length" if PYDANTIC_2 else "max_items": items})


def dump(model: BaseModel) -> dict:
    return model.model_dump() if PYDANTIC_2 else model.dict()


# ------------------------------------------------------------------------------ models


class SecretIn(BaseModel):
    name: text(1, 256, r"^[A-Za-z_][A-Za-z0-9_]*$")
    value: text(max_length=65536)


# A number of at least 0, kept an integer when given as one (512 stays 512, 0.5 stays 0.5).
Quantity = Optional[Union[conint(strict=True, ge=0), confloat(ge=0)]]


class ResourceSpecIn(BaseModel):
    min_scale: Quantity = None
    max_scale: Quantity = None
    cpu: Quantity = None
    memory_mb: Quantity = None

    class Config:
        extra = "allow"


class SourceConfigIn(BaseModel):
    integration_id: Optional[uuid.UUID] = None
    repo_url: Optional[text(1, 2048)] = None
    deployment_type: Optional[Literal[DEPLOYMENT_TYPES]] = None
    build_on_push: Optional[bool] = None
    custom_url: Optional[text(max_length=2048)] = None
    resource_spec: Optional[ResourceSpecIn] = None
    listener_id: Optional[uuid.UUID] = None
    install_command: Optional[text(max_length=4096)] = None
    build_command: Optional[text(max_length=4096)] = None
    build_timeout_seconds: Optional[conint(ge=1, le=86400)] = None
    deploy_timeout_seconds: Optional[conint(ge=1, le=86400)] = None


class RevisionConfigIn(BaseModel):
    repo_ref: Optional[text(1, 512)] = None
    graph_config_path: Optional[text(1, 1024)] = None
    langgraph_config_path: Optional[text(1, 1024)] = None
    image_uri: Optional[text(1, 2048)] = None


class DeploymentCreate(BaseModel):
    name: text(1, 63, r"^[A-Za-z][A-Za-z0-9-]*$")
    source: Literal["codehost", "github", "external_docker", "internal_source", "internal_docker"]
    source_config: Optional[SourceConfigIn] = None
    source_revision_config: Optional[RevisionConfigIn] = None
    secrets: List[SecretIn] = at_most(200)
    image_version: Optional[text(1, 256)] = None


class SecretView(BaseModel):
    name: str
    value: Optional[str]


class SourceConfigView(BaseModel):
    integration_id: Optional[str]
    repo_url: Optional[str]
    deployment_type: str
    build_on_push: Optional[bool]
    custom_url: Optional[str]
    listener_id: Optional[str]
    listener_config: Optional[Dict[str, str]]
    install_command: Optional[str]
    build_command: Optional[str]
    build_timeout_seconds: Optional[int]
    deploy_timeout_seconds: Optional[int]
    resource_spec: Optional[dict]


class RevisionConfigView(BaseModel):
    repo_ref: Optional[str]
    graph_config_path: Optional[str]
    image_uri: Optional[str]
    repo_commit_sha: Optional[str]
    tracked_packages: Optional[List[str]]
    langgraph_config_path: Optional[str]


class Deployment(BaseModel):
    id: str
    tenant_id: str
    name: str
    display_name: Optional[str]
    source: str
    source_config: SourceConfigView
    source_revision_config: RevisionConfigView
    secrets: List[SecretView]
    status: str
    latest_revision_id: Optional[str]
    active_revision_id: Optional[str]
    image_version: Optional[str]
    url: Optional[str]
    remote_reconciled: bool
    created_at: str
    updated_at: str


class DeploymentPage(BaseModel):
    resources: List[Deployment]
    offset: int


# ------------------------------------------------------------------------------ storage

COLUMNS = (
    "id, workspace_id, name, display_name, source, source_config, source_revision_config, secrets, status, "
    "latest_revision_id, active_revision_id, image_version, url, remote_reconciled, created_at, updated_at"
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS deployments (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  display_name TEXT,
  source TEXT NOT NULL,
  source_config TEXT NOT NULL,          -- JSON, with the resource spec
  source_revision_config TEXT NOT NULL, -- JSON
  secrets TEXT NOT NULL,                -- JSON: [{"name", "value"}]
  status TEXT NOT NULL,
  latest_revision_id TEXT,
  active_revision_id TEXT,
  image_version TEXT,
  url TEXT,
  remote_reconciled INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- Names are unique in a workspace without regard to case.
CREATE UNIQUE INDEX IF NOT EXISTS deployments_workspace_name ON deployments (workspace_id, name COLLATE NOCASE);
-- The listing's order (newest first), so that a page reads rows until it has its 20.
CREATE INDEX IF NOT EXISTS deployments_workspace_created ON deployments (workspace_id, created_at DESC, id DESC);
"""


def open_database(path: str) -> sqlite3.Connection:
    # Autocommit: every write is one statement. The routes run on the event loop's thread.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA busy_timeout = 5000")
    db.executescript(SCHEMA)
    return db


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def source_config(given: Optional[SourceConfigIn]) -> dict:
    spec = dict(RESOURCE_SPEC_DEFAULTS)
    if given and given.resource_spec:
        spec.update({k: v for k, v in dump(given.resource_spec).items() if v is not None})
    return {
        "integration_id": None,
        "repo_url": None,
        "deployment_type": (given.deployment_type if given else None) or "prod",
        "build_on_push": given.build_on_push if given else None,
        "custom_url": given.custom_url if given else None,
        "listener_id": str(given.listener_id) if given and given.listener_id else None,
        "listener_config": None,
        "install_command": given.install_command if given else None,
        "build_command": given.build_command if given else None,
        "build_timeout_seconds": given.build_timeout_seconds if given else None,
        "deploy_timeout_seconds": given.deploy_timeout_seconds if given else None,
        "resource_spec": spec,
    }


def revision_config(image_uri: str) -> dict:
    return {
        "repo_ref": None,
        "graph_config_path": None,
        "image_uri": image_uri,
        "repo_commit_sha": None,
        "tracked_packages": None,
        "langgraph_config_path": None,
    }


def seed(db: sqlite3.Connection, count: int, samples: int = 5000) -> List[str]:
    """bench/seed.ts's deployments: its names, one in five UNUSED, created over the past year."""
    if db.execute("SELECT 1 FROM deployments LIMIT 1").fetchone():
        raise SystemExit(f"--seed: {db_path_of(db)} already has deployments")
    config = json.dumps(source_config(SourceConfigIn(resource_spec=ResourceSpecIn(cpu=0.5, memory_mb=512))))
    year = timedelta(days=365)
    first = datetime.now(timezone.utc) - year
    step = year / max(1, count)
    sample_every = max(1, count // samples)
    sample_ids = []
    rows = []
    for i in range(count):
        team = TEAMS[i % len(TEAMS)]
        name = f"{team}-{WORDS[(i // len(TEAMS)) % len(WORDS)]}-{i:06d}"
        failed = (i // len(TEAMS)) % 5 == 4
        deployment_id = str(uuid.uuid4())
        revision_id = str(uuid.uuid4())
        if i % sample_every == 0:
            sample_ids.append(deployment_id)
        given = [{"name": "OPENAI_API_KEY", "value": "sk-" + random_secrets.token_urlsafe(24)}]
        if i % 2 == 0:
            given.append({"name": "DATABASE_URL", "value": f"postgres://app:{random_secrets.token_hex(12)}@db.internal/{team}"})
        created = first + step * i
        rows.append(
            (
                deployment_id,
                WORKSPACE_ID,
                name,
                f"{team} {name.split('-')[1]} ({i})" if i % 3 == 0 else None,
                "external_docker",
                config,
                json.dumps(revision_config(f"registry.example.com/{team}/{name}:v{i % 50 + 1}")),
                json.dumps(given),
                "UNUSED" if failed else "READY",
                revision_id,
                None if failed else revision_id,
                None,
                None if failed else f"http://127.0.0.1:{20000 + i % 40000}",
                0,
                iso(created),
                iso(created + timedelta(seconds=40)),
            )
        )
    placeholders = ", ".join("?" * 16)
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO deployments ({COLUMNS}) VALUES ({placeholders})", rows)
    db.execute("COMMIT")
    return sample_ids


def db_path_of(db: sqlite3.Connection) -> str:
    return db.execute("PRAGMA database_list").fetchone()[2]


def view(row: tuple) -> dict:
    return {
        "id": row[0],
        "tenant_id": row[1],
        "name": row[2],
        "display_name": row[3],
        "source": row[4],
        "source_config": json.loads(row[5]),
        "source_revision_config": json.loads(row[6]),
        "secrets": json.loads(row[7]),
        "status": row[8],
        "latest_revision_id": row[9],
        "active_revision_id": row[10],
        "image_version": row[11],
        "url": row[12],
        "remote_reconciled": bool(row[13]),
        "created_at": row[14],
        "updated_at": row[15],
    }


def escape_like(needle: str) -> str:
    return needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# ------------------------------------------------------------------------------ application


def create_app(db: sqlite3.Connection, api_key: str) -> FastAPI:
    app = FastAPI(title="Berth bench FastAPI peer")
    key_header = APIKeyHeader(name="X-Api-Key", auto_error=False)

    async def workspace(key: Optional[str] = Depends(key_header)) -> str:
        """The workspace the key opens; 401 without the key."""
        if key is None or not hmac.compare_digest(key.encode(), api_key.encode()):
            raise HTTPException(status_code=401, detail="Missing or invalid API key.")
        return WORKSPACE_ID

    @app.get("/ok")
    async def ok() -> dict:
        return {"ok": True}

    @app.get("/v2/deployments/{deployment_id}", response_model=Deployment)
    async def get_deployment(deployment_id: uuid.UUID, workspace_id: str = Depends(workspace)) -> dict:
        row = db.execute(
            f"SELECT {COLUMNS} FROM deployments WHERE id = ? AND workspace_id = ?", (str(deployment_id), workspace_id)
        ).fetchone()
        if row is None:
            raise HTTPException(status_code=404, detail=f"Deployment '{deployment_id}' not found.")
        return view(row)

    @app.get("/v2/deployments", response_model=DeploymentPage)
    async def list_deployments(
        workspace_id: str = Depends(workspace),
        name_contains: Optional[str] = Query(None, max_length=256),
        status: Optional[str] = Query(None, description="Comma-separated statuses."),
        limit: int = Query(20, ge=1, le=100),
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
    ) -> dict:
        conditions = ["workspace_id = ?"]
        values: list = [workspace_id]
        if name_contains:
            conditions.append("name LIKE ? ESCAPE '\\'")
            values.append(f"%{escape_like(name_contains)}%")
        if status:
            statuses = [s.strip() for s in status.split(",") if s.strip()]
            unknown = [s for s in statuses if s not in DEPLOYMENT_STATUSES]
            if unknown:
                raise HTTPException(status_code=422, detail=f"Unknown status '{unknown[0]}'.")
            conditions.append(f"status IN ({', '.join('?' * len(statuses))})")
            values.extend(statuses)
        rows = db.execute(
            f"SELECT {COLUMNS} FROM deployments WHERE {' AND '.join(conditions)} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
            (*values, limit, offset),
        ).fetchall()
        return {"resources": [view(row) for row in rows], "offset": offset + len(rows)}

    @app.post("/v2/deployments", response_model=Deployment, status_code=201)
    async def create_deployment(body: DeploymentCreate, workspace_id: str = Depends(workspace)) -> dict:
        if body.source not in IMAGE_SOURCES:
            raise HTTPException(status_code=400, detail="This peer serves image deployments only (external_docker, internal_docker).")
        config = body.source_config
        if config and (config.integration_id or config.repo_url):
            raise HTTPException(status_code=400, detail="'source_config.integration_id' and 'repo_url' apply only to code-host deployments.")
        spec = config.resource_spec if config else None
        if spec and spec.min_scale is not None and spec.max_scale is not None and spec.min_scale > spec.max_scale:
            raise HTTPException(status_code=400, detail="'resource_spec.min_scale' is greater than 'resource_spec.max_scale'.")
        image_uri = body.source_revision_config.image_uri if body.source_revision_config else None
        if not image_uri:
            raise HTTPException(status_code=400, detail=f"'source_revision_config.image_uri' is required for source '{body.source}'.")
        names = [secret.name for secret in body.secrets]
        if len(set(names)) != len(names):
            raise HTTPException(status_code=400, detail="Secret names must be unique.")
        now = iso(datetime.now(timezone.utc))
        row = (
            str(uuid.uuid4()),
            workspace_id,
            body.name,
            None,
            body.source,
            json.dumps(source_config(config)),
            json.dumps(revision_config(image_uri)),
            json.dumps([dump(secret) for secret in body.secrets]),
            "AWAITING_DATABASE",
            str(uuid.uuid4()),
            None,
            body.image_version,
            None,
            0,
            now,
            now,
        )
        try:
            db.execute(f"INSERT INTO deployments ({COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
        except sqlite3.IntegrityError:
            raise HTTPException(status_code=409, detail=f"A deployment named '{body.name}' already exists.") from None
        return view(row)

    return app


def http_implementation() -> str:
    """uvicorn's "auto" (httptools when importable, else h11), but only with an httptools that uvicorn
    supports (`uvicorn[standard]` asks for 0.4 or newer; Debian bookworm's python3-httptools is 0.1.1)."""
    try:
        import httptools

        return "httptools" if tuple(int(part) for part in httptools.__version__.split(".")[:2]) >= (0, 4) else "h11"
    except (ImportError, AttributeError, ValueError):
        return "h11"


class PeerServer(uvicorn.Server):
    """uvicorn's server, printing the JSON line once its socket listens."""

    def __init__(self, config: uvicorn.Config, announce: dict):
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        port = self.servers[0].sockets[0].getsockname()[1]
        # What ran: uvloop (uvicorn's "auto" when installed) or asyncio's loop, httptools or h11.
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
        http = self.config.http_protocol_class.__module__.split(".")[-1].replace("_impl", "")
        line = {"port": port, **self.announce, "loop": loop, "http": http}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description="The bench's FastAPI peer of Berth's deployment endpoints.")
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--db", required=True, help="SQLite file (created when missing)")
    parser.add_argument("--api-key", required=True, help="the X-Api-Key the routes accept")
    parser.add_argument("--seed", type=int, default=0, help="deployments to insert before serving (names as bench/seed.ts)")
    options = parser.parse_args()

    db = open_database(options.db)
    sample_ids = seed(db, options.seed) if options.seed > 0 else []
    config = uvicorn.Config(
        create_app(db, options.api_key),
        host="127.0.0.1",
        port=options.port,
        workers=1,
        loop="auto",
        http=http_implementation(),
        lifespan="off",
        access_log=False,
        log_level="warning",
    )
    versions = {
        "python": sys.version.split()[0],
        "fastapi": fastapi.__version__,
        "pydantic": pydantic.VERSION,
        "uvicorn": uvicorn.__version__,
    }
    PeerServer(config, {"seeded": options.seed, "versions": versions, "sample_ids": sample_ids}).run()


if __name__ == "__main__":
    main()
