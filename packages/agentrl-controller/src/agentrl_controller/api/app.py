"""The controller's ASGI app: AgentRL-compatible routes under ``/api``, plus ``/healthz``, ``/metrics`` and ``/``.

Every error is JSON ``{"error": ..., "detail": ...}`` with a 4xx code (see :mod:`agentrl_controller.errors`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentrl_controller.api.dashboard import render_live, render_page
from agentrl_controller.api.guard import Guard
from agentrl_controller.controller import Controller
from agentrl_controller.errors import ApiError, BadRequestError
from agentrl_controller.http.fastpath import FastAnswer, FastJsonRoute, header
from agentrl_controller.http.models import (
    CancelNotice,
    CancelResponse,
    ErrorResponse,
    Health,
    HeartbeatRequest,
    HeartbeatResponse,
    InteractRequest,
    Observation,
    SessionInfo,
    StartSampleRequest,
    WorkerInfo,
)

__all__ = ["create_app"]

logger = logging.getLogger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 404, 409, 413, 422, 424, 429)
}
SessionHeader = Annotated[
    str | None, Header(alias="session_id", convert_underscores=False, description="The session's id.")
]


def create_app(controller: Controller, *, manage_lifecycle: bool = True) -> Any:
    """The ASGI app for ``controller``, wrapped in the token/body-limit guard.

    Args:
        controller: What the routes drive.
        manage_lifecycle: Start and stop the controller with the app's lifespan.
    """

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_lifecycle:
            await controller.start()
        try:
            yield
        finally:
            if manage_lifecycle:
                await controller.stop()

    app = FastAPI(
        title="AgentRL controller",
        summary="Routes sessions of AgentBench tasks to env workers (AgentRL controller API).",
        lifespan=lifespan,
        responses=_ERRORS,
    )
    app.state.controller = controller
    _add_error_handlers(app)
    _add_api_routes(app, controller)
    _add_service_routes(app, controller)
    fast = _fast_interact(app, controller)
    return Guard(
        fast, token=controller.config.token, max_body_bytes=controller.config.max_body_bytes, metrics=controller.metrics
    )


def _fast_interact(app: FastAPI, controller: Controller) -> FastJsonRoute:
    """``POST /api/interact`` without FastAPI's machinery when the request is well formed (the hot path).

    Accepts exactly what the FastAPI route accepts without coercion (one ``session_id`` header holding an
    integer, a body ``{"messages": [<object>, ...]}``) and answers the same; anything else goes to the route.
    """
    [route] = [r for r in app.routes if getattr(r, "path", None) == "/api/interact"]

    async def interact(scope: Any, data: Any) -> FastAnswer | None:
        value = header(scope, b"session_id")
        if value is None or type(data) is not dict or len(data) != 1:
            return None
        messages = data.get("messages")
        if type(messages) is not list or not messages or any(type(m) is not dict for m in messages):
            return None
        try:
            sid = _session_id(value)
            out = await controller.sessions.interact(sid, messages)
        except ApiError as e:
            return e.status_code, {"error": e.message, "detail": None}, []
        return 200, out, [(b"session_id", str(sid).encode())]

    return FastJsonRoute(app, path="/api/interact", handler=interact, route=route)


def _session_id(value: str | None) -> int:
    if value is None:
        raise BadRequestError("Missing the session_id header; send the id start_sample returned.")
    try:
        return int(value)
    except ValueError:
        raise BadRequestError(f"The session_id header must be an integer, got {value[:50]!r}.") from None


def _add_api_routes(app: FastAPI, controller: Controller) -> None:
    @app.get("/api/get_indices", response_model=list[int | str])
    async def get_indices(name: Annotated[str, Query(min_length=1, max_length=200)]) -> Any:
        """The sample indices of task ``name``."""
        return await controller.get_indices(name)

    @app.post("/api/start_sample", response_model=Observation)
    async def start_sample(body: StartSampleRequest) -> Any:
        """Start a session; its id is in the ``session_id`` response header (and body)."""
        out = await controller.start_sample(body.name, body.index, body.custom_task)
        return JSONResponse(out, headers={"session_id": str(out["session_id"])})

    @app.post("/api/interact", response_model=Observation)
    async def interact(body: InteractRequest, session_id: SessionHeader = None) -> Any:
        """Send the agent's message(s); the answer holds the env's new messages."""
        sid = _session_id(session_id)
        out = await controller.sessions.interact(sid, body.messages)
        return JSONResponse(out, headers={"session_id": str(sid)})

    @app.post("/api/cancel", response_model=CancelResponse)
    async def cancel(request: Request, session_id: SessionHeader = None) -> Any:
        """Cancel a session (the id in the ``session_id`` header, or a body ``{"session_id": N}``)."""
        if session_id is None:
            session_id = await _body_session_id(request)
        sid = _session_id(session_id)
        status = await controller.sessions.cancel(sid)
        return CancelResponse(session_id=sid, status=status)

    @app.get("/api/list_sessions", response_model=list[SessionInfo])
    async def list_sessions() -> Any:
        """The open sessions."""
        return controller.list_sessions()

    @app.get("/api/list_workers", response_model=list[WorkerInfo])
    async def list_workers() -> Any:
        """The live workers, local and remote."""
        return controller.list_workers()

    @app.post("/api/receive_heartbeat", response_model=HeartbeatResponse)
    async def receive_heartbeat(body: HeartbeatRequest) -> Any:
        """A worker registers or says it is alive (every 8 s for ``agentrl-worker``)."""
        return HeartbeatResponse(worker_id=controller.heartbeat(body))

    @app.post("/api/cancel_notice", response_model=CancelResponse)
    async def cancel_notice(body: CancelNotice) -> Any:
        """A worker reports that a cancelled session has stopped (nothing left to do here)."""
        return CancelResponse(session_id=body.session_id, status="cancelled")


async def _body_session_id(request: Request) -> str | None:
    body = await request.body()
    if not body:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        raise BadRequestError(
            "The cancel body must be JSON {'session_id': N} (or send the session_id header)."
        ) from None
    value = data.get("session_id") if isinstance(data, dict) else None
    return None if value is None or isinstance(value, bool) else str(value)


def _add_service_routes(app: FastAPI, controller: Controller) -> None:
    @app.get("/healthz", response_model=Health)
    async def healthz() -> Any:
        """Liveness and a one-line summary."""
        return Health(
            status="ok",
            sessions=len(controller.sessions.sessions),
            workers=len(controller.pool.workers),
            queued=controller.admission.waiting(),
        )

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Any:
        """Prometheus text exposition."""
        controller.refresh_gauges()
        return Response(controller.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def dashboard(request: Request) -> Any:
        """The live dashboard, its figures rendered in (when the token, if one is needed, came along)."""
        token = controller.config.token
        sent = request.headers.get("authorization", "").encode()
        shown = token is None or secrets.compare_digest(sent, f"Bearer {token}".encode())
        return HTMLResponse(render_page(controller if shown else None))

    @app.get("/dashboard/live", response_class=HTMLResponse, include_in_schema=False)
    async def dashboard_live() -> Any:
        """The dashboard's figures, as the HTML the page swaps in every second (behind the token)."""
        return HTMLResponse(render_live(controller))


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.message, "detail": None}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        detail = jsonable_encoder(exc.errors(), custom_encoder={Exception: str})
        for error in detail:
            error.pop("input", None)  # may be huge; the client has it
            error.pop("ctx", None)
        return JSONResponse({"error": "Invalid request; see detail.", "detail": detail}, status_code=422)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        # A bug, never an expected outcome (the fuzz tests look for these): log it, answer JSON, keep serving.
        logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        message = f"Internal controller error ({type(exc).__name__}); see the controller log."
        return JSONResponse({"error": message, "detail": None}, status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = exc.status_code if 400 <= exc.status_code < 500 else 400
        return JSONResponse({"error": str(exc.detail), "detail": None}, status_code=code, headers=exc.headers)
