"""The event object, strict as the protocol requires (integer `ts`, string `id`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Event(BaseModel):
    """An event: sent with `Weir.send`, received as `ctx.event` or from `wait_for_event`."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    name: str
    data: dict[str, Any] = Field(default_factory=dict)
    id: str = ""  # empty: let the server assign one (a set id de-duplicates)
    ts: int = 0  # Unix ms; 0: "now" when sending

    @field_validator("data", mode="before")
    @classmethod
    def _null_data_is_empty(cls, value: object) -> object:
        return {} if value is None else value

    def to_wire(self) -> dict[str, Any]:
        """The JSON sent to the Event API: `id` only when set (§6)."""
        body: dict[str, Any] = {"name": self.name, "data": self.data, "ts": self.ts}
        if self.id:
            body["id"] = self.id
        return body
