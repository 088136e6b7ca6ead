"""TCEC Swiss pairing: unit tests on the rules, and a cross-check of the fast matching
against the naive definition (a fresh networkx blossom for every candidate)."""

from __future__ import annotations

import random
from collections import Counter

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.domain.models import BLACK_WIN, DRAW, RESULTS, WHITE_WIN, PlayedGame, RoundResult
from runner.domain.pairing import (
    PairingError,
    RoundRecord,
    _Graph,
    choose_bye,
    extra_pair_games,
    first_of_pair_white,
    pair_round,
    record_from_result,
    scores,
    seed_players,
    single_round_colours,
    white_differences,
)

# --------------------------------------------------------------------------------- helpers




def play(plan, rng: random.Random | None = None, result: str | None = None) -> RoundRecord:
    """Finish a planned round with random (or fixed) results."""
    games = tuple(PlayedGame(plan.number, g.game_in_round, g.white, g.black,
                             result or (rng or random.Random(0)).choice(RESULTS))
                  for g in plan.games)
    return RoundRecord(plan.number, plan.pairs, games, plan.bye)


def run_event(seeds, rounds, gpm, schedule="split", rng_seed=0):
    rng = random.Random(rng_seed)
    history: list[RoundRecord] = []
    plans = []
    excluded: frozenset[int] = frozenset()
    for number in range(1, rounds + 1):
        plan = pair_round(seeds, history, number, gpm, schedule, excluded)
        excluded = plan.excluded
        plans.append(plan)
        history.append(play(plan, rng))
    return plans, history


def perfect(graph: nx.Graph) -> bool:
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    return 2 * len(matching) == graph.number_of_nodes()


def naive_greedy(nodes: list[int], allowed) -> list[tuple[int, int]] | None:
    """The rule word for word: first unpaired player, highest-ranked allowed partner that
    keeps a perfect matching of the rest (a fresh blossom per candidate)."""
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]
                         if allowed(a, b))
    if not perfect(graph):
        return None
    remaining = list(nodes)
    pairs = []
    while remaining:
        p = remaining[0]
        for q in remaining[1:]:
            rest = [v for v in remaining if v not in (p, q)]
            if allowed(p, q) and perfect(graph.subgraph(rest)):
                pairs.append((p, q))
                remaining = rest
                break
        else:
            raise AssertionError("viable graph but no partner")
    return pairs


def naive_pair_round(seeds, history, number, gpm, excluded=frozenset()):
    """Independent re-statement of the wiki's rules: returns (pairs in pairing order, bye,
    dropped, colours of single rounds)."""
    points = {s: 0.0 for s in seeds}
    wgd = {s: 0 for s in seeds}
    byes = {s: 0 for s in seeds}
    for record in history:
        for g in record.games:
            points[g.white] += {WHITE_WIN: 1, DRAW: 0.5, BLACK_WIN: 0}[g.result]
            points[g.black] += {WHITE_WIN: 0, DRAW: 0.5, BLACK_WIN: 1}[g.result]
            wgd[g.white] += 1
            wgd[g.black] -= 1
        if record.bye:
            byes[record.bye] += 1
            points[record.bye] += gpm
    order = sorted(seeds, key=lambda s: (-points[s], seeds.index(s)))
    bye = None
    if len(order) % 2:
        bye = sorted(order, key=lambda s: (-byes[s], order.index(s)))[-1]
    players = [s for s in order if s != bye]
    removed = set(excluded)
    dropped = []
    while True:
        met = {frozenset(p) for r in history if r.number not in removed for p in r.pairs}
        pairs = naive_greedy(players, lambda a, b, met=met: frozenset((a, b)) not in met
                             and abs(wgd[a] + wgd[b]) <= 2)
        if pairs is not None:
            break
        earliest = min(r.number for r in history if r.number not in removed)
        removed.add(earliest)
        dropped.append(earliest)
    colours = []
    for a, b in pairs:
        if wgd[a] != wgd[b]:
            colours.append((b, a) if wgd[a] > wgd[b] else (a, b))
        elif points[a] != points[b]:
            colours.append((b, a) if points[a] > points[b] else (a, b))
        else:
            colours.append((a, b) if number % 4 in (2, 3) else (b, a))
    return pairs, bye, dropped, colours


# --------------------------------------------------------------------------------- seeding


def test_group_seeding_wiki_example_11_players_4_groups():
    players = [(f"R{i:02d}", 3000.0 - i) for i in range(1, 12)]
    seeds = seed_players(players, "groups", 4)
    # 11 = 3 + 3 + 3 + 2 (the wiki's "A-C have 4, D has 3" would be 15 players): A = R01-R03,
    # B = R04-R06, C = R07-R09, D = R10-R11; then S1=A1, S2=B1, S3=C1, S4=D1, S5=A2, ...
    assert seeds == ["R01", "R04", "R07", "R10", "R02", "R05", "R08", "R11", "R03", "R06", "R09"]


def test_group_seeding_blog_example_19_players_3_groups():
    letters = "ABCDEFGHIJKLMNOPQRS"
    players = [(c, 2000.0 - i) for i, c in enumerate(letters)]
    assert "".join(seed_players(players, "groups", 3)) == "AHNBIOCJPDKQELRFMSG"


def test_group_seeding_reproduces_the_real_tcec_fixture(tcec_events):
    seeds = (tcec_events / "swiss-test-2.seeds.txt").read_text().splitlines()
    by_rank = sorted(seeds)  # names start with the strength rank 01..42
    players = [(name, None) for name in by_rank]  # no ratings: the listed order is strength
    assert seed_players(players, "groups", 6) == seeds


def test_group_seeding_orders_by_rating_and_puts_unrated_last():
    players = [("low", 100.0), ("none1", None), ("high", 300.0), ("none2", None), ("mid", 200.0)]
    assert seed_players(players, "groups", 1) == ["high", "mid", "low", "none1", "none2"]
    assert seed_players(players, "groups", 2) == ["high", "none1", "mid", "none2", "low"]


def test_random_and_listed_seeding():
    players = [(f"E{i}", None) for i in range(20)]
    names = [p[0] for p in players]
    a = seed_players(players, "random", random_seed=7)
    assert a == seed_players(players, "random", random_seed=7)
    assert sorted(a) == sorted(names) and a != names
    assert a != seed_players(players, "random", random_seed=8)
    assert seed_players(players, "listed") == names


@pytest.mark.parametrize("method, groups", [("bogus", 1), ("groups", 0)])
def test_seeding_rejects_bad_arguments(method, groups):
    with pytest.raises(ValueError, match=method if method == "bogus" else "groups 0"):
        seed_players([("a", None), ("b", None)], method, groups)


def test_seeding_rejects_duplicate_names():
    with pytest.raises(ValueError, match="duplicate player names: a"):
        seed_players([("a", None), ("a", None)], "listed")


# --------------------------------------------------------------------------------- rounds


def test_first_round_is_seed2_seed1_worst_pair_first():
    seeds = [f"S{i}" for i in range(1, 9)]
    plan = pair_round(seeds, [], 1, 1)
    assert plan.pairs == (("S7", "S8"), ("S5", "S6"), ("S3", "S4"), ("S1", "S2"))
    assert [(g.white, g.black) for g in plan.games] == [
        ("S8", "S7"), ("S6", "S5"), ("S4", "S3"), ("S2", "S1")]
    assert [g.game_in_round for g in plan.games] == [1, 2, 3, 4]
    assert plan.bye is None and plan.dropped_history_rounds == () and plan.excluded == frozenset()


def test_colour_pattern_2112():
    assert [first_of_pair_white(n) for n in range(1, 13)] == [
        False, True, True, False, False, True, True, False, False, True, True, False]


def test_single_round_colours_rules():
    wgd = {"a": 1, "b": -1, "c": 1, "d": 1}
    points = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 1.0}
    assert single_round_colours("a", "b", 2, wgd, points) == ("b", "a")  # greater WGD -> black
    assert single_round_colours("b", "a", 2, wgd, points) == ("b", "a")
    assert single_round_colours("a", "c", 2, wgd, points) == ("a", "c")  # higher score -> black
    assert single_round_colours("c", "a", 2, wgd, points) == ("a", "c")
    assert single_round_colours("a", "d", 2, wgd, points) == ("a", "d")  # pattern: round 2 white
    assert single_round_colours("a", "d", 4, wgd, points) == ("d", "a")


def test_double_round_schedules():
    seeds = [f"S{i}" for i in range(1, 7)]
    split = pair_round(seeds, [], 1, 2, "split")
    cons = pair_round(seeds, [], 1, 2, "consecutive")
    assert split.pairs == cons.pairs == (("S5", "S6"), ("S3", "S4"), ("S1", "S2"))
    assert [(g.white, g.black, g.leg) for g in split.games] == [
        ("S6", "S5", 1), ("S4", "S3", 1), ("S2", "S1", 1),
        ("S5", "S6", 2), ("S3", "S4", 2), ("S1", "S2", 2)]
    assert [(g.white, g.black, g.pair_index) for g in cons.games] == [
        ("S6", "S5", 0), ("S5", "S6", 0), ("S4", "S3", 1), ("S3", "S4", 1),
        ("S2", "S1", 2), ("S1", "S2", 2)]
    assert [g.game_in_round for g in cons.games] == [1, 2, 3, 4, 5, 6]


def test_scores_and_wgd_from_history():
    seeds = ["a", "b", "c"]
    history = [RoundRecord(1, (("a", "b"),), (PlayedGame(1, 1, "b", "a", DRAW),), "c"),
               RoundRecord(2, (("c", "a"),), (PlayedGame(2, 1, "c", "a", BLACK_WIN),), "b")]
    assert scores(seeds, history, games_per_match=1) == {"a": 1.5, "b": 1.5, "c": 1.0}
    assert scores(seeds, history, games_per_match=2) == {"a": 1.5, "b": 2.5, "c": 2.0}
    assert white_differences(seeds, history) == {"a": -2, "b": 1, "c": 1}


def test_bye_goes_to_worst_player_with_fewest_byes():
    order = ["a", "b", "c", "d", "e"]
    assert choose_bye(order, dict.fromkeys(order, 0)) == "e"
    assert choose_bye(order, {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}) == "c"
    assert choose_bye(order, dict.fromkeys(order, 1)) == "e"
    assert choose_bye(order[:4], dict.fromkeys(order, 0)) is None


def test_bye_scores_one_point_per_game_and_keeps_wgd():
    seeds = [f"S{i}" for i in range(1, 6)]
    for gpm in (1, 2):
        plan = pair_round(seeds, [], 1, gpm)
        assert plan.bye == "S5"
        rec = play(plan, result=DRAW)
        assert scores(seeds, [rec])["S5"] == gpm
        assert white_differences(seeds, [rec])["S5"] == 0
        # round 2: S5 leads and must not get the bye again
        plan2 = pair_round(seeds, [rec], 2, gpm)
        assert plan2.bye != "S5"
        assert plan2.pairs[-1][0] == "S5"  # top of the pairing order: last pair played


def test_history_rounds_are_dropped_earliest_first_and_permanently():
    seeds = ["a", "b", "c", "d"]
    plans, history = run_event(seeds, 7, 2)
    # 4 players meet everyone in 3 rounds; round 4 needs round 1 dropped, and so on
    assert [p.dropped_history_rounds for p in plans] == [(), (), (), (1,), (2,), (3,), (4,)]
    assert plans[3].excluded == frozenset({1})
    assert plans[6].excluded == frozenset({1, 2, 3, 4})
    assert {frozenset(p) for p in plans[3].pairs} == {frozenset(p) for p in plans[0].pairs}


def test_pairing_error_when_a_player_is_unknown():
    history = [RoundRecord(1, (("a", "x"),), (PlayedGame(1, 1, "a", "x", DRAW),), None)]
    with pytest.raises(PairingError, match="'x'"):
        pair_round(["a", "b"], history, 2, 1)


def test_bad_arguments():
    with pytest.raises(ValueError, match="games_per_match 3"):
        pair_round(["a", "b"], [], 1, 3)
    with pytest.raises(ValueError, match="schedule 'zigzag'"):
        pair_round(["a", "b"], [], 1, 2, "zigzag")


def test_single_player_and_empty_events():
    plan = pair_round(["solo"], [], 1, 1)
    assert plan.bye == "solo" and plan.pairs == () and plan.games == ()
    assert pair_round([], [], 1, 1).games == ()


def test_extra_pair_games_alternate_who_starts():
    first = extra_pair_games("top", "other", 2, 1)
    assert [(g.white, g.black, g.leg, g.game_in_round) for g in first] == [
        ("other", "top", 1, 1), ("top", "other", 2, 2)]
    second = extra_pair_games("top", "other", 1, 2)
    assert [(g.white, g.black) for g in second] == [("top", "other"), ("other", "top")]
    with pytest.raises(ValueError):
        extra_pair_games("a", "a", 2, 1)
    with pytest.raises(ValueError):
        extra_pair_games("a", "b", 2, 0)


# ----------------------------------------------------------------- fast path == definition


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 11).map(lambda k: 2 * k), density=st.floats(0.05, 0.95),
       seed=st.integers(0, 2**32 - 1), wgd_on=st.booleans())
def test_matching_core_equals_naive_definition_on_random_graphs(n, density, seed, wgd_on):
    """Random (also sparse, blossom-rich) graphs, not only tournament-shaped ones."""
    rng = random.Random(seed)
    wgd = [rng.choice((-2, -1, 0, 1, 2)) if wgd_on else 0 for _ in range(n)]
    met: list[set[int]] = [set() for _ in range(n)]
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() > density:
                met[a].add(b)
                met[b].add(a)
    graph = _Graph(wgd, met)
    expected = naive_greedy(list(range(n)), graph.allowed)
    if not graph.perfect_matching():
        assert expected is None
        return
    assert expected is not None
    got = []
    for p in range(n):
        if graph.active[p]:
            q = graph.pair_first(p, (q for q in range(p + 1, n) if graph.active[q]))
            got.append((p, q))
            # the maintained matching stays perfect on the remaining players
            rest = [v for v in range(n) if graph.active[v]]
            assert all(graph.mate[v] in rest and graph.mate[graph.mate[v]] == v for v in rest)
            assert all(graph.allowed(v, graph.mate[v]) for v in rest)
    assert got == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 13), gpm=st.sampled_from([1, 2]), extra_rounds=st.integers(0, 12),
       seed=st.integers(0, 2**32 - 1))
def test_pair_round_equals_naive_rules(n, gpm, extra_rounds, seed):
    seeds = [f"P{i}" for i in range(1, n + 1)]
    rng = random.Random(seed)
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    for number in range(1, n // 2 + extra_rounds + 2):
        plan = pair_round(seeds, history, number, gpm, "split", excluded)
        pairs, bye, dropped, colours = naive_pair_round(seeds, history, number, gpm, excluded)
        assert list(plan.pairs) == pairs[::-1]
        assert plan.bye == bye
        assert list(plan.dropped_history_rounds) == dropped
        if gpm == 1:
            assert [(g.white, g.black) for g in plan.games] == colours[::-1]
        excluded = plan.excluded
        history.append(play(plan, rng))


# ----------------------------------------------------------------------- event properties


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 60), gpm=st.sampled_from([1, 2]),
       schedule=st.sampled_from(["split", "consecutive"]), seed=st.integers(0, 2**32 - 1),
       rounds_factor=st.floats(0.3, 2.5))
def test_event_properties(n, gpm, schedule, seed, rounds_factor):
    seeds = [f"E{i:02d}" for i in range(1, n + 1)]
    rounds = max(1, int(n / 2 * rounds_factor))
    rng = random.Random(seed)
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    byes: Counter[str] = Counter()
    for number in range(1, rounds + 1):
        plan = pair_round(seeds, history, number, gpm, schedule, excluded)
        assert plan == pair_round(seeds, history, number, gpm, schedule, excluded)  # deterministic
        assert plan.excluded == excluded | set(plan.dropped_history_rounds)
        # everyone except the bye plays exactly once
        in_pairs = [name for pair in plan.pairs for name in pair]
        assert Counter(in_pairs) == Counter({s: 1 for s in seeds if s != plan.bye})
        assert (plan.bye is not None) == (n % 2 == 1)
        if plan.bye is not None:  # fewest byes, and the worst of those in pairing order
            assert byes[plan.bye] == min(byes[s] for s in seeds)
            pts = scores(seeds, history, games_per_match=gpm)
            tied = [s for s in seeds if byes[s] == byes[plan.bye]]
            worst = max(tied, key=lambda s: (-pts[s], seeds.index(s)))
            assert plan.bye == worst
            byes[plan.bye] += 1
        # no rematch against the encounter history still in force
        met = {frozenset(p) for r in history if r.number not in plan.excluded for p in r.pairs}
        assert not any(frozenset(p) in met for p in plan.pairs)
        # games: every pair plays games_per_match games, colour reversed in double rounds
        assert len(plan.games) == gpm * len(plan.pairs)
        assert [g.game_in_round for g in plan.games] == list(range(1, len(plan.games) + 1))
        for i, (first, second) in enumerate(plan.pairs):
            legs = [g for g in plan.games if g.pair_index == i]
            assert {frozenset((g.white, g.black)) for g in legs} == {frozenset((first, second))}
            if gpm == 2:
                assert (legs[0].white, legs[0].black) == (second, first)
                assert (legs[1].white, legs[1].black) == (first, second)
        history.append(play(plan, rng))
        wgd = white_differences(seeds, history)
        assert all(abs(w) <= 2 for w in wgd.values())
        if gpm == 2:
            assert set(wgd.values()) <= {0}


def test_many_more_rounds_than_players_keeps_working():
    plans, history = run_event([f"S{i}" for i in range(1, 10)], 40, 1, rng_seed=3)
    assert sum(len(p.dropped_history_rounds) for p in plans) > 0
    wgd = white_differences([f"S{i}" for i in range(1, 10)], history)
    assert max(abs(w) for w in wgd.values()) <= 2


def test_record_from_result_rebuilds_pairs_and_skips_extra_games():
    games = (PlayedGame(1, 2, "b", "a", DRAW), PlayedGame(1, 1, "d", "c", WHITE_WIN),
             PlayedGame(1, 3, "a", "b", BLACK_WIN), PlayedGame(1, 4, "c", "d", DRAW),
             PlayedGame(1, 5, "a", "d", DRAW, extra=True))
    record = record_from_result(RoundResult(1, games, bye="e"))
    assert record.pairs == (("d", "c"), ("b", "a"))
    assert len(record.games) == 4 and record.bye == "e"
    assert scores(list("abcde"), [record], games_per_match=2)["e"] == 2
