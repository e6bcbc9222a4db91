"""Two airline agents for the conversations of suite.yaml, neither of which calls a model.

In a conversation task an agent is called once per turn with the conversation so far
(OpenAI-style messages, the user's newest last) and the tools; it returns its reply. These
agents read what they need from those messages — the booking reference in the first one,
what they offered in their own earlier replies — so every run of them is the same.

`careful_agent` looks the booking up before it says anything about it, offers the options,
and acts only once the customer has chosen. `hasty_agent` knows the same things and ends
each conversation with the same words, but acts on its first guess: it rebooks the first
flight and takes the first window seat before the customer chose, and refuses a refund from
the fare rules it assumes, without looking the booking up. An eval that reads only the last
reply passes it; the suite's turn rules do not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Messages = list[dict[str, str]]

_REFERENCE = re.compile(r"\b(?=[A-Z0-9]*\d)[A-Z0-9]{6}\b")
_OFFER = re.compile(r"\b([A-Z]{2}\d{3}) at (\d{2}):(\d{2})\b")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b")
_SEAT = re.compile(r"\b(\d{1,2}[A-F])\b", re.IGNORECASE)
_REBOOKED = re.compile(r"rebooked (?:you )?on ([A-Z]{2}\d{3} at \d{2}:\d{2})")
_MOVED = re.compile(r"your seat on ([A-Z]{2}\d{3}) is now (\d{1,2}[A-F])")
_FREE = re.compile(r"on ([A-Z]{2}\d{3})\. The window seats still free are ([^.]*)\.")


def careful_agent(messages: Messages, tools: Any) -> str:
    return _topic(messages)(messages, tools, True)


def hasty_agent(messages: Messages, tools: Any) -> str:
    return _topic(messages)(messages, tools, False)


def _topic(messages: Messages) -> Callable[[Messages, Any, bool], str]:
    first = messages[0]["content"].lower()
    if "seat" in first:
        return _seat
    if "refund" in first or "money back" in first:
        return _refund
    return _rebook


def _rebook(messages: Messages, tools: Any, careful: bool) -> str:
    reference, replies = _reference(messages), _replies(messages)
    if not replies:  # the first turn: what happened, and what can be offered
        booking = tools.call("bookings:get", {"bookingId": reference})
        if booking["status"] != "cancelled":
            return f"Your flight {booking['flight']} is not cancelled: there is nothing to rebook."
        where = {key: booking[key] for key in ("from", "to", "date")}
        flights = tools.call("flights:search", where)
        if not careful:  # the flaw: it books before the customer has chosen
            first = flights[0]
            tools.call("bookings:rebook", {"bookingId": reference, "flight": first["flight"]})
            return (
                f"Your flight {booking['flight']} was cancelled, so I have rebooked you on"
                f" {first['flight']} at {first['departs']}."
            )
        offer = " or ".join(f"{f['flight']} at {f['departs']}" for f in flights)
        return (
            f"I'm sorry: your flight {booking['flight']} on {booking['date']} was cancelled."
            f" I can rebook you free of charge on {offer}. Which would you like?"
        )
    booked = _found(_REBOOKED, replies)
    if booked is not None:
        return f"You are rebooked on {booked.group(1)}. Have a good flight!"
    offered = _OFFER.findall(replies[0])
    chosen = _chosen_flight(offered, messages[-1]["content"])
    if chosen is None:
        options = " or ".join(f"{flight} at {h}:{m}" for flight, h, m in offered)
        return f"Which flight would you like: {options}?"
    flight, hour, minute = chosen
    tools.call("bookings:rebook", {"bookingId": reference, "flight": flight})
    return f"Done: you are rebooked on {flight} at {hour}:{minute}."


def _chosen_flight(offered: list[tuple[str, str, str]], text: str) -> tuple[str, str, str] | None:
    """The offered flight the customer names, by number or by its hour ("the 9 am one")."""
    for option in offered:
        if option[0] in text:
            return option
    hours = set()
    for hour, _, half in _TIME.findall(text.lower()):
        value = int(hour)
        hours.add(value + 12 if half == "pm" and value < 12 else value)
    picked = [option for option in offered if int(option[1]) in hours]
    return picked[0] if len(picked) == 1 else None


def _seat(messages: Messages, tools: Any, careful: bool) -> str:
    reference, replies = _reference(messages), _replies(messages)
    if not replies:
        booking = tools.call("bookings:get", {"bookingId": reference})
        flight = booking["flight"]
        free = tools.call("seats:list", {"flight": flight})
        windows = [s["seat"] for s in free if s["type"] == "window"]
        if not windows:
            return f"I'm sorry: no window seat is free on {flight}."
        if not careful:  # the flaw: it picks the seat for the customer
            tools.call("bookings:change-seat", {"bookingId": reference, "seat": windows[0]})
            return f"Done: your seat on {flight} is now {windows[0]}, a window seat."
        return (
            f"You are in {booking['seat']}, a {booking['seatType']} seat, on {flight}."
            f" The window seats still free are {' and '.join(windows)}. Which would you like?"
        )
    moved = _found(_MOVED, replies)
    if moved is not None:
        return f"You're all set: your seat on {moved.group(1)} is now {moved.group(2)}."
    offer = _FREE.search(replies[0])
    if offer is None:
        return "Is there anything else I can help you with?"
    flight, offered = offer.group(1), _SEAT.findall(offer.group(2))
    chosen = [s.upper() for s in _SEAT.findall(messages[-1]["content"]) if s.upper() in offered]
    if not chosen:
        return f"Which window seat would you like: {' or '.join(offered)}?"
    tools.call("bookings:change-seat", {"bookingId": reference, "seat": chosen[0]})
    return f"Done: your seat on {flight} is now {chosen[0]}."


def _refund(messages: Messages, tools: Any, careful: bool) -> str:
    reference, replies = _reference(messages), _replies(messages)
    if replies:  # it has answered already: hold to it
        if "non-refundable" not in replies[0]:
            return "Is there anything else I can help you with?"
        if "thank" in messages[-1]["content"].lower():
            return f"You're welcome. Booking {reference} stays as it is: it is non-refundable."
        return (
            f"I'm sorry, I can't make an exception: booking {reference} is non-refundable."
            " I can move it to another date instead, for the change fee."
        )
    if not careful:  # the flaw: it answers from the fare rules it assumes
        return (
            f"Basic fares are non-refundable, so I can't refund booking {reference}."
            " I can move it to another date instead, for the change fee."
        )
    booking = tools.call("bookings:get", {"bookingId": reference})
    if booking["refundable"]:
        tools.call("payments:refund", {"bookingId": reference, "amountUsd": booking["paidUsd"]})
        return f"Done: ${booking['paidUsd']:.2f} for booking {reference} is on its way back to you."
    return (
        f"I've checked booking {reference}: its {booking['fare']} fare is non-refundable, so"
        " I can't refund it. I can move it to another date instead, for the change fee."
    )


def _reference(messages: Messages) -> str:
    """The booking reference the customer gave in their first message."""
    found = _REFERENCE.search(messages[0]["content"])
    return found.group(0) if found else ""


def _replies(messages: Messages) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "assistant"]


def _found(pattern: re.Pattern[str], replies: list[str]) -> re.Match[str] | None:
    """The first of the agent's own replies that says ``pattern``."""
    for reply in replies:
        match = pattern.search(reply)
        if match is not None:
            return match
    return None
