"""Shell completion scripts generated from the argument parser (shtab: static scripts, no runtime hook).

shtab writes a plain bash/zsh completion function from the argparse tree, so completing costs the
shell nothing and never starts Python (argcomplete would run the CLI on every <TAB>).
"""

from __future__ import annotations

import argparse

import shtab


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` ('bash' or 'zsh')."""
    return shtab.complete(parser, shell=shell)
