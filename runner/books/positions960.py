"""Numbered Chess960 / DFRC start positions as an opening "book" (``Openings.Positions``).

The positions become :class:`runner.domain.models.Opening` entries without moves, so the
order, its storage with the event and the assignment to matches are those of every book
(runner.books.openings): both games of a match start from the same position, colours
reversed, and a resumed event gives every match the position it would have had.
"""

from __future__ import annotations

import random

from runner.config.typed import OpeningsConfig
from runner.domain.models import Opening
from runner.domain.variant import POSITIONS, position_fen, position_name

RANDOM_DFRC_STARTS = 960  # how many distinct [White, Black] pairs ``Positions: random`` draws


def positions_book(config: OpeningsConfig, random_seed: int = 0) -> list[Opening]:
    """The start positions of ``config`` (format ``positions``), in the listed order."""
    return [Opening(index=i, name=position_name(white, black), fen=position_fen(white, black))
            for i, (white, black) in enumerate(position_numbers(config, random_seed))]


def position_numbers(config: OpeningsConfig,
                     random_seed: int = 0) -> tuple[tuple[int, int | None], ...]:
    """The numbers of :func:`positions_book`'s starts, (White's, Black's or None), without
    their boards (`validate` needs only how many: the loader checked each number).

    ``Positions: random``: every one of the 960 positions (chess960), or 960 distinct
    [White, Black] pairs drawn from ``random_seed`` (dfrc); the event's opening order
    (drawn from the same seed, stored with the event) then picks them.
    """
    if config.positions is not None:
        return config.positions
    if config.variant == "dfrc":
        rng = random.Random(f"swiss-runner dfrc {random_seed}")
        drawn = rng.sample(range(POSITIONS * POSITIONS), RANDOM_DFRC_STARTS)
        return tuple((n // POSITIONS, n % POSITIONS) for n in drawn)
    return tuple((n, None) for n in range(POSITIONS))
