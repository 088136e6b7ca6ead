"""Elo ratings and match statistics of an event (pure: no I/O, no clock).

Model (the one Ordo 1.2.6 uses by default, see docs/ratings.md):

- Every game is a Bernoulli trial on White's points s (1, ½, 0) with expectation
  ``E = 1 / (1 + exp(-beta * (R_white + W - R_black)))``, ``beta = ln(0.76/0.24) / 202``
  (Ordo's scale: a 202-point edge is a 76% expectation). Ratings R and the white advantage W
  maximise ``sum s ln E + (1 - s) ln(1 - E)`` (draws are half points).
- Players with all wins or all losses have no finite maximum: they are left out of the fit
  and reported as not rated, with Ordo's estimate (the rating at which that perfect score has
  a 50% chance) for reference. Groups not connected by games both ways are fitted apart.
- The draw rate between equal players (``draw_rate``) sets the win/draw/loss split used by the
  simulations: D = draws, W·L = (D (1 - d0) / (2 d0))², fitted so the expected number of draws
  equals the observed one (Ordo -D).
- Error margins: parametric bootstrap. ``simulations`` events are drawn from the fitted model
  with a seeded generator, refitted the same way; the margin is z(confidence) × the standard
  deviation of each rating; the likelihood of superiority over the next engine is
  Phi(diff / sd(diff)).

Byes are not games: callers pass only played games (extra tie-break games included).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import optimize, sparse, special
from scipy.sparse.csgraph import connected_components

from runner.domain.endings import GameEnd
from runner.domain.text import fixed_text
from runner.errors import RecordInvalid

ORDO_SCALE = 202.0  # Ordo's -z default: 202 Elo = 76% expectation
_POINTS = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}
_MIN_PROB = 1e-32  # as Ordo's get_pWDL
_MAX_STEP = 300.0  # Elo per Newton step in the simulations (damping)
_REDRAWS = 100  # Ordo redraws a simulated event that is not connected up to 100 times


# --------------------------------------------------------------------------- input / options


@dataclass(frozen=True)
class Game:
    """One played game (never a bye)."""

    white: str
    black: str
    result: str  # "1-0" | "0-1" | "1/2-1/2"
    round: int = 0
    end: GameEnd = GameEnd.UNKNOWN
    extra: bool = False  # an extra tie-break game: rated like any other
    game: int = 0  # order within the round (pairs the two games of a double round)


@dataclass(frozen=True)
class RatingOptions:
    anchor: str | None = None  # None: the pool average is ``elo``
    elo: float = 0.0  # rating of the anchor, or of the pool average
    white_advantage: float | None = 0.0  # None: fitted (Ordo -W); else fixed, in Elo (-w; Ordo's default 0)
    draw_rate: float | None = None  # None: fitted (Ordo -D); else fixed fraction 0..1 (-d)
    simulations: int = 1000  # 0: no error margins
    seed: int = 0
    confidence: float = 95.0  # percent
    scale: float = ORDO_SCALE  # Elo for a 76% expectation

    def __post_init__(self) -> None:
        if self.simulations < 0:
            raise ValueError(f"simulations must be >= 0, got {self.simulations}")
        if not 0 < self.confidence < 100:
            raise ValueError(f"confidence must be between 0 and 100 (percent), got {self.confidence}")
        if self.draw_rate is not None and not 0 <= self.draw_rate < 1:
            raise ValueError(f"draw rate must be a fraction in [0, 1), got {self.draw_rate}")
        if self.scale <= 0:
            raise ValueError(f"scale must be > 0, got {self.scale}")

    @property
    def beta(self) -> float:
        return math.log(0.76 / 0.24) / self.scale


# --------------------------------------------------------------------------- output


@dataclass
class SideStats:
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def points(self) -> float:
        return self.wins + self.draws / 2

    def add(self, points: float) -> None:
        self.games += 1
        if points == 1:
            self.wins += 1
        elif points == 0:
            self.losses += 1
        else:
            self.draws += 1


@dataclass
class PairStats:
    """Double-round pairs (two games, same round, same engines, colours reversed)."""

    won: int = 0
    drawn: int = 0
    lost: int = 0
    pentanomial: list[int] = field(default_factory=lambda: [0] * 5)  # pair points 0, ½, 1, 1½, 2

    @property
    def pairs(self) -> int:
        return self.won + self.drawn + self.lost


@dataclass
class PlayerStats:
    name: str
    rating: float | None = None  # None: not rated (see ``unrated``)
    error: float | None = None  # +- margin at the confidence level (None: no simulations)
    los: float | None = None  # % likelihood of superiority over the next rated row
    unrated: str | None = None  # why there is no rating: "all wins", "all losses", "no games"
    estimate: float | None = None  # Ordo-style estimate for an unrated player
    group: int = 0  # connected group (1 = the largest); ratings compare only within a group
    white: SideStats = field(default_factory=SideStats)
    black: SideStats = field(default_factory=SideStats)
    pairs: PairStats = field(default_factory=PairStats)
    performance: float | None = None
    opponents: float | None = None  # average rating of the opponents (per game)
    ends: dict[GameEnd, list[int]] = field(default_factory=dict)  # class -> [won, drawn, lost]

    @property
    def games(self) -> int:
        return self.white.games + self.black.games

    @property
    def points(self) -> float:
        return self.white.points + self.black.points

    @property
    def wins(self) -> int:
        return self.white.wins + self.black.wins

    @property
    def draws(self) -> int:
        return self.white.draws + self.black.draws

    @property
    def losses(self) -> int:
        return self.white.losses + self.black.losses

    @property
    def score_pct(self) -> float | None:
        return 100 * self.points / self.games if self.games else None

    @property
    def draw_pct(self) -> float | None:
        return 100 * self.draws / self.games if self.games else None


@dataclass
class Ratings:
    players: list[PlayerStats]  # rated players by rating (best first), then the unrated ones
    options: RatingOptions
    white_advantage: float
    white_advantage_error: float | None
    draw_rate: float  # fraction, between equal players
    games: int
    groups: list[list[str]]  # players of each group, group 1 first
    notes: list[str]  # human-readable problems (unrated players, groups)
    ends: dict[GameEnd, dict[str, int]]  # class -> {"1-0": n, "1/2-1/2": n, "0-1": n}
    simulations_redrawn: int = 0
    # why the anchor cannot be rated ("all wins", "all losses", "no games", "not connected"):
    # the ratings are then placed on a pool average of ``options.elo`` instead
    anchor_unrated: str | None = None

    def player(self, name: str) -> PlayerStats:
        for p in self.players:
            if p.name == name:
                return p
        raise KeyError(name)


# --------------------------------------------------------------------------- model


def expected_score(diff: np.ndarray | float, beta: float) -> np.ndarray | float:
    """Expected points for a rating edge ``diff`` (Elo; white advantage included)."""
    return special.expit(beta * np.asarray(diff, dtype=float))


def wdl_probabilities(diff: np.ndarray, draw_rate: float, beta: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Win, draw and loss probabilities for an edge ``diff`` with Ordo's draw model.

    With p the expectation and d0 the draw rate between equals, the draw probability D solves
    W·L = (D (1 - d0) / (2 d0))², W = p - D/2, L = 1 - p - D/2 (Ordo's get_pWDL).
    """
    p = np.asarray(expected_score(diff, beta))
    d0 = float(draw_rate)
    c = 4 * (p * p - p)
    if d0 < 1e-5:
        pdraw = 2 * d0 * np.sqrt(np.maximum(p - p * p, 0)) - d0 * d0
    else:
        a = (1 - 2 * d0) / (d0 * d0)
        pdraw = -c / 2 if abs(a) < 1e-12 else (np.sqrt(np.maximum(1 - a * c, 0)) - 1) / a
    ploss = np.maximum(1 - p - pdraw / 2, _MIN_PROB)
    pdraw = np.maximum(pdraw, _MIN_PROB)
    pwin = np.maximum(1 - ploss - pdraw, 0.0)
    return pwin, pdraw, ploss


def fit_draw_rate(diff: np.ndarray, draws: float, beta: float) -> float:
    """The d0 for which the expected number of draws equals ``draws`` (Ordo -D)."""
    n = len(diff)
    if n == 0 or draws <= 0:
        return 0.0

    def excess(d0: float) -> float:
        return float(np.sum(wdl_probabilities(diff, d0, beta)[1])) - draws

    hi = 1 - 1e-9
    if excess(hi) <= 0:
        return hi
    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-10))


@dataclass
class _Design:
    """The games as index arrays over the fitted parameters (players, then the white advantage)."""

    n_players: int
    white: np.ndarray
    black: np.ndarray

    @property
    def k(self) -> int:
        return self.n_players + 1

    def matrix(self) -> sparse.csr_matrix:
        g = len(self.white)
        rows = np.repeat(np.arange(g), 3)
        cols = np.stack([self.white, self.black, np.full(g, self.n_players)], axis=1).ravel()
        vals = np.tile([1.0, -1.0, 1.0], g)
        return sparse.csr_matrix((vals, (rows, cols)), shape=(g, self.k))

    def outer(self) -> sparse.csr_matrix:
        """Row g = vec(x_g x_gᵀ), to build every simulation's Hessian with one product."""
        x = self.matrix().toarray()
        g = len(self.white)
        dense = (x[:, :, None] * x[:, None, :]).reshape(g, self.k * self.k)
        return sparse.csr_matrix(dense)


def _groups(n: int, white: np.ndarray, black: np.ndarray, score: np.ndarray,
            active: np.ndarray) -> tuple[int, np.ndarray]:
    """Strongly connected groups of the 'scored against' graph among ``active`` players.

    i -> j when i scored at least a draw against j. A finite maximum-likelihood rating
    difference between two players exists only inside such a group. Inactive players: -1.
    """
    keep = active[white] & active[black]
    w, b, s = white[keep], black[keep], score[keep]
    rows = np.concatenate([w[s > 0], b[s < 1]])
    cols = np.concatenate([b[s > 0], w[s < 1]])
    graph = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=True, connection="strong")
    labels = np.where(active, labels, -1)
    # renumber: largest group first, then by first member
    ids = [lab for lab in dict.fromkeys(labels.tolist()) if lab >= 0]
    ids.sort(key=lambda lab: -int(np.sum(labels == lab)))
    remap = {lab: i for i, lab in enumerate(ids)}
    return len(ids), np.array([remap.get(lab, -1) for lab in labels.tolist()])


def _perfect(n: int, white: np.ndarray, black: np.ndarray, score: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """(all wins, all losses) flags; players without games are neither."""
    points = np.bincount(white, score, n) + np.bincount(black, 1 - score, n)
    games = np.bincount(white, minlength=n) + np.bincount(black, minlength=n)
    return (games > 0) & (points == games), (games > 0) & (points == 0)


def _mle(design: _Design, score: np.ndarray, labels: np.ndarray, beta: float,
         wadv: float | None) -> tuple[np.ndarray, float]:
    """Maximum likelihood ratings (each group's mean 0) and white advantage (scipy)."""
    n = design.n_players
    # only games inside a group: between groups the results all go one way, so the
    # likelihood's maximum puts the groups infinitely apart and those games add nothing
    use = (labels[design.white] >= 0) & (labels[design.white] == labels[design.black])
    w, b, s = design.white[use], design.black[use], score[use]
    ngroups = int(labels.max()) + 1 if (labels >= 0).any() else 0
    pinned = [int(np.flatnonzero(labels == g)[0]) for g in range(ngroups)]
    free = [i for i in range(n) if labels[i] >= 0 and i not in pinned]
    fit_wadv = wadv is None
    index = np.full(n + 1, -1)
    index[free] = np.arange(len(free))
    if fit_wadv:
        index[n] = len(free)
    m = len(free) + int(fit_wadv)
    rows = np.repeat(np.arange(len(w)), 3)
    cols = np.stack([index[w], index[b], np.full(len(w), index[n])], axis=1).ravel()
    vals = np.tile([1.0, -1.0, 1.0], len(w))
    ok = cols >= 0
    x = sparse.csr_matrix((vals[ok], (rows[ok], cols[ok])), shape=(len(w), m))
    offset = 0.0 if fit_wadv else float(wadv or 0.0)

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = beta * (x @ theta + offset)
        # -[s ln E + (1 - s) ln(1 - E)] with E = expit(z), written stably
        value = float(np.sum(np.logaddexp(0, z) - s * z))
        grad = beta * (x.T @ (special.expit(z) - s))
        return value, grad

    def hess(theta: np.ndarray) -> np.ndarray:
        e = special.expit(beta * (x @ theta + offset))
        return beta * beta * (x.T @ (x.multiply((e * (1 - e))[:, None]))).toarray()

    theta = np.zeros(m)
    if m:
        res = optimize.minimize(nll, theta, jac=True, hess=hess, method="trust-exact",
                                options={"gtol": 1e-10})
        theta = res.x
    ratings = np.zeros(n)
    ratings[free] = theta[: len(free)]
    for g in range(ngroups):
        members = labels == g
        ratings[members] -= ratings[members].mean()
    ratings[labels < 0] = np.nan
    return ratings, float(theta[-1]) if fit_wadv else offset


def _superplayer_rating(winner: bool, opp: np.ndarray, beta: float, draw_rate: float) -> float:
    """Ordo's rating for a perfect score: the one at which it has a 50% chance.

    ``opp`` holds, per game, the opponent's rating minus this player's colour advantage.
    """
    def log_chance(x: float) -> float:
        pw, _, pl = wdl_probabilities(x - opp, draw_rate, beta)
        return float(np.sum(np.log(np.maximum(pw if winner else pl, 1e-300)))) - math.log(0.5)

    lo, hi = float(opp.min()) - 2000, float(opp.max()) + 2000
    return float(optimize.brentq(log_chance, lo, hi, xtol=1e-7))


def _fit_once(design: _Design, score: np.ndarray, beta: float, wadv: float | None,
              draw_rate: float | None) -> dict[str, Any]:
    """One complete fit of one event: perfect scores out, groups, MLE, draw rate, estimates."""
    n = design.n_players
    has_games = (np.bincount(design.white, minlength=n) + np.bincount(design.black, minlength=n)) > 0
    winners, losers = _perfect(n, design.white, design.black, score)
    active = has_games & ~winners & ~losers
    ngroups, labels = _groups(n, design.white, design.black, score, active)
    sizes = np.bincount(labels[labels >= 0], minlength=max(ngroups, 1))
    isolated = (labels >= 0) & (sizes[np.maximum(labels, 0)] == 1)
    if isolated.any():  # a group of one has nothing to be rated against
        ngroups, labels = _groups(n, design.white, design.black, score, active & ~isolated)
    ratings, wa = _mle(design, score, labels, beta, wadv)
    rated = (labels[design.white] >= 0) & (labels[design.white] == labels[design.black])
    diff = ratings[design.white[rated]] + wa - ratings[design.black[rated]]
    if draw_rate is None:
        draw_rate = fit_draw_rate(diff, float(np.sum(score[rated] == 0.5)), beta)
    estimates = np.full(n, np.nan)
    for i in np.flatnonzero(winners | losers):
        as_white, as_black = design.white == i, design.black == i
        opp = np.concatenate([ratings[design.black[as_white]] - wa, ratings[design.white[as_black]] + wa])
        opp = opp[~np.isnan(opp)]
        if len(opp):
            estimates[i] = _superplayer_rating(bool(winners[i]), opp, beta, draw_rate)
    return {"ratings": ratings, "wadv": wa, "draw_rate": draw_rate, "labels": labels,
            "ngroups": ngroups, "winners": winners, "losers": losers, "has_games": has_games,
            "isolated": isolated,
            "estimates": estimates}


# --------------------------------------------------------------------------- simulations


def _simulate(design: _Design, truth: np.ndarray, wadv: float, draw_rate: float, beta: float,
              fit_wadv: bool, ngroups: int, simulations: int, seed: int,
              batch: int = 250) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Refitted ratings (simulations x players, NaN where not rated) and white advantages.

    ``truth`` holds the ratings the events are drawn from (estimates for perfect scores).
    ``ngroups`` counts the real event's groups plus its perfect scores. A simulated event
    that splits into more (a new perfect score, or a new disconnected group) is redrawn, up to
    100 times, as Ordo 1.2.6 does: the margins are those of events in which every engine
    gets a rating. Returns (ratings, white advantages, fitted-by-ML mask (not a
    perfect score in that simulation), number of redraws).
    """
    rng = np.random.default_rng(seed)
    n, k = design.n_players, design.k
    diff = truth[design.white] + wadv - truth[design.black]
    pwin, pdraw, _ = wdl_probabilities(diff, draw_rate, beta)
    x = design.matrix()
    outer = design.outer()
    out_r = np.empty((simulations, n))
    out_w = np.empty(simulations)
    out_a = np.empty((simulations, n), dtype=bool)
    redrawn = 0
    done = 0
    while done < simulations:
        size = min(batch, simulations - done)
        scores = np.empty((size, len(diff)))
        labels = np.empty((size, n), dtype=int)
        for i in range(size):
            for attempt in range(_REDRAWS + 1):
                u = rng.random(len(diff))
                s = np.where(u < pwin, 1.0, np.where(u < pwin + pdraw, 0.5, 0.0))
                winners, losers = _perfect(n, design.white, design.black, s)
                has = (np.bincount(design.white, minlength=n) + np.bincount(design.black, minlength=n)) > 0
                count, lab = _groups(n, design.white, design.black, s, has & ~winners & ~losers)
                if count + int(np.sum(winners | losers)) <= ngroups or attempt == _REDRAWS:
                    break
                redrawn += 1
            scores[i], labels[i] = s, lab
        r, w = _batch_newton(x, outer, scores, labels, beta, wadv, fit_wadv, n, k)
        for i in range(size):
            est = _estimates_for(design, scores[i], labels[i], r[i], w[i], beta, draw_rate)
            r[i] = np.where(np.isnan(r[i]), est, r[i])
        out_r[done:done + size], out_w[done:done + size] = r, w
        out_a[done:done + size] = labels >= 0
        done += size
    return out_r, out_w, out_a, redrawn


def _estimates_for(design: _Design, score: np.ndarray, labels: np.ndarray, ratings: np.ndarray,
                   wadv: float, beta: float, draw_rate: float) -> np.ndarray:
    n = design.n_players
    winners, losers = _perfect(n, design.white, design.black, score)
    est = np.full(n, np.nan)
    for i in np.flatnonzero(winners | losers):
        as_white, as_black = design.white == i, design.black == i
        opp = np.concatenate([ratings[design.black[as_white]] - wadv,
                              ratings[design.white[as_black]] + wadv])
        opp = opp[~np.isnan(opp)]
        if len(opp):
            est[i] = _superplayer_rating(bool(winners[i]), opp, beta, draw_rate)
    return est


def _batch_newton(x: sparse.csr_matrix, outer: sparse.csr_matrix, scores: np.ndarray,
                  labels: np.ndarray, beta: float, wadv: float, fit_wadv: bool, n: int, k: int,
                  iterations: int = 100, tol: float = 1e-7) -> tuple[np.ndarray, np.ndarray]:
    """Fit many simulated events at once: damped Newton steps, one batched solve per step.

    Players outside every group (perfect scores) are held fixed (their games are masked);
    each group's ratings keep mean 0 (the gauge term sum_g u_g u_gᵀ removes the null space).
    """
    size = scores.shape[0]
    active = labels >= 0
    theta = np.zeros((size, k))
    theta[:, n] = 0.0 if fit_wadv else wadv
    dense_x = x.toarray()
    white = np.argmax(dense_x[:, :n] == 1, axis=1)
    black = np.argmax(dense_x[:, :n] == -1, axis=1)
    mask = active[:, white] & (labels[:, white] == labels[:, black])
    free = np.concatenate([active, np.full((size, 1), fit_wadv)], axis=1).astype(float)
    same = (labels[:, :, None] == labels[:, None, :]) & active[:, :, None]
    gauge = np.zeros((size, k, k))
    gauge[:, :n, :n] = same / np.maximum(active.sum(axis=1), 1)[:, None, None]
    fixed = np.zeros((size, k, k))
    idx = np.arange(k)
    fixed[:, idx, idx] = 1 - free
    ridge = 1e-12 * np.eye(k)
    for _ in range(iterations):
        z = beta * (theta @ dense_x.T)
        e = special.expit(z)
        resid = np.where(mask, scores - e, 0.0)
        grad = beta * (resid @ dense_x) * free  # ascent direction
        wgt = np.where(mask, e * (1 - e), 0.0)
        hess = (beta * beta) * np.asarray(outer.T @ wgt.T).T.reshape(size, k, k)
        # (the tiny ridge only keeps a step defined when a simulated event leaves a parameter
        # without games, e.g. the white advantage when every game is masked; the gradient,
        # hence the solution, is unchanged)
        hess = hess * free[:, :, None] * free[:, None, :] + gauge + fixed + ridge
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        step = np.clip(step, -_MAX_STEP, _MAX_STEP)
        theta += step
        if np.max(np.abs(step)) < tol:
            break
    ratings = theta[:, :n].copy()
    for s in range(size):
        for g in range(int(labels[s].max()) + 1):
            members = labels[s] == g
            ratings[s, members] -= ratings[s, members].mean()
    ratings[~active] = np.nan
    return ratings, theta[:, n].copy()


# --------------------------------------------------------------------------- statistics


def _pairs(games: Sequence[Game]) -> list[tuple[Game, Game]]:
    """Double-round pairs: two games of one round between the same engines, colours reversed."""
    pending: dict[tuple[int, frozenset[str]], Game] = {}
    out: list[tuple[Game, Game]] = []
    for g in sorted(games, key=lambda g: (g.round, g.game)):
        key = (g.round, frozenset((g.white, g.black)))
        first = pending.pop(key, None)
        if first is not None and first.white == g.black:
            out.append((first, g))
        else:
            pending[key] = g
    return out


def _center(ratings: np.ndarray, labels: np.ndarray, options: RatingOptions,
            names: Sequence[str]) -> np.ndarray:
    """Place every group: the anchor's group on the anchor; every other group's mean on ``elo``."""
    out = ratings.copy()
    anchor = names.index(options.anchor) if options.anchor is not None else None
    for g in range(int(labels.max()) + 1 if (labels >= 0).any() else 0):
        members = labels == g
        if anchor is not None and labels[anchor] == g:
            out[members] += options.elo - ratings[anchor]
        else:
            out[members] += options.elo - ratings[members].mean()
    return out


def compute_ratings(games: Iterable[Game], options: RatingOptions | None = None,
                    players: Sequence[str] = ()) -> Ratings:
    """Ratings and statistics of every engine in ``games`` (and in ``players``, if given).

    Raises ValueError on a bad result, an engine playing itself, or an anchor that is not an
    engine of the event. An anchor that cannot be rated yet (all wins, all losses, no games,
    not connected) is no error: the ratings are placed on a pool average of ``options.elo``
    and ``anchor_unrated`` (and a note) says why.
    """
    options = options or RatingOptions()
    games = list(games)
    names: list[str] = list(dict.fromkeys([*players, *(n for g in games for n in (g.white, g.black))]))
    _check_games(games, options, names)
    index = {name: i for i, name in enumerate(names)}
    design = _Design(len(names), np.array([index[g.white] for g in games], dtype=int),
                     np.array([index[g.black] for g in games], dtype=int))
    score = np.array([_POINTS[g.result] for g in games])
    beta = options.beta
    fit = _fit_once(design, score, beta, options.white_advantage, options.draw_rate)
    labels, wadv, draw_rate = fit["labels"], fit["wadv"], fit["draw_rate"]
    anchor_unrated = _anchor_unrated(options.anchor, index, fit)
    placed = replace(options, anchor=None) if anchor_unrated else options
    centred = _center(fit["ratings"], labels, placed, names)
    # perfect scores: Ordo's estimate against the placed ratings
    est = _estimates_for(design, score, labels, centred, wadv, beta, draw_rate)
    truth = np.where(np.isnan(centred), est, centred)
    errors, wadv_error, redrawn, sims = _margins(design, truth, fit, options, placed, index,
                                                 len(games))
    stats_by = _tally(games, names)
    notes = _rate_players(stats_by, names, fit, centred, est, errors)
    for name in names:
        _performance(stats_by[name], name, games, truth, index, beta)
    groups = [[names[i] for i in np.flatnonzero(labels == g)] for g in range(fit["ngroups"])]
    notes[:0] = _anchor_note(options, anchor_unrated)
    notes += _groups_note(groups, options, placed)
    order = sorted(range(len(names)), key=lambda i: (labels[i] < 0, -(centred[i] if labels[i] >= 0 else 0), names[i]))
    ranked = [stats_by[names[i]] for i in order]
    if sims is not None:
        _likelihoods_of_superiority(ranked, sims, index)
    ends: dict[GameEnd, dict[str, int]] = {}
    for g in games:
        row = ends.setdefault(g.end, {"1-0": 0, "1/2-1/2": 0, "0-1": 0})
        row[g.result] += 1
    return Ratings(players=ranked, options=options, white_advantage=wadv,
                   white_advantage_error=wadv_error, draw_rate=draw_rate, games=len(games),
                   groups=groups, notes=notes, ends=ends, simulations_redrawn=redrawn,
                   anchor_unrated=anchor_unrated)


def _check_games(games: Sequence[Game], options: RatingOptions, names: Sequence[str]) -> None:
    """RecordInvalid for a game the model cannot take; ValueError for an anchor not in ``names``."""
    for g in games:
        if not isinstance(g.round, int) or not isinstance(g.game, int):
            raise RecordInvalid(f"game {g.white} - {g.black}: round {g.round!r}, game "
                                f"{g.game!r}: not numbers")
        if g.result not in _POINTS:
            raise RecordInvalid(f"game {g.white} - {g.black} (round {g.round}): result {g.result!r} "
                             f"is not 1-0, 0-1 or 1/2-1/2")
        if g.white == g.black:
            raise RecordInvalid(f"game {g.white} - {g.black} (round {g.round}): an engine cannot play itself")
    if options.anchor is not None and options.anchor not in names:
        raise ValueError(f"anchor {options.anchor!r} played no game (engines: {', '.join(names)})")


def _margins(design: _Design, truth: np.ndarray, fit: dict[str, Any], options: RatingOptions,
             placed: RatingOptions, index: dict[str, int], games: int
             ) -> tuple[np.ndarray, float | None, int, np.ndarray | None]:
    """(each rating's error margin, NaN when none; the white advantage's; the simulated events
    redrawn; the simulated ratings, None without simulations)."""
    errors = np.full(len(index), np.nan)
    if options.simulations <= 1 or not games:
        return errors, None, 0, None
    z = float(special.ndtri(0.5 + options.confidence / 200))  # the normal quantile
    base = np.where(np.isnan(truth), 0.0, truth)
    sims, sim_w, sim_active, redrawn = _simulate(design, base, fit["wadv"], fit["draw_rate"],
                                                 options.beta, options.white_advantage is None,
                                                 fit["ngroups"] + int(np.sum(fit["winners"] | fit["losers"]
                                                                             | fit["isolated"])),
                                                 options.simulations, options.seed)
    sims = _recenter(sims, sim_active, fit["labels"], fit, placed, index)
    played = fit["has_games"]
    with warnings.catch_warnings():  # a player with no finite simulation: NaN, no warning
        warnings.simplefilter("ignore", RuntimeWarning)
        errors[played] = z * np.nanstd(sims[:, played], axis=0)
    wadv_error = z * float(np.std(sim_w)) if options.white_advantage is None else None
    return errors, wadv_error, redrawn, sims


def _tally(games: Sequence[Game], names: Sequence[str]) -> dict[str, PlayerStats]:
    """Each engine's results by colour, by how the games ended and by double-round pair."""
    stats_by = {name: PlayerStats(name) for name in names}
    for g in games:
        pts = _POINTS[g.result]
        stats_by[g.white].white.add(pts)
        stats_by[g.black].black.add(1 - pts)
        for name, p in ((g.white, pts), (g.black, 1 - pts)):
            counts = stats_by[name].ends.setdefault(g.end, [0, 0, 0])
            counts[0 if p == 1 else 2 if p == 0 else 1] += 1
    for first, second in _pairs(games):
        a = first.white
        pa = _POINTS[first.result] + 1 - _POINTS[second.result]
        for name, p in ((a, pa), (first.black, 2 - pa)):
            ps = stats_by[name].pairs
            ps.pentanomial[int(round(p * 2))] += 1
            if p > 1:
                ps.won += 1
            elif p < 1:
                ps.lost += 1
            else:
                ps.drawn += 1
    return stats_by


def _rate_players(stats_by: dict[str, PlayerStats], names: Sequence[str], fit: dict[str, Any],
                  centred: np.ndarray, est: np.ndarray, errors: np.ndarray) -> list[str]:
    """Set each engine's group, rating (or why it has none, with Ordo's estimate) and error;
    the notes about the engines not rated."""
    labels = fit["labels"]
    notes: list[str] = []
    for i, name in enumerate(names):
        st = stats_by[name]
        st.group = int(labels[i]) + 1 if labels[i] >= 0 else 0
        if labels[i] >= 0:
            st.rating = float(centred[i])
        elif fit["winners"][i] or fit["losers"][i]:
            st.unrated = "all wins" if fit["winners"][i] else "all losses"
            st.estimate = None if np.isnan(est[i]) else float(est[i])
            notes.append(f"{name}: not rated ({st.unrated} in {st.games} game(s): no finite "
                         f"maximum-likelihood rating); Ordo's estimate "
                         f"{fixed_text(st.estimate)} is the rating at which that score has a 50% chance")
        elif fit["isolated"][i]:
            st.unrated = "not connected"
            notes.append(f"{name}: not rated (not connected: only wins or only losses against "
                         f"the engines that can be rated)")
        else:
            st.unrated = "no games"
            notes.append(f"{name}: not rated (no games)")
        if not np.isnan(errors[i]):
            st.error = float(errors[i])
    return notes


def _anchor_note(options: RatingOptions, anchor_unrated: str | None) -> list[str]:
    """The note saying the anchor cannot be rated yet (none when it can)."""
    if not anchor_unrated:
        return []
    return [f"the anchor {options.anchor} cannot be rated yet ({anchor_unrated}): "
            f"the ratings are placed on a pool average of {fixed_text(options.elo)} "
            f"instead, until it can be"]


def _groups_note(groups: list[list[str]], options: RatingOptions,
                 placed: RatingOptions) -> list[str]:
    """The note about groups of engines not connected by games both ways (none for one group)."""
    if len(groups) <= 1:
        return []
    where = (f"The group of {options.anchor} is placed on its rating, each other group on "
             f"an average of {fixed_text(options.elo)}" if placed.anchor else
             f"Each group is placed on an average of {fixed_text(options.elo)}")
    return [f"{len(groups)} groups of engines are not connected by games both ways (no wins or "
            f"draws in one direction between them), so ratings compare only within a group "
            f"and the table's order across groups means nothing: "
            + "; ".join(f"group {i + 1}: {', '.join(grp)}" for i, grp in enumerate(groups))
            + f". {where}."]


def _likelihoods_of_superiority(ranked: Sequence[PlayerStats], sims: np.ndarray,
                                index: dict[str, int]) -> None:
    """Each rated engine's LOS over the next one of its group, from the simulated ratings."""
    for a, b in zip(ranked, ranked[1:], strict=False):
        if a.rating is None or b.rating is None or a.group != b.group:
            continue
        d = sims[:, index[a.name]] - sims[:, index[b.name]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sd = float(np.nanstd(d))
        a.los = 100.0 if sd == 0 else 100 * float(special.ndtr((a.rating - b.rating) / sd))


def _anchor_unrated(anchor: str | None, index: dict[str, int], fit: dict[str, Any]) -> str | None:
    """Why ``anchor`` has no rating in ``fit`` (None: it has one, or there is no anchor)."""
    if anchor is None or fit["labels"][index[anchor]] >= 0:
        return None
    i = index[anchor]
    if fit["winners"][i]:
        return "all wins"
    if fit["losers"][i]:
        return "all losses"
    return "not connected" if fit["isolated"][i] else "no games"


def _recenter(sims: np.ndarray, active: np.ndarray, labels: np.ndarray, fit: dict[str, Any],
              options: RatingOptions, index: dict[str, int]) -> np.ndarray:
    """Place every simulated event as the real one: on the anchor, or each group's average.

    As in the real fit (and in Ordo), the average leaves out the players with a perfect score
    in that simulation. A player unrated in the real event moves with the largest group.
    """
    out = sims.copy()
    anchor = index[options.anchor] if options.anchor is not None else None
    for g in range(fit["ngroups"]):
        members = labels == g
        if anchor is not None and labels[anchor] == g:
            shift = sims[:, anchor]
        else:
            inside = members[None, :] & active
            shift = np.sum(np.where(inside, sims, 0.0), axis=1) / np.maximum(inside.sum(axis=1), 1)
        moved = members | ((labels < 0) if g == 0 else False)
        out[:, moved] = sims[:, moved] - shift[:, None] + options.elo
    return out


def _performance(st: PlayerStats, name: str, games: Sequence[Game], truth: np.ndarray,
                 index: dict[str, int], beta: float) -> None:
    opp = [truth[index[g.black if g.white == name else g.white]] for g in games if name in (g.white, g.black)]
    opp = [r for r in opp if not np.isnan(r)]
    if not opp or not st.games:
        return
    st.opponents = float(np.mean(opp))
    frac = st.points / st.games
    if 0 < frac < 1:
        st.performance = st.opponents + float(special.logit(frac)) / beta
