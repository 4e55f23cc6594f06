"""The forms in which people paste a log line: prefixes, colours, line endings, progress bars, wraps,
and every way Python and the launchers print an exception. Used by the property tests.

Each mutation takes one line and returns the text a user would paste (possibly several lines).
"""

from __future__ import annotations

import re
from collections.abc import Callable

ESC = "\x1b"

RANK_PREFIXES = (
    "[rank3]:", "[rank3]: ", "[rank3]:[rank3]: ", "[rank12]:[rank12]:[rank12]: ", "[default3]:",
    "3: ", "[1,3]<stderr>:", "(pid=4242) [rank3]: ",
)
LOGGER_PREFIXES = (
    "2024-05-01 12:00:00,123 - ERROR - ",
    "[2024-05-01 12:00:00,123] [ERROR] [engine.py:1234:step] ",
    "E0501 12:00:00.123456 140071 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1234] ",
    "[E501 12:00:00.123456 140071 ProcessGroupNCCL.cpp:1234] ",
    "ERROR:root:",
    "INFO:__main__:",
    "[2024-05-01T12:00:00Z] ",
    "May 01 12:00:00 node-a python[4242]: ",
    "12:00:00 | ERROR    | train:main:88 - ",
)
INDENTS = ("  ", "    ", "\t", "        ")
QUOTES = ("> ", ">> ", ">")  # Markdown block quotes of an issue or a reply
COLOURS = ("\x1b[31m", "\x1b[1;31m", "\x1b[38;5;196m", "\x1b[0;33m")
RESET = "\x1b[0m"
TQDM = " 45%|\u2588\u2588\u2588\u2588\u258c     | 45/100 [00:10<00:12,  4.50it/s]"
CHAIN_HEADERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_TYPED = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure|NotMet)): (?P<msg>.+)$")


def typed(line: str) -> re.Match[str] | None:
    """``Type: message`` split into its parts, when the line is a printed exception."""
    return _TYPED.match(line.strip())


def with_prefix(line: str, prefix: str) -> str:
    return f"{prefix}{line}"


def coloured(line: str, colour: str = COLOURS[0]) -> str:
    return f"{colour}{line}{RESET}"


def coloured_prefix(line: str, prefix: str, colour: str = COLOURS[1]) -> str:
    """The logger colours its level/prefix only (as rich or colorlog do)."""
    return f"{colour}{prefix}{RESET}{line}"


def inline_code(line: str) -> str:
    """The line pasted as Markdown inline code, as issue reports quote one line of output."""
    return f"`{line}`"


def markdown_rendered(line: str) -> list[str]:
    """A message whose names the library quoted with backticks, copied from a rendered Markdown issue (the
    backticks became inline code and are gone) or retyped with quotes; nothing when it has no backtick."""
    if "`" not in line:
        return []
    return [line.replace("`", ""), line.replace("`", "'"), line.replace("`", '"')]


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n") + "\r\n"


def after_progress_bar(line: str) -> str:
    """tqdm redraws its bar with carriage returns; the message follows the last redraw."""
    return f"{TQDM}\r{TQDM}\r{line}"


def before_progress_bar(line: str) -> str:
    return f"{line}\r{TQDM}"


def exception_forms(line: str) -> list[str]:
    """Every printed form of an exception line ``Type: message`` (nothing when it is not one).

    The forms without the type (message only, type last) are made only of messages long enough
    to be recognisable on their own."""
    m = typed(line)
    if not m:
        return []
    kind, msg = m.group("type"), m.group("msg")
    short = kind.rsplit(".", 1)[-1]
    shown = msg if msg[:1] in "'\"" and msg[-1:] == msg[:1] else repr(msg)  # KeyError's str is the key's repr
    forms = [
        f"{short}({shown})",                                   # repr, as logged objects print
        f"{CHAIN_HEADERS[0]}\n\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n{line}",
        f"{CHAIN_HEADERS[1]}\n\n{line}",
        f"torch.distributed.elastic.multiprocessing.errors.{short}: {msg}" if "." not in kind else f"{short}: {msg}",
    ]
    if len(msg) >= 20:
        forms += [msg, f"{msg} ({short})"]
    return forms


def wrapped(line: str, width: int) -> str:
    """A long line cut by the terminal at ``width`` columns."""
    if len(line) <= width:
        return line
    return "\n".join(line[i:i + width] for i in range(0, len(line), width))


Mutation = Callable[[str], str]
