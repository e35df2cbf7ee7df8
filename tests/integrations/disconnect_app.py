"""A FastAPI app that embeds rerankit in-process, as docs/api.md's "In your own FastAPI app"
writes it, run by a real uvicorn: ``/plain`` awaits ``arerank`` (what a user writes
first), ``/guarded`` goes through ``cancel_on_disconnect``. Its reranker is the
:class:`BatchedModel` stand-in, ``BATCH`` seconds a document on the model thread.

``python disconnect_app.py`` serves it on a free port of 127.0.0.1 and prints the port."""

from __future__ import annotations

import socket

import uvicorn
from batched_model import BatchedModel  # beside it: run as a script, its folder is on the path
from fastapi import FastAPI, Request, Response
from pydantic import BaseModel

import rerankit
from rerankit.integrations.fastapi import ClientDisconnected, cancel_on_disconnect

BATCH = 0.03
reranker = rerankit.load(BatchedModel(BATCH))
app = FastAPI()


class Body(BaseModel):
    query: str
    documents: list[str]


@app.post("/plain")
async def plain(body: Body):
    result = await reranker.arerank(body.query, body.documents)
    return {"ids": [r.index for r in result]}


@app.post("/guarded")
async def guarded(body: Body, request: Request):
    try:
        result = await cancel_on_disconnect(request, reranker.arerank(body.query, body.documents))
    except ClientDisconnected:
        return Response(status_code=499)
    return {"ids": [r.index for r in result]}


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
