"""`swiss-runner audit`: events replay exactly; tampering and bad input are caught.

The tampering tests use events of the project's own (paired by runner.domain.pairing, random
results); the real TCEC events run only when SWISS_RUNNER_TCEC_EVENTS names them (conftest).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from runner.cli import main
from runner.domain.models import RESULTS, PlayedGame
from runner.domain.pairing import RoundRecord, pair_round


def audit(capsys, pgn, seeds, *options):
    code = main(["audit", str(pgn), "--seeds", str(seeds), *options])
    out = capsys.readouterr()
    return code, out.out, out.err


def pgn_text(games) -> str:
    """games: (round, game, white, black, result)."""
    return "".join(f'[Event "t"]\n[Round "{r}.{g}"]\n[White "{w}"]\n[Black "{b}"]\n'
                   f'[Result "{res}"]\n\n{res}\n\n' for r, g, w, b, res in games)


def simulate(tmp_path: Path, players: int, rounds: int, gpm: int, schedule: str, seed: int = 0):
    """An event paired by runner.domain.pairing with random results, written as PGN + seeds."""
    rng = random.Random(seed)
    seeds = [f"Engine {i}" for i in range(1, players + 1)]
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    rows = []
    byes = []
    for number in range(1, rounds + 1):
        plan = pair_round(seeds, history, number, gpm, schedule, excluded)
        excluded = plan.excluded
        games = tuple(PlayedGame(number, g.game_in_round, g.white, g.black, rng.choice(RESULTS))
                      for g in plan.games)
        rows += [(number, g.game_in_round, g.white, g.black, g.result) for g in games]
        byes.append(plan.bye)
        history.append(RoundRecord(number, plan.pairs, games, plan.bye))
    (tmp_path / "event.pgn").write_text(pgn_text(rows))
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    return tmp_path / "event.pgn", tmp_path / "seeds.txt", rows, byes


# --------------------------------------------------------------------------- real TCEC events


def test_swiss_test_2_single_rounds_all_match_json(capsys, tcec_events):
    code, out, _ = audit(capsys, tcec_events / "swiss-test-2.pgn", tcec_events / "swiss-test-2.seeds.txt",
                         "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["players", "games_per_match", "schedule", "rounds", "all_match"]
    assert (data["players"], data["games_per_match"], data["schedule"]) == (42, 1, "split")
    assert data["all_match"] is True
    assert [r["round"] for r in data["rounds"]] == [1, 2, 3, 4, 5]
    first = data["rounds"][0]
    assert list(first) == ["round", "computed", "bye", "played", "dropped_history_rounds",
                           "match"]
    assert len(first["computed"]) == 21 and first["computed"] == first["played"]
    assert first["computed"][0] == ["42StockfishClassical 202007311012",
                                    "35StockfishClassical 202007311012"]
    assert all(r["match"] and r["bye"] is None and r["dropped_history_rounds"] == []
               for r in data["rounds"])


def test_swiss_test_4_double_rounds_consecutive_all_match(capsys, tcec_events):
    code, out, _ = audit(capsys, tcec_events / "swiss-test-4.pgn", tcec_events / "swiss-test-4.seeds.txt",
                         "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["games_per_match"], data["schedule"], data["all_match"]) == (2, "consecutive",
                                                                               True)
    assert [len(r["played"]) for r in data["rounds"]] == [42, 42]


def test_double_round_event_does_not_match_the_split_schedule(capsys, tcec_events):
    code, out, _ = audit(capsys, tcec_events / "swiss-test-4.pgn", tcec_events / "swiss-test-4.seeds.txt",
                         "--schedule", "split", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["schedule"] == "split" and not data["all_match"]
    assert sorted(map(tuple, data["rounds"][0]["computed"])) == \
        sorted(map(tuple, data["rounds"][0]["played"]))  # same games, other order


def test_single_round_event_accepts_format_options_and_human_output(capsys, tcec_events):
    code, out, _ = audit(capsys, tcec_events / "swiss-test-2.pgn", tcec_events / "swiss-test-2.seeds.txt",
                         "--games-per-match", "1", "--schedule", "consecutive")
    assert code == 0
    lines = out.splitlines()
    assert lines[1:6] == [f"round {n}: match (21 games)" for n in range(1, 6)]
    assert lines[-1] == "all 5 rounds match"


def _swap_in_round(text: str, round_prefix: str, a: str, b: str) -> str:
    blocks = text.split("\n\n[Event")

    def swap(block: str) -> str:
        return block.replace(f'"{a}"', "\0").replace(f'"{b}"', f'"{a}"').replace("\0", f'"{b}"')

    altered = [swap(blk) if f'[Round "{round_prefix}' in blk else blk for blk in blocks]
    assert altered != blocks
    return "\n\n[Event".join(altered)


def test_two_players_swapped_is_a_mismatch_in_that_round(tmp_path, capsys):
    pgn, seeds, rows, _ = simulate(tmp_path, 42, 5, 1, "split", seed=3)
    # two players of different games of round 3 change places
    g1, g2 = [r for r in rows if r[0] == 3][:2]
    a, b = g1[2], g2[3]
    pgn.write_text(_swap_in_round(pgn.read_text(), "3.", a, b))
    code, out, _ = audit(capsys, pgn, seeds, "--json")
    assert code == 1
    data = json.loads(out)
    assert [r["match"] for r in data["rounds"][:3]] == [True, True, False]
    assert data["all_match"] is False
    r3 = data["rounds"][2]
    diff = [(c, p) for c, p in zip(r3["computed"], r3["played"], strict=True) if c != p]
    assert len(diff) == 2
    assert all({a, b} & set(c) and {a, b} & set(p) for c, p in diff)
    code, out, _ = audit(capsys, pgn, seeds)
    line = next(x for x in out.splitlines() if x.startswith("round 3:"))
    assert "MISMATCH" in line and "computed" in line and a in line and b in line
    assert "1 of 5 rounds differ" in out or "rounds differ: 3" in out


def test_swapped_colours_in_double_round_is_a_mismatch(tmp_path, capsys):
    pgn, seeds, rows, _ = simulate(tmp_path, 42, 2, 2, "consecutive", seed=4)
    text = pgn.read_text()
    # swap colours of game 2.5 only: the pair still plays twice, but not as computed
    blocks = text.split("\n\n[Event")
    i = next(k for k, blk in enumerate(blocks) if '[Round "2.5"]' in blk)
    w = re.search(r'\[White "([^"]+)"\]', blocks[i]).group(1)
    bl = re.search(r'\[Black "([^"]+)"\]', blocks[i]).group(1)
    blocks[i] = blocks[i].replace(f'[White "{w}"]', "\0").replace(
        f'[Black "{bl}"]', f'[Black "{w}"]').replace("\0", f'[White "{bl}"]')
    pgn.write_text("\n\n[Event".join(blocks))
    code, out, _ = audit(capsys, pgn, seeds, "--json")
    data = json.loads(out)
    assert code == 1 and [r["match"] for r in data["rounds"]] == [True, False]


# --------------------------------------------------------------------------- simulated events


@pytest.mark.parametrize("players, gpm, schedule", [(7, 1, "split"), (9, 2, "split"),
                                                    (6, 2, "consecutive")])
def test_simulated_events_with_byes_and_drops_audit_clean(tmp_path, capsys, players, gpm,
                                                          schedule):
    pgn, seeds, _, byes = simulate(tmp_path, players, players + 3, gpm, schedule)
    code, out, _ = audit(capsys, pgn, seeds, "--json")
    data = json.loads(out)
    assert code == 0, out
    assert (data["games_per_match"], data["schedule"]) == (gpm, schedule)
    assert [r["bye"] for r in data["rounds"]] == byes
    assert any(r["dropped_history_rounds"] for r in data["rounds"])  # more rounds than players


def test_wrong_bye_is_a_mismatch(tmp_path, capsys):
    pgn, seeds, rows, byes = simulate(tmp_path, 5, 3, 1, "split")
    # round 2: let the bye player take the place of a player of the last game
    last = max(g for r, g, *_ in rows if r == 2)
    new_rows = []
    for r, g, w, b, res in rows:
        if (r, g) == (2, last):
            w = byes[1]
        new_rows.append((r, g, w, b, res))
    pgn.write_text(pgn_text(new_rows))
    code, out, _ = audit(capsys, pgn, seeds)
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("round 2:"))
    assert "MISMATCH" in line and f"bye computed {byes[1]}" in line


# --------------------------------------------------------------------------- bad input


def bad(capsys, tmp_path, games, seeds=("a", "b", "c", "d"), *options):
    pgn = tmp_path / "games.pgn"
    pgn.write_text(pgn_text(games))
    (tmp_path / "s.txt").write_text("\n".join(seeds) + "\n")
    code, _, err = audit(capsys, pgn, tmp_path / "s.txt", *options)
    assert code == 2
    return err


def test_unknown_player_names_the_game(tmp_path, capsys):
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "1-0"), (1, 2, "d", "X", "0-1")])
    assert 'games.pgn: game 2 (Round "1.2"): player \'X\' is not in the seeds file' in err


def test_player_twice_in_a_round(tmp_path, capsys):
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "1-0"), (1, 2, "a", "c", "0-1")])
    assert 'game 2 (Round "1.2")' in err and "'a' already plays 'b'" in err


def test_unfinished_result_bad_round_tag_and_duplicates(tmp_path, capsys):
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "*")])
    assert 'game 1 (Round "1.1"): Result' in err
    pgn = tmp_path / "x.pgn"
    pgn.write_text('[Round "7"]\n[White "a"]\n[Black "b"]\n[Result "1-0"]\n\n1-0\n')
    (tmp_path / "s.txt").write_text("a\nb\n")
    code, _, err = audit(capsys, pgn, tmp_path / "s.txt")
    assert code == 2 and 'Round tag \'7\': expected "R.G"' in err
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "1-0"), (1, 1, "d", "c", "1-0")])
    assert "already used by game 1" in err
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "1-0"), (3, 1, "d", "c", "1-0")])
    assert "round 2 has no games" in err


def test_format_option_that_contradicts_the_pgn(tmp_path, capsys):
    err = bad(capsys, tmp_path, [(1, 1, "b", "a", "1-0"), (1, 2, "d", "c", "1-0")],
              ("a", "b", "c", "d"), "--games-per-match", "2")
    assert "play 1 game(s) in round 1, expected 2 per match" in err


def test_missing_files_and_bad_seeds(tmp_path, capsys):
    (tmp_path / "s.txt").write_text("a\nb\n")
    code, _, err = audit(capsys, tmp_path / "nope.pgn", tmp_path / "s.txt")
    assert code == 2 and "nope.pgn: cannot read the PGN" in err
    (tmp_path / "dup.txt").write_text("a\n\nb\na\n")
    pgn, _, _, _ = simulate(tmp_path, 4, 1, 1, "split")
    code, _, err = audit(capsys, pgn, tmp_path / "dup.txt")
    assert code == 2 and "dup.txt: line 4: 'a' is already seed 1" in err
    (tmp_path / "empty.pgn").write_text("")
    code, _, err = audit(capsys, tmp_path / "empty.pgn", tmp_path / "s.txt")
    assert code == 2 and "no games found" in err


def test_rounds_the_rules_cannot_pair_are_mismatches_not_bad_input(tmp_path, capsys):
    # 'd' has Black in every game: by round 3 its WGD makes any pairing impossible. That is a
    # PGN against the rules (exit 1, every round reported), not unreadable input (exit 2).
    cycle = [(("a", "d"), ("b", "c")), (("b", "d"), ("c", "a")), (("c", "d"), ("a", "b"))]
    games = []
    for r in range(1, 8):
        (w1, b1), (w2, b2) = cycle[(r - 1) % 3]
        games += [(r, 1, w1, b1, "1/2-1/2"), (r, 2, w2, b2, "1/2-1/2")]
    pgn = tmp_path / "games.pgn"
    pgn.write_text(pgn_text(games))
    (tmp_path / "s.txt").write_text("a\nb\nc\nd\n")
    code, out, err = audit(capsys, pgn, tmp_path / "s.txt", "--json")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert [r["round"] for r in doc["rounds"]] == list(range(1, 8)) and not doc["all_match"]
    unpairable = [r for r in doc["rounds"] if r["computed"] == []]
    assert unpairable and all(not r["match"] for r in unpairable)
    code, out, _ = audit(capsys, pgn, tmp_path / "s.txt")
    assert code == 1 and "the rules cannot pair this round" in out and "no viable pairing" in out


def test_double_round_event_with_a_game_missing_names_the_right_round(tmp_path, capsys):
    pgn, seeds, _, _ = simulate(tmp_path, 42, 2, 2, "consecutive", seed=5)
    games = pgn.read_text().split("\n\n[Event")
    kept = [g for g in games if '[Round "2.42"]' not in g]
    assert len(kept) == len(games) - 1
    pgn.write_text("\n\n[Event".join(kept))
    code, _, err = audit(capsys, pgn, seeds)
    assert code == 2
    assert "in round 2, expected 2 per match" in err and "play 1 game(s)" in err
