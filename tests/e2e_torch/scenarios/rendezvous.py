"""c3: launched by hand (env://) with WORLD_SIZE=3 but only ranks 0 and 1 started.

Rank 0 hosts the TCPStore and waits for 3 clients; rank 1 waits for the PG keys.  Both time out
after E2E_PG_TIMEOUT seconds (the store timeout, lab-notes section 8: 5 s).
"""

from __future__ import annotations

from common import finish, log, setup


def main() -> None:
    rank, world = setup()
    log(f"rank {rank}: joined a world of {world}")
    finish()


if __name__ == "__main__":
    main()
