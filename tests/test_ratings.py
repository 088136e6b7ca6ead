"""Ratings (runner.domain.ratings), the `ratings` command and the Elo in `standings`.

Analytic checks, synthetic events generated here with a seeded RNG, and (when Ordo 1.2.6 is
on PATH or ORDO names it) agreement with `ordo -p FILE -a 0 -W -D -s 1000 [-G]`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from testkit import write_config

from runner.cli import main
from runner.config import ConfigError, load_config
from runner.config.fingerprint import event_fingerprint
from runner.domain.endings import GameEnd
from runner.domain.models import EventResults, GameRecord, PlayedGame, RoundResult
from runner.domain.ratings import (
    Game,
    RatingOptions,
    compute_ratings,
    expected_score,
    wdl_probabilities,
)
from runner.domain.standings import compute_standings, event_ratings
from runner.render.ratings_report import ratings_json, render_ratings, summary_line
from runner.render.standings_report import render_standings
from runner.store.database import Store

BETA = math.log(0.76 / 0.24) / 202
NO_SIMS = RatingOptions(white_advantage=None, simulations=0)


def games_of(*specs: tuple[str, str, str, int]) -> list[Game]:
    """(white, black, result, count) -> that many games."""
    out = []
    for white, black, result, count in specs:
        out += [Game(white, black, result, round=len(out) + 1) for _ in range(count)]
    return out


# --------------------------------------------------------------------------- synthetic events


def synthetic_event(n: int, rounds: int, seed: int, *, draw: float = 0.6, wadv: float = 30,
                    spread: float = 150, prefix: str = "E") -> tuple[list[Game], dict[str, float]]:
    """Random pairings, double rounds (colours reversed), results drawn from Ordo's model."""
    rng = np.random.default_rng(seed)
    true = dict(zip([f"{prefix}{i:02d}" for i in range(n)], rng.normal(0, spread, n), strict=True))
    names = list(true)
    games: list[Game] = []
    for rnd in range(1, rounds + 1):
        perm = rng.permutation(n)
        number = 0
        for a, b in zip(perm[0::2], perm[1::2], strict=False):
            for w, bl in ((names[a], names[b]), (names[b], names[a])):
                number += 1
                pw, pd, _ = wdl_probabilities(np.array([true[w] + wadv - true[bl]]), draw, BETA)
                u = rng.random()
                result = "1-0" if u < pw[0] else "1/2-1/2" if u < pw[0] + pd[0] else "0-1"
                games.append(Game(w, bl, result, rnd, game=number))
    return games, true


def write_pgn(path: Path, games: list[Game]) -> Path:
    path.write_text("".join(
        f'[Event "synthetic"]\n[Round "{g.round}.{g.game}"]\n[White "{g.white}"]\n'
        f'[Black "{g.black}"]\n[Result "{g.result}"]\n\n{g.result}\n\n' for g in games))
    return path


def tie_heavy() -> list[Game]:
    return synthetic_event(10, 9, 3, draw=0.92, spread=60)[0]


def with_perfect_loser() -> list[Game]:
    """42 engines x 11 double rounds where one engine lost every game."""
    games, _ = synthetic_event(42, 11, 7)
    out = []
    for g in games:
        if "E26" in (g.white, g.black):
            g = Game(g.white, g.black, "0-1" if g.white == "E26" else "1-0", g.round, game=g.game)
        out.append(g)
    return out


def disconnected() -> list[Game]:
    """Two pools that never met."""
    a, _ = synthetic_event(8, 7, 11)
    b, _ = synthetic_event(6, 5, 12, spread=300, prefix="F")
    return a + [Game(g.white, g.black, g.result, g.round + 100, game=g.game) for g in b]


# --------------------------------------------------------------------------- analytic checks


def test_two_engines_known_score_gives_the_logistic_difference():
    # 6 wins, 4 draws, 2 losses for A = 8/12 = 2/3, colours balanced, no white advantage
    games = games_of(("A", "B", "1-0", 3), ("B", "A", "0-1", 3), ("A", "B", "1/2-1/2", 2),
                     ("B", "A", "1/2-1/2", 2), ("A", "B", "0-1", 1), ("B", "A", "1-0", 1))
    r = compute_ratings(games, RatingOptions(simulations=0, white_advantage=0))
    diff = r.player("A").rating - r.player("B").rating
    assert diff == pytest.approx(math.log(2) / BETA, abs=1e-3)  # logit(2/3) = ln 2
    assert r.player("A").rating == pytest.approx(-r.player("B").rating, abs=1e-6)  # average 0
    assert r.player("A").points == 8 and r.player("A").draws == 4


def test_202_elo_is_a_76_percent_expectation():
    assert float(expected_score(202.0, BETA)) == pytest.approx(0.76)
    games = games_of(("A", "B", "1-0", 19), ("A", "B", "0-1", 6))  # 76%
    r = compute_ratings(games, RatingOptions(simulations=0, white_advantage=0))
    assert r.player("A").rating - r.player("B").rating == pytest.approx(202.0, abs=1e-3)


def test_fitted_white_advantage_of_equal_engines():
    # each engine scores 60% with White and 40% with Black: equal, W = logit(0.6) / beta
    games = games_of(("A", "B", "1-0", 6), ("A", "B", "0-1", 4), ("B", "A", "1-0", 6), ("B", "A", "0-1", 4))
    r = compute_ratings(games, NO_SIMS)
    assert r.white_advantage == pytest.approx(math.log(1.5) / BETA, abs=1e-3)
    assert r.player("A").rating == pytest.approx(0.0, abs=1e-4)


def test_anchor_fixes_one_engine_and_keeps_differences():
    games, _ = synthetic_event(8, 6, 5)
    pool = compute_ratings(games, RatingOptions(white_advantage=None, simulations=0, elo=2500))
    anchored = compute_ratings(games, RatingOptions(white_advantage=None, simulations=0, anchor="E03", elo=3000))
    assert anchored.player("E03").rating == pytest.approx(3000)
    assert np.mean([p.rating for p in pool.players]) == pytest.approx(2500)
    shift = anchored.player("E03").rating - pool.player("E03").rating
    for p in pool.players:
        assert anchored.player(p.name).rating - p.rating == pytest.approx(shift, abs=1e-6)


def test_fixed_draw_rate_and_white_advantage_are_used():
    games, _ = synthetic_event(8, 6, 5)
    r = compute_ratings(games, RatingOptions(simulations=0, white_advantage=50, draw_rate=0.3))
    assert r.white_advantage == 50 and r.draw_rate == 0.3


def test_draw_model_between_equals_and_sums_to_one():
    pw, pd, pl = wdl_probabilities(np.array([0.0, 150.0, -400.0]), 0.4, BETA)
    assert pd[0] == pytest.approx(0.4) and pw[0] == pytest.approx(0.3)
    assert np.allclose(pw + pd + pl, 1.0)
    assert np.allclose(pw + pd / 2, expected_score(np.array([0.0, 150.0, -400.0]), BETA))


def test_synthetic_event_recovers_the_true_ratings():
    games, true = synthetic_event(12, 40, 21, spread=200)
    r = compute_ratings(games, RatingOptions(white_advantage=None, simulations=200))
    offset = np.mean(list(true.values()))
    inside = sum(abs(p.rating - (true[p.name] - offset)) <= p.error for p in r.players)
    assert inside >= 10  # 95% margins: about 11.4 of 12 expected inside
    assert r.white_advantage == pytest.approx(30, abs=20)
    assert r.draw_rate == pytest.approx(0.6, abs=0.06)


# --------------------------------------------------------------------------- margins, LOS


def test_simulations_are_reproducible_with_a_seed():
    games, _ = synthetic_event(10, 5, 9)
    a = compute_ratings(games, RatingOptions(white_advantage=None, simulations=100, seed=4))
    b = compute_ratings(games, RatingOptions(white_advantage=None, simulations=100, seed=4))
    c = compute_ratings(games, RatingOptions(white_advantage=None, simulations=100, seed=5))
    assert [p.error for p in a.players] == [p.error for p in b.players]
    assert [p.error for p in a.players] != [p.error for p in c.players]
    assert all(p.error > 0 for p in a.players)


def test_margin_shrinks_with_more_games_and_los_is_ordered():
    short, _ = synthetic_event(8, 4, 2)
    long, _ = synthetic_event(8, 40, 2)
    e_short = np.mean([p.error for p in compute_ratings(short, RatingOptions(white_advantage=None, simulations=200)).players])
    r_long = compute_ratings(long, RatingOptions(white_advantage=None, simulations=200))
    assert np.mean([p.error for p in r_long.players]) < e_short / 2
    for p in r_long.players[:-1]:
        assert 50 <= p.los <= 100
    assert r_long.players[-1].los is None


def test_anchor_has_no_error_of_its_own():
    games, _ = synthetic_event(8, 6, 5)
    r = compute_ratings(games, RatingOptions(white_advantage=None, simulations=100, anchor="E01"))
    assert r.player("E01").error == pytest.approx(0.0, abs=1e-9)
    assert all(p.error > 0 for p in r.players if p.name != "E01")


# --------------------------------------------------------------------------- unratable players


def test_all_wins_and_all_losses_are_reported_not_rated():
    games = games_of(("A", "B", "1-0", 2), ("B", "C", "1/2-1/2", 2), ("C", "B", "1-0", 1),
                     ("A", "C", "1-0", 2), ("D", "B", "0-1", 2), ("C", "D", "1-0", 1))
    r = compute_ratings(games, RatingOptions(simulations=0, white_advantage=0),
                        players=["A", "B", "C", "D", "E"])
    a, d, e = r.player("A"), r.player("D"), r.player("E")
    assert a.rating is None and a.unrated == "all wins" and a.estimate > r.player("C").rating
    assert d.rating is None and d.unrated == "all losses" and d.estimate < r.player("B").rating
    assert e.unrated == "no games"
    assert any("A: not rated (all wins" in n for n in r.notes)
    assert r.player("B").rating is not None and r.player("C").rating is not None
    assert [p.name for p in r.players][-3:] == ["A", "D", "E"]  # unrated rows last


def test_disconnected_groups_are_rated_apart_with_a_note():
    r = compute_ratings(disconnected(), NO_SIMS)
    assert len(r.groups) == 2
    note = next(n for n in r.notes if "not connected" in n)
    assert "the table's order across groups means nothing" in note
    assert note.endswith("Each group is placed on an average of 0.")
    for group in r.groups:
        rated = [r.player(n).rating for n in group]
        assert np.mean(rated) == pytest.approx(0.0, abs=1e-6)
    assert {r.player(n).group for n in r.groups[1]} == {2}


@pytest.mark.parametrize("games, players, why", [
    ([("A", "B", "1-0", 2), ("B", "C", "1/2-1/2", 2), ("C", "A", "0-1", 1)], (), "all wins"),
    ([("B", "A", "1-0", 2), ("B", "C", "1/2-1/2", 2), ("C", "A", "1-0", 1)], (), "all losses"),
    ([("B", "C", "1/2-1/2", 2), ("C", "B", "1-0", 1)], ("A", "B", "C"), "no games"),
])
def test_anchor_that_cannot_be_rated_falls_back_to_the_pool_average(games, players, why):
    """An anchor that wins (or loses) every game so far, or had only a bye: the ratings are
    placed on the pool average, and the report says so (it stopped every snapshot once)."""
    games = games_of(*games)
    options = RatingOptions(simulations=30, anchor="A", elo=3000)
    r = compute_ratings(games, options, players=players)
    assert r.anchor_unrated == why and r.player("A").rating is None
    rated = [p.rating for p in r.players if p.rating is not None]
    assert np.mean(rated) == pytest.approx(3000, abs=1e-6)
    assert r.notes[0].startswith(f"the anchor A cannot be rated yet ({why}): the ratings are "
                                 "placed on a pool average of 3000")
    assert f"pool average 3000 (the anchor A cannot be rated yet: {why})" in summary_line(r)
    doc = ratings_json(r)
    assert (doc["model"]["anchor"], doc["model"]["anchored"], doc["model"]["anchor_unrated"]) == ("A", False, why)
    assert all(p.error is not None for p in r.players if p.rating is not None)


def test_anchor_that_is_no_engine_is_an_error():
    games = games_of(("A", "B", "1-0", 2), ("B", "C", "1/2-1/2", 2), ("C", "A", "0-1", 1))
    with pytest.raises(ValueError, match="anchor 'Z' played no game"):
        compute_ratings(games, RatingOptions(simulations=0, anchor="Z"))
    assert ratings_json(compute_ratings(games, RatingOptions(simulations=0)))["model"]["anchored"] is False


def test_white_advantage_is_zero_unless_fitted_as_in_ordo():
    """Ordo's default is no white advantage (-W fits it): 18 games of a demo gave
    'white advantage 1599.5 +/- 2792.5 (fitted)' when it was fitted by default."""
    games = games_of(("A", "B", "1-0", 3), ("B", "A", "1-0", 3), ("A", "B", "1/2-1/2", 1))
    assert RatingOptions().white_advantage == 0
    fixed = compute_ratings(games, RatingOptions(simulations=20))
    assert fixed.white_advantage == 0 and "white advantage 0.0 (fixed)" in summary_line(fixed)
    fitted = compute_ratings(games, RatingOptions(simulations=20, white_advantage=None))
    assert fitted.white_advantage > 100 and "(fitted)" in summary_line(fitted)


def test_bad_games_are_errors():
    with pytest.raises(ValueError, match="result '\\*'"):
        compute_ratings([Game("A", "B", "*")], NO_SIMS)
    with pytest.raises(ValueError, match="cannot play itself"):
        compute_ratings([Game("A", "A", "1-0")], NO_SIMS)


# --------------------------------------------------------------------------- statistics


def test_pairs_pentanomial_colours_performance_and_ends():
    m, r, t = GameEnd.MATE, GameEnd.REPETITION, GameEnd.TIME_FORFEIT
    games = [
        Game("A", "B", "1-0", 1, m, game=1), Game("B", "A", "1/2-1/2", 1, r, game=2),  # A 1.5
        Game("C", "A", "1-0", 2, t, game=1), Game("A", "C", "1-0", 2, m, game=2),      # A 1
        Game("B", "C", "0-1", 3, m, game=1), Game("C", "B", "1-0", 3, t, game=2),      # C 2
        Game("A", "B", "1-0", 4, m, game=1, extra=True),                               # unpaired
    ]
    rs = compute_ratings(games, NO_SIMS)
    a = rs.player("A")
    assert (a.pairs.won, a.pairs.drawn, a.pairs.lost) == (1, 1, 0)
    assert a.pairs.pentanomial == [0, 0, 1, 1, 0]
    assert rs.player("B").pairs.pentanomial == [1, 1, 0, 0, 0]
    assert rs.player("C").pairs.pentanomial == [0, 0, 1, 0, 1]
    assert (a.white.games, a.white.wins, a.black.games, a.black.draws) == (3, 3, 2, 1)
    assert a.games == 5 and a.points == 3.5  # the extra game counts
    assert a.score_pct == pytest.approx(70.0) and a.draw_pct == pytest.approx(20.0)
    assert a.ends[m] == [3, 0, 0] and a.ends[t] == [0, 0, 1] and a.ends[r] == [0, 1, 0]
    assert rs.ends[m] == {"1-0": 3, "1/2-1/2": 0, "0-1": 1}
    assert rs.ends[t] == {"1-0": 2, "1/2-1/2": 0, "0-1": 0}
    opp = np.mean([rs.player(o).rating for o in ("B", "B", "C", "C", "B")])
    assert a.opponents == pytest.approx(opp)
    assert a.performance == pytest.approx(opp + math.log(0.7 / 0.3) / BETA)


def test_byes_never_enter_and_extra_games_do():
    rounds = (
        RoundResult(1, (PlayedGame(1, 1, "A", "B", "1-0"), PlayedGame(1, 2, "B", "A", "1/2-1/2")), bye="C"),
        RoundResult(2, (PlayedGame(2, 1, "C", "A", "1/2-1/2"), PlayedGame(2, 2, "A", "C", "0-1")), bye="B"),
        RoundResult(3, (PlayedGame(3, 1, "B", "C", "1-0"), PlayedGame(3, 2, "C", "B", "1/2-1/2")), bye="A"),
        RoundResult(4, (PlayedGame(4, 1, "C", "B", "0-1", extra=True),), bye=None),
    )
    results = EventResults(("A", "B", "C", "D"), 2, rounds)
    r = event_ratings(results)
    games = [Game(g.white, g.black, g.result, g.round, game=g.game_in_round)
             for rd in rounds for g in rd.games]
    direct = compute_ratings(games, RatingOptions())
    assert r.games == 7 and r.player("B").games == 5
    for p in direct.players:
        assert r.player(p.name).rating == pytest.approx(p.rating)
    assert r.player("D").unrated == "no games"


# --------------------------------------------------------------------------- output


def test_json_document():
    games, _ = synthetic_event(6, 4, 1)
    doc = ratings_json(compute_ratings(games, RatingOptions(white_advantage=None, simulations=50)))
    assert doc["format"] == "swiss-runner-ratings" and doc["version"] == 1
    assert list(doc) == ["format", "version", "model", "games", "players", "groups", "notes", "ends"]
    assert doc["model"]["white_advantage_fitted"] is True and doc["model"]["scale"] == 202
    top = doc["players"][0]
    assert top["rank"] == 1 and top["elo"] >= doc["players"][1]["elo"]
    assert set(top["pairs"]) == {"pairs", "won", "drawn", "lost", "pentanomial"}
    json.dumps(doc)  # JSON-able


def test_text_markdown_csv():
    games, _ = synthetic_event(6, 4, 1)
    r = compute_ratings(games, RatingOptions(white_advantage=None, simulations=50))
    text = render_ratings(r, "text")
    assert text.startswith("Ratings from 24 games: pool average 0, white advantage")
    assert "Pairs +=-" in text and "How games ended" in text
    md = render_ratings(r, "markdown")
    assert md.startswith("## Ratings") and "| # | Engine | Elo |" in md
    rows = list(csv.DictReader(io.StringIO(render_ratings(r, "csv"))))
    assert [row["engine"] for row in rows] == [p.name for p in r.players]
    assert float(rows[0]["elo"]) == pytest.approx(r.players[0].rating, abs=0.05)
    with pytest.raises(ValueError, match="unknown ratings format"):
        render_ratings(r, "xml")


# --------------------------------------------------------------------------- CLI


def test_the_parser_does_not_import_numpy_or_scipy():
    """`run` and every other command parse their options without the ratings' numpy/scipy;
    the `ratings` command's --format choices are runner.render.ratings_report' formats."""
    import sys

    from runner.cli.ratings import FORMATS as CLI_FORMATS
    from runner.render.ratings_report import FORMATS

    assert CLI_FORMATS == FORMATS
    code = ("import sys; from runner.cli import build_parser; build_parser(); "
            "import runner.cli.run; "
            "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


def test_cli_pgn(tmp_path, capsys):
    games, _ = synthetic_event(6, 4, 1)
    pgn = write_pgn(tmp_path / "e.pgn", games)
    assert main(["ratings", "--pgn", str(pgn), "--format", "json", "--simulations", "20",
                 "--anchor", "E00", "--elo", "3000"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["engine"]: p["elo"] for p in doc["players"]}["E00"] == 3000
    assert doc["model"]["simulations"] == 20 and doc["games"] == 24


@pytest.mark.parametrize(("argv", "message"), [
    (["ratings"], "give either a CONFIG file or --pgn FILE"),
    (["ratings", "--pgn", "/nonexistent.pgn"], "/nonexistent.pgn: PGN file not found"),
    (["ratings", "--pgn", "{empty}"], "no finished games"),
    (["ratings", "--pgn", "{pgn}", "--white-advantage", "lots"], "--white-advantage: got 'lots'"),
    (["ratings", "--pgn", "{pgn}", "--anchor", "Nobody"], "anchor 'Nobody' played no game"),
    (["ratings", "--pgn", "{pgn}", "--draw-rate", "150"], "expected a percentage"),
])
def test_cli_bad_input_exits_2_with_a_message(tmp_path, capsys, argv, message):
    games, _ = synthetic_event(4, 2, 1)
    pgn = write_pgn(tmp_path / "e.pgn", games)
    (tmp_path / "empty.pgn").write_text("not a pgn\n")
    argv = [a.format(pgn=pgn, empty=tmp_path / "empty.pgn") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


CONFIG = """\
Event: ratings test
SwissOptions: {{GamesPerMatch: 2, Rounds: 1, StatePath: {state}/swiss_state.json}}
TimeControl: "40/60"
Ratings: {{Anchor: A, Elo: 2000, Simulations: 50, Seed: 3}}
Engines:
  - {{Name: A, Command: /bin/true}}
  - {{Name: B, Command: /bin/true}}
  - {{Name: C, Command: /bin/true}}
"""


def test_cli_config_event_state(tmp_path, capsys):
    path = write_config(tmp_path, CONFIG.format(state=tmp_path / "state"))
    assert main(["ratings", str(path)]) == 1
    assert "no tournament state yet" in capsys.readouterr().err
    config = load_config(path)
    assert config.ratings.anchor == "A" and config.ratings.elo == 2000
    store = Store.open(config.database)
    try:
        store.init_event(event_fingerprint(config), ["A", "B", "C"], [], event=config.event, games_per_match=2, rounds=1)
        store.add_round(1, (("A", "B"),), "C", (), (), [
            {"game_id": i + 1, "game_in_round": i + 1, "pair_index": 0, "leg": i + 1, "white": w,
             "black": b, "match_index": 0, "opening": None} for i, (w, b) in enumerate((("A", "B"), ("B", "A")))])
        store.record_game(1, GameRecord("A", "B", "1-0", "Black loses on time", "time forfeit"))
        store.record_game(2, GameRecord("B", "A", "1/2-1/2", "Draw by adjudication: TCEC draw rule",
                                        "adjudication", "TCEC draw rule"))
    finally:
        store.close()
    assert main(["ratings", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    players = {p["engine"]: p for p in doc["players"]}
    assert players["A"]["elo"] == 2000 and players["B"]["elo"] < 2000
    assert players["C"]["unrated_reason"] == "no games"  # a bye is not a game
    assert players["A"]["pairs"]["won"] == 1 and players["A"]["pairs"]["pentanomial"] == [0, 0, 0, 1, 0]
    assert set(doc["ends"]) == {"time-forfeit", "adjudication-tcec-draw"}
    assert doc["model"]["seed"] == 3 and doc["model"]["simulations"] == 50
    assert main(["standings", str(path), "--format", "json"]) == 0
    standings = json.loads(capsys.readouterr().out)
    assert standings["ratings"]["format"] == "swiss-runner-ratings"
    assert main(["standings", str(path)]) == 0
    assert "\nRatings\n" in capsys.readouterr().out


def test_standings_render_with_ratings_in_every_format():
    rounds = (RoundResult(1, (PlayedGame(1, 1, "A", "B", "1-0"), PlayedGame(1, 2, "B", "A", "1/2-1/2"),
                              PlayedGame(1, 3, "C", "D", "1/2-1/2"), PlayedGame(1, 4, "D", "C", "1-0"))),
              RoundResult(2, (PlayedGame(2, 1, "A", "D", "1/2-1/2"), PlayedGame(2, 2, "D", "A", "0-1"),
                              PlayedGame(2, 3, "B", "C", "1-0"), PlayedGame(2, 4, "C", "B", "1/2-1/2"))))
    results = EventResults(("A", "B", "C", "D"), 2, rounds)
    rows = compute_standings(results, ("SonnebornBerger",))
    ratings = event_ratings(results)
    rows_csv = list(csv.DictReader(io.StringIO(render_standings(rows, results, "csv", ratings=ratings))))
    assert float(rows_csv[0]["elo"]) == pytest.approx(ratings.player(rows_csv[0]["engine"]).rating, abs=0.05)
    assert "### Ratings" in render_standings(rows, results, "markdown", ratings=ratings)
    assert "Ratings" not in render_standings(rows, results, "text")  # unchanged without ratings


@pytest.mark.parametrize(("block", "message"), [
    ("{Anchor: Nobody}", "Ratings.Anchor: got 'Nobody', expected the name of an engine"),
    ("{Elo: 3000}", "Ratings.Elo: Elo is the anchor's rating"),
    ("{Anchor: A, Average: 0}", "use either Anchor"),
    ("{WhiteAdvantage: lots}", "Ratings.WhiteAdvantage: got 'lots', expected 'fit' or"),
    ("{Simulations: -1}", "Ratings.Simulations"),
    ("{Simulation: 10}", "did you mean 'Simulations'"),
])
def test_config_errors_name_file_line_and_key(tmp_path, block, message):
    path = write_config(tmp_path, CONFIG.format(state=tmp_path / "state").replace(
        "Ratings: {Anchor: A, Elo: 2000, Simulations: 50, Seed: 3}", f"Ratings: {block}"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert any(message in p and f"{path}:" in p for p in info.value.problems), info.value.problems


def test_config_average_and_fixed_values(tmp_path):
    path = write_config(tmp_path, CONFIG.format(state=tmp_path / "state").replace(
        "{Anchor: A, Elo: 2000, Simulations: 50, Seed: 3}",
        "{Average: 2500, WhiteAdvantage: 20, DrawRate: 55}"))
    rc = load_config(path).ratings
    assert (rc.anchor, rc.elo, rc.white_advantage, rc.draw_rate) == (None, 2500, 20, 55)
    # as Ordo: no white advantage unless it is fitted; the draw rate is fitted
    for block, expected in (("{Average: 2500}", 0.0), ("{WhiteAdvantage: fit}", None)):
        path = write_config(tmp_path, CONFIG.format(state=tmp_path / "state").replace(
            "{Anchor: A, Elo: 2000, Simulations: 50, Seed: 3}", block))
        rc = load_config(path).ratings
        assert (rc.white_advantage, rc.draw_rate) == (expected, None)


# --------------------------------------------------------------------------- Ordo 1.2.6


def _ordo() -> str | None:
    return os.environ.get("ORDO") or shutil.which("ordo")


needs_ordo = pytest.mark.skipif(_ordo() is None, reason="Ordo 1.2.6 not installed: put `ordo` on PATH "
                                                       "or name it in ORDO (build from michiguel/Ordo)")


def run_ordo(pgn: Path, tmp_path: Path, *extra: str, sims: int = 1000) -> dict[str, tuple[float, float]]:
    out = tmp_path / "ordo.csv"
    subprocess.run([_ordo(), "-p", str(pgn), "-a", "0", "-W", "-D", "-s", str(sims), "-q", "-N", "3",
                    "-c", str(out), *extra], check=True, capture_output=True, timeout=600)
    rows = {}
    for row in csv.reader(out.read_text().splitlines()[1:]):
        rows[row[1].strip()] = (float(row[2]), float(row[3]) if row[3].strip() not in ("", "-", '"-"') else 0.0)
    return rows


@needs_ordo
@pytest.mark.slow
@pytest.mark.parametrize("event", ["synthetic", "tie-heavy", "42x462", "perfect-loser"])
def test_agrees_with_ordo(tmp_path, event):
    games = {"synthetic": lambda: synthetic_event(12, 9, 1)[0], "tie-heavy": tie_heavy,
             "42x462": lambda: synthetic_event(42, 11, 7)[0], "perfect-loser": with_perfect_loser}[event]()
    pgn = write_pgn(tmp_path / "e.pgn", games)
    ordo = run_ordo(pgn, tmp_path, *(["-G"] if event == "perfect-loser" else []))
    ours = compute_ratings(games, RatingOptions(white_advantage=None, simulations=1000))
    rated = [p for p in ours.players if p.rating is not None]
    assert len(rated) == len(ordo)  # Ordo leaves the engine with all losses out (-G)
    for p in rated:
        elo, error = ordo[p.name]
        assert abs(p.rating - elo) <= 1.0, (p.name, p.rating, elo)
        assert abs(p.error / error - 1) <= 0.15, (p.name, p.error, error)


@needs_ordo
def test_disconnected_groups_agree_with_ordo_within_each_group(tmp_path):
    """Ordo -G places disconnected groups at an arbitrary offset (its iteration's by-product):
    the rating differences inside each group are what both must agree on."""
    games = disconnected()
    # (no simulations: Ordo redraws every simulated event 100 times when groups are disconnected)
    ordo = run_ordo(write_pgn(tmp_path / "e.pgn", games), tmp_path, "-G", sims=0)
    ours = compute_ratings(games, RatingOptions(white_advantage=None, simulations=0))
    assert len(ours.groups) == 2
    for group in ours.groups:
        rated = [n for n in group if ours.player(n).rating is not None and n in ordo]
        base = rated[0]
        for name in rated[1:]:
            mine = ours.player(name).rating - ours.player(base).rating
            theirs = ordo[name][0] - ordo[base][0]
            assert abs(mine - theirs) <= 1.0, (name, mine, theirs)


def test_every_report_format_shows_a_control_character_escaped() -> None:
    """An engine name with a terminal escape (from a PGN or a state file) is shown as ``\\x1b``
    in the text and Markdown reports: the one table renderer makes every cell printable."""
    evil = "Evil\x1b[2J\x1b]0;pwned\x07"
    games = [Game(evil, "B", "1-0", 1), Game("B", evil, "1/2-1/2", 1),
             Game("B", evil, "0-1", 2), Game(evil, "B", "1/2-1/2", 2)]
    ratings = compute_ratings(games, RatingOptions(simulations=0))
    for fmt in ("text", "markdown"):
        out = render_ratings(ratings, fmt)
        assert "\x1b" not in out and "\x07" not in out, fmt
        assert "Evil\\x1b[2J\\x1b]0;pwned\\x07" in out, fmt
