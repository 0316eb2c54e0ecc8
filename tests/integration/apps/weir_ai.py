"""step.ai.infer with weir.sdk (twin of inngest_ai.py), against the fake LLM at $FAKE_LLM_URL."""

import os
from typing import Any

from fastapi import FastAPI
from weir.sdk import Context, StepError, Weir, serve

weir = Weir(os.environ.get("APP_ID", "weirai"))
LLM = os.environ.get("FAKE_LLM_URL", "http://127.0.0.1:9")
ASK = {"max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


@weir.function("ai-anthropic", event="ai/anthropic")
async def ai_anthropic(ctx: Context) -> Any:
    answer = await ctx.step.ai.infer(
        "ask",
        url=f"{LLM}/anthropic/v1/messages",
        format="anthropic",
        auth_key="sk-anthropic",
        headers={"anthropic-version": "2023-06-01"},
        body={"model": "claude-x", **ASK},
    )
    after = await ctx.step.run("after", lambda: "ran after")
    return {"answer": answer, "after": after}


def _openai(path: str) -> dict[str, Any]:
    url = f"{LLM}/{path}/v1/chat/completions"
    return {"url": url, "format": "openai-chat", "auth_key": "sk-openai"}


@weir.function("ai-openai", event="ai/openai")
async def ai_openai(ctx: Context) -> Any:
    return await ctx.step.ai.infer("ask", body={"model": "gpt-x", **ASK}, **_openai("openai"))


async def _caught(ctx: Context, path: str) -> Any:
    try:
        return await ctx.step.ai.infer("ask", body={"model": "gpt-x", **ASK}, **_openai(path))
    except StepError as err:
        return {"error": err.name, "message": err.message}


@weir.function("ai-down", event="ai/down", retries=1)
async def ai_down(ctx: Context) -> Any:
    return await _caught(ctx, "down")


@weir.function("ai-redirect", event="ai/redirect", retries=2)
async def ai_redirect(ctx: Context) -> Any:
    return await _caught(ctx, "redirect")


app = FastAPI()
serve(app, weir)
