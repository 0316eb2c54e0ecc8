"""step.ai.infer with the official `inngest` SDK, against the fake LLM at $FAKE_LLM_URL."""

import os
from typing import Any

import inngest
import inngest.fast_api
from fastapi import FastAPI
from inngest.experimental.ai import anthropic, openai

client = inngest.Inngest(app_id=os.environ.get("APP_ID", "inngestai"))
LLM = os.environ.get("FAKE_LLM_URL", "http://127.0.0.1:9")
ASK = {"max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


def _openai(path: str) -> openai.Adapter:
    return openai.Adapter(auth_key="sk-openai", base_url=f"{LLM}/{path}/v1", model="gpt-x")


@client.create_function(fn_id="ai-anthropic", trigger=inngest.TriggerEvent(event="ai/anthropic"))
async def ai_anthropic(ctx: inngest.Context) -> Any:
    adapter = anthropic.Adapter(
        auth_key="sk-anthropic", base_url=f"{LLM}/anthropic/v1", model="claude-x"
    )
    answer = await ctx.step.ai.infer("ask", adapter=adapter, body=dict(ASK))
    after = await ctx.step.run("after", lambda: "ran after")
    return {"answer": answer, "after": after}


@client.create_function(fn_id="ai-openai", trigger=inngest.TriggerEvent(event="ai/openai"))
async def ai_openai(ctx: inngest.Context) -> Any:
    return await ctx.step.ai.infer("ask", adapter=_openai("openai"), body=dict(ASK))


async def _caught(ctx: inngest.Context, path: str) -> Any:
    try:
        return await ctx.step.ai.infer("ask", adapter=_openai(path), body=dict(ASK))
    except inngest.StepError as err:
        return {"error": err.name, "message": err.message}


@client.create_function(fn_id="ai-down", trigger=inngest.TriggerEvent(event="ai/down"), retries=1)
async def ai_down(ctx: inngest.Context) -> Any:
    return await _caught(ctx, "down")


@client.create_function(
    fn_id="ai-redirect", trigger=inngest.TriggerEvent(event="ai/redirect"), retries=2
)
async def ai_redirect(ctx: inngest.Context) -> Any:
    return await _caught(ctx, "redirect")


app = FastAPI()
inngest.fast_api.serve(app, client, [ai_anthropic, ai_openai, ai_down, ai_redirect])
