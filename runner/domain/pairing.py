"""TCEC Swiss pairing: seeding, byes, viability, pairs, colours and playing order.

Pure and deterministic: no I/O, no clocks, no global random state. The rules implemented are
those of the TCEC wiki page "TCEC Swiss Tournament System" (seed 000); where the text leaves a
detail open, the decision taken is documented at the function that takes it.

Vocabulary
    pairing order   players sorted by score (desc), then seed (asc).
    WGD             white game difference: games with White minus games with Black. Byes do
                    not change it, dropped history rounds do not change it.
    encounter       two players met in a round whose number is not in ``excluded``.
    allowed pair    not met, and |WGD(a) + WGD(b)| <= 2.
    viable          the non-bye players have a perfect matching made of allowed pairs.

Algorithm (exactly the definition, made fast). The definition pairs the first unpaired player
p with the highest-ranked allowed q such that the rest still has a perfect matching. Instead of
running a fresh blossom algorithm for every candidate q, we keep one perfect matching M of the
remaining players. Removing p leaves exactly one exposed vertex r = M(p); by the
Gallai-Edmonds decomposition, G - p - q has a perfect matching iff q is reachable from r by an
even alternating path, i.e. iff q is labelled *outer* by Edmonds' search rooted at r. The search
is run lazily (it stops as soon as the candidate under test is outer), is preceded by an O(1)
check for the alternating path r - M(q) - q, and candidates that violate a cheap necessary
condition on the WGD classes are rejected without searching. Flipping the alternating path
keeps M perfect for the next first-of-pair. The property tests cross-check this against the
naive definition (networkx ``max_weight_matching`` for every candidate).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from runner.domain.models import PlayedGame, RoundResult, white_score

SCHEDULES = ("split", "consecutive")
SEEDING_METHODS = ("groups", "random", "listed")


class PairingError(ValueError):
    """The history is inconsistent, or no pairing exists even with the whole history dropped."""


@dataclass(frozen=True)
class RoundRecord:
    """A finished round as pairing sees it.

    ``pairs`` are (first-of-pair, second-of-pair); only the encounter matters for pairing, so
    any orientation works. ``games`` give colours (WGD) and results (scores).
    """

    number: int
    pairs: tuple[tuple[str, str], ...]
    games: tuple[PlayedGame, ...]
    bye: str | None = None


@dataclass(frozen=True)
class ScheduledGame:
    white: str
    black: str
    game_in_round: int  # 1-based, playing order -> PGN Round "R.G"
    pair_index: int  # index into RoundPlan.pairs
    leg: int  # 1 = first encounter of the pair this round, 2 = the colour-reversed one


@dataclass(frozen=True)
class RoundPlan:
    """The pairing of one round.

    ``pairs`` are (first-of-pair, second-of-pair) in playing order: the pair whose first-of-pair
    is worst in the pairing order comes first. ``games`` are in playing order too.
    """

    number: int
    pairs: tuple[tuple[str, str], ...]
    games: tuple[ScheduledGame, ...]
    bye: str | None
    dropped_history_rounds: tuple[int, ...]
    excluded: frozenset[int]


def record_from_result(result: RoundResult) -> RoundRecord:
    """The RoundRecord of a finished round as the store reports it: pairs come from the
    games (White, Black of each pair's first game, in playing order); extra tie-break games
    are left out."""
    games = tuple(g for g in result.games if not g.extra)
    pairs: dict[frozenset[str], tuple[str, str]] = {}
    for g in sorted(games, key=lambda g: g.game_in_round):
        pairs.setdefault(frozenset((g.white, g.black)), (g.white, g.black))
    return RoundRecord(result.number, tuple(pairs.values()), games, result.bye)


# --------------------------------------------------------------------------------- seeding


def seed_players(players: Sequence[tuple[str, float | None]], method: str, groups: int = 1,
                 random_seed: int = 0) -> list[str]:
    """Seed the players; returns names, seed 1 first.

    - ``listed``: the order given.
    - ``random``: the order given, shuffled by ``random.Random(random_seed)``.
    - ``groups``: order by strength (rating desc; players without a rating after the rated
      ones; ties and unrated keep the order given), cut into ``groups`` groups, the stronger
      groups one larger when uneven, then take A1, B1, C1, ..., A2, B2, ...
    """
    names = [name for name, _ in players]
    if len(set(names)) != len(names):
        dupes = sorted(n for n, c in Counter(names).items() if c > 1)
        raise ValueError(f"duplicate player names: {', '.join(dupes)}")
    if method == "listed":
        return names
    if method == "random":
        shuffled = list(names)
        random.Random(random_seed).shuffle(shuffled)
        return shuffled
    if method != "groups":
        raise ValueError(f"seeding method {method!r}: expected one of {', '.join(SEEDING_METHODS)}")
    if groups < 1:
        raise ValueError(f"seeding groups {groups}: expected a positive integer")
    indexed = list(enumerate(players))
    indexed.sort(key=lambda item: (item[1][1] is None, -(item[1][1] or 0.0), item[0]))
    by_strength = [name for _, (name, _) in indexed]
    size, extra = divmod(len(by_strength), groups)
    cut: list[list[str]] = []
    start = 0
    for g in range(groups):
        length = size + (1 if g < extra else 0)
        cut.append(by_strength[start:start + length])
        start += length
    seeded: list[str] = []
    for rank in range(size + (1 if extra else 0)):
        seeded.extend(group[rank] for group in cut if rank < len(group))
    return seeded


# --------------------------------------------------------------------------------- history


def _bye_points(record: RoundRecord, games_per_match: int | None) -> int:
    if games_per_match is not None:
        return games_per_match
    if record.pairs:
        return max(1, len(record.games) // len(record.pairs))
    return 1


def scores(seeds: Sequence[str], history: Sequence[RoundRecord], *,
           games_per_match: int | None = None) -> dict[str, float]:
    """Points per player after the rounds in ``history``.

    A bye scores one point per game of the match. ``games_per_match`` defaults to what the
    round itself shows (games / pairs), or 1 for a round without pairs.
    """
    total = {name: 0.0 for name in seeds}
    for record in history:
        for game in record.games:
            if game.extra:
                continue
            for name in (game.white, game.black):
                if name not in total:
                    raise PairingError(f"round {record.number}: player {name!r} is not seeded")
            ws = white_score(game.result)
            total[game.white] += ws
            total[game.black] += 1.0 - ws
        if record.bye is not None:
            if record.bye not in total:
                raise PairingError(f"round {record.number}: bye player {record.bye!r} is not seeded")
            total[record.bye] += _bye_points(record, games_per_match)
    return total


def white_differences(seeds: Sequence[str], history: Sequence[RoundRecord]) -> dict[str, int]:
    """WGD per player: games with White minus games with Black (byes and drops don't count)."""
    wgd = {name: 0 for name in seeds}
    for record in history:
        for game in record.games:
            if game.extra:
                continue
            if game.white not in wgd or game.black not in wgd:
                raise PairingError(f"round {record.number}: game {game.white!r} - {game.black!r} "
                                   f"has a player that is not seeded")
            wgd[game.white] += 1
            wgd[game.black] -= 1
    return wgd


def bye_counts(seeds: Sequence[str], history: Sequence[RoundRecord]) -> dict[str, int]:
    byes = {name: 0 for name in seeds}
    for record in history:
        if record.bye is not None:
            if record.bye not in byes:
                raise PairingError(f"round {record.number}: bye player {record.bye!r} is not seeded")
            byes[record.bye] += 1
    return byes


def pairing_order(seeds: Sequence[str], points: dict[str, float]) -> list[str]:
    """Score descending, then seed ascending."""
    seed_of = {name: i for i, name in enumerate(seeds)}
    return sorted(seeds, key=lambda name: (-points[name], seed_of[name]))


def choose_bye(order: Sequence[str], byes: dict[str, int]) -> str | None:
    """The bye for an odd player count: sort by byes received (desc), then pairing order
    (asc); the bottom player gets it, i.e. the worst player among those with fewest byes."""
    if len(order) % 2 == 0:
        return None
    position = {name: i for i, name in enumerate(order)}
    return max(order, key=lambda name: (-byes[name], position[name]))


# --------------------------------------------------------------------------------- matching


class _Graph:
    """Players 0..n-1 (pairing order) with the allowed-pair relation and a perfect matching.

    The graph is dense (every pair is allowed except encounters and WGD clashes), so edges
    are not stored: ``allowed`` tests a pair in O(1).
    """

    def __init__(self, wgd: list[int], met: list[set[int]]) -> None:
        self.n = len(wgd)
        self.wgd = wgd
        self.met = met
        self.active = [True] * self.n
        # one spare slot (index n) for the virtual vertex used when exposing a vertex
        self.mate = [-1] * (self.n + 1)
        self.classes = Counter(wgd)
        self.prune = all(-2 <= w <= 2 for w in wgd)

    def allowed(self, a: int, b: int) -> bool:
        return a != b and b not in self.met[a] and -2 <= self.wgd[a] + self.wgd[b] <= 2

    def remove(self, v: int) -> None:
        self.active[v] = False
        self.classes[self.wgd[v]] -= 1

    def classes_viable(self, without: tuple[int, ...]) -> bool:
        """Necessary condition (Tutte, S = the players that may meet WGD +2): every +2
        player needs a partner with WGD <= 0, and an odd number of +1 players needs one
        more; the same mirrored for -2. Ignores encounters, so it only ever rules out."""
        if not self.prune:
            return True
        c = Counter(self.classes)
        for v in without:
            c[self.wgd[v]] -= 1
        if c[2] + c[1] % 2 > c[0] + c[-1] + c[-2]:
            return False
        return c[-2] + c[-1] % 2 <= c[0] + c[1] + c[2]

    # -- initial perfect matching -------------------------------------------------------
    def perfect_matching(self) -> bool:
        """Greedy matching, then one augmenting-path search per exposed vertex.
        False when no perfect matching exists (Berge: no augmenting path from an exposed
        vertex means some maximum matching leaves it exposed)."""
        mate = self.mate
        vertices = [v for v in range(self.n) if self.active[v]]
        if len(vertices) % 2:
            return False
        for i, v in enumerate(vertices):
            if mate[v] != -1:
                continue
            for w in vertices[i + 1:]:
                if mate[w] == -1 and self.allowed(v, w):
                    mate[v], mate[w] = w, v
                    break
        for v in vertices:
            if mate[v] == -1:
                search = _Search(self, v)
                end = search.run_to_exposed()
                if end < 0:
                    return False
                search.flip(end)
        return True

    # -- one first-of-pair -------------------------------------------------------------
    def pair_first(self, p: int, candidates: Iterator[int]) -> int:
        """Pair p with the first candidate that keeps a perfect matching; update the matching
        and remove both. Candidates come in pairing order."""
        mate = self.mate
        r = mate[p]
        self.remove(p)
        mate[p] = -1
        mate[r] = -1
        search: _Search | None = None
        for q in candidates:
            if not self.allowed(p, q):
                continue
            if q == r:
                break
            if search is not None and search.outer[q]:
                search.expose(q)
                break
            if not self.classes_viable((q,)):
                continue
            if search is None:
                if self._short_path(r, q):
                    break
                search = _Search(self, r)
            if search.reach(q):
                search.expose(q)
                break
        else:
            raise AssertionError("a perfect matching existed but no partner was found")
        mate[p], mate[q] = q, p
        self.remove(q)
        return q


    def _short_path(self, r: int, q: int) -> bool:
        """Try the even alternating paths r - M(q) - q and r - a - M(a) - M(q) - q; when one
        exists, shift the matching along it (r matched, q exposed) and return True."""
        mate, allowed = self.mate, self.allowed
        m = mate[q]
        if allowed(r, m):
            mate[r], mate[m] = m, r
            mate[q] = -1
            return True
        for a in range(self.n):
            if not self.active[a] or a in (r, q, m):
                continue
            b = mate[a]
            if allowed(r, a) and allowed(b, m):
                mate[r], mate[a] = a, r
                mate[b], mate[m] = m, b
                mate[q] = -1
                return True
        return False


class _Search:
    """Edmonds' alternating-tree search from one exposed root, with blossom contraction.

    ``outer[v]`` is True when v has an even alternating path to the root. Labelling is lazy:
    ``reach(target)`` grows the tree only until the target is outer (or nothing is left).
    """

    def __init__(self, graph: _Graph, root: int) -> None:
        self.g = graph
        self.root = root
        n = graph.n
        self.outer = [False] * n
        self.parent = [-1] * (n + 1)
        self.base = list(range(n))
        self.members: dict[int, list[int]] = {}
        self.vertices = [v for v in range(n) if graph.active[v]]
        self.outer[root] = True
        self.queue: deque[int] = deque([root])
        self.steps = self._grow()
        self.found_exposed = -1

    def _lca(self, a: int, b: int) -> int:
        base, mate, parent = self.base, self.g.mate, self.parent
        seen = set()
        while True:
            a = base[a]
            seen.add(a)
            if mate[a] == -1:
                break
            a = parent[mate[a]]
        while True:
            b = base[b]
            if b in seen:
                return b
            b = parent[mate[b]]

    def _mark(self, v: int, b: int, child: int, in_blossom: set[int]) -> None:
        base, mate, parent = self.base, self.g.mate, self.parent
        while base[v] != b:
            in_blossom.add(base[v])
            in_blossom.add(base[mate[v]])
            parent[v] = child
            child = mate[v]
            v = parent[mate[v]]

    def _grow(self) -> Iterator[None]:
        """Yields after every change of labels; sets found_exposed if an augmenting path
        ends at an exposed vertex (only while building the initial matching)."""
        g = self.g
        mate, base, parent, outer, queue = g.mate, self.base, self.parent, self.outer, self.queue
        allowed, root, members = g.allowed, self.root, self.members
        while queue:
            v = queue.popleft()
            for to in self.vertices:
                if base[v] == base[to] or mate[v] == to or not allowed(v, to):
                    continue
                if to == root or (mate[to] != -1 and parent[mate[to]] != -1):
                    b = self._lca(v, to)
                    in_blossom: set[int] = set()
                    self._mark(v, b, to, in_blossom)
                    self._mark(to, b, v, in_blossom)
                    merged = members.setdefault(b, [b])
                    for old_base in in_blossom:
                        if old_base == b:
                            continue
                        for i in members.pop(old_base, [old_base]):
                            base[i] = b
                            merged.append(i)
                            if not outer[i]:
                                outer[i] = True
                                queue.append(i)
                    yield
                elif parent[to] == -1:
                    parent[to] = v
                    if mate[to] == -1:
                        self.found_exposed = to
                        return
                    nxt = mate[to]
                    outer[nxt] = True
                    queue.append(nxt)
                    yield

    def reach(self, target: int) -> bool:
        while not self.outer[target]:
            if next(self.steps, StopIteration) is StopIteration:
                return False
        return True

    def run_to_exposed(self) -> int:
        for _ in self.steps:
            pass
        return self.found_exposed

    def flip(self, end: int) -> None:
        """Augment along the path from the exposed vertex ``end`` back to the root."""
        mate, parent = self.g.mate, self.parent
        v = end
        while v != -1:
            pv = parent[v]
            ppv = mate[pv]
            mate[v], mate[pv] = pv, v
            v = ppv

    def expose(self, q: int) -> None:
        """Shift the matching along the even path root..q: the root gets matched, q exposed.
        Done by hanging a virtual exposed vertex (index n) below the outer vertex q."""
        z = self.g.n
        self.parent[z] = q
        self.flip(z)
        self.g.mate[q] = -1
        self.g.mate[z] = -1


# --------------------------------------------------------------------------------- rounds


def first_of_pair_white(number: int) -> bool:
    """Single rounds, equal WGD and score: first-of-pair is White in rounds 2, 3, 6, 7, ...
    (the 2112 pattern) and Black in rounds 1, 4, 5, 8, 9, ..."""
    return number % 4 in (2, 3)


def single_round_colours(first: str, second: str, number: int, wgd: dict[str, int],
                         points: dict[str, float]) -> tuple[str, str]:
    """(white, black) of a single-round pair: greater WGD gets Black; equal WGD, higher score
    gets Black; equal too, the round-number pattern decides."""
    if wgd[first] != wgd[second]:
        return (second, first) if wgd[first] > wgd[second] else (first, second)
    if points[first] != points[second]:
        return (second, first) if points[first] > points[second] else (first, second)
    return (first, second) if first_of_pair_white(number) else (second, first)


def _encounters(seeds: Sequence[str], index: dict[str, int], history: Sequence[RoundRecord],
                excluded: set[int], n: int) -> list[set[int]]:
    met: list[set[int]] = [set() for _ in range(n)]
    seed_set = set(seeds)
    for record in history:
        if record.number in excluded:
            continue
        for a, b in record.pairs:
            if a not in index or b not in index:
                # a pair involving the bye player of this round cannot exist; an unknown
                # name is a broken history
                for name in (a, b):
                    if name not in seed_set:
                        raise PairingError(f"round {record.number}: player {name!r} is not seeded")
                continue
            met[index[a]].add(index[b])
            met[index[b]].add(index[a])
    return met


def pair_round(seeds: Sequence[str], history: Sequence[RoundRecord], number: int,
               games_per_match: int, schedule: str = "split",
               excluded: frozenset[int] = frozenset(),
               withdrawn: frozenset[str] = frozenset()) -> RoundPlan:
    """Pair round ``number`` from the seeds (seed 1 first) and the finished rounds.

    ``excluded`` are the history rounds already removed from the encounter history by
    earlier rounds (RoundPlan.excluded of the previous round). Rounds are dropped earliest
    first, permanently, until a viable pairing exists.

    ``withdrawn``: engines withdrawn by the tournament director before this round. They keep
    their seed, their games and their score (the others' scores, WGD and encounters still
    count those games), but are not paired: the rules run on the players left, so the bye
    goes by parity of the players left (seed 000 "in case of an odd number of players").
    """
    if games_per_match not in (1, 2):
        raise ValueError(f"games_per_match {games_per_match}: expected 1 or 2")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError("seeds: duplicate player names")
    unknown = sorted(set(withdrawn) - set(seeds))
    if unknown:
        raise ValueError(f"withdrawn: {', '.join(map(repr, unknown))} not seeded")
    points = scores(seeds, history, games_per_match=games_per_match)
    wgd = white_differences(seeds, history)
    byes = bye_counts(seeds, history)
    order = pairing_order([name for name in seeds if name not in withdrawn], points)
    bye = choose_bye(order, byes)
    players = [name for name in order if name != bye]
    index = {name: i for i, name in enumerate(players)}
    n = len(players)

    removed = set(excluded)
    dropped: list[int] = []
    while True:
        graph = _Graph([wgd[name] for name in players],
                       _encounters(seeds, index, history, removed, n))
        if graph.perfect_matching():
            break
        remaining = sorted({r.number for r in history if r.number not in removed and r.pairs})
        if not remaining:
            raise PairingError(f"round {number}: no viable pairing even with the whole encounter "
                               f"history dropped (WGD: {dict(wgd)})")
        removed.add(remaining[0])
        dropped.append(remaining[0])

    pairs: list[tuple[str, str]] = []
    for p in range(n):
        if not graph.active[p]:
            continue
        q = graph.pair_first(p, (q for q in range(p + 1, n) if graph.active[q]))
        pairs.append((players[p], players[q]))
    pairs.reverse()  # playing order: worst first-of-pair first

    games: list[ScheduledGame] = []
    if games_per_match == 1:
        for i, (first, second) in enumerate(pairs):
            white, black = single_round_colours(first, second, number, wgd, points)
            games.append(ScheduledGame(white, black, len(games) + 1, i, 1))
    elif schedule == "split":
        for leg in (1, 2):
            for i, (first, second) in enumerate(pairs):
                white, black = (second, first) if leg == 1 else (first, second)
                games.append(ScheduledGame(white, black, len(games) + 1, i, leg))
    else:
        for i, (first, second) in enumerate(pairs):
            games.append(ScheduledGame(second, first, len(games) + 1, i, 1))
            games.append(ScheduledGame(first, second, len(games) + 1, i, 2))
    return RoundPlan(number=number, pairs=tuple(pairs), games=tuple(games), bye=bye,
                     dropped_history_rounds=tuple(dropped), excluded=frozenset(removed))


def extra_pair_games(a: str, b: str, games_per_match: int, number: int) -> tuple[ScheduledGame, ...]:
    """The two colour-reversed games of extra tie-break pair ``number`` (1-based) between a
    and b, which the caller passes in seed order (a = the better seed).

    Rule: like a double-round match with a as first-of-pair, the better seed has Black in the
    first game of odd-numbered extra pairs (1, 3, ...) and White in the first game of
    even-numbered ones, so successive extra pairs alternate who starts with White. An extra
    pair is always two games, whatever ``games_per_match`` (validated only).
    """
    if games_per_match not in (1, 2):
        raise ValueError(f"games_per_match {games_per_match}: expected 1 or 2")
    if number < 1:
        raise ValueError(f"extra pair number {number}: expected 1 or more")
    if a == b:
        raise ValueError(f"extra pair: {a!r} cannot play itself")
    first, second = (b, a) if number % 2 else (a, b)
    return (ScheduledGame(first, second, 1, 0, 1), ScheduledGame(second, first, 2, 0, 2))
