"""Standings: hand-checked small events for every tiebreak, shared places, byes, extra pairs,
and the four output formats."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction as F
from pathlib import Path

import chess.pgn
import pytest

from runner.config import DEFAULT_TIEBREAKS, TIEBREAKS
from runner.domain.models import EventResults, PlayedGame, RoundResult
from runner.domain.standings import compute_standings, first_place_tie
from runner.render.standings_report import (
    distinguishing_places,
    fmt_num,
    fmt_places,
    render_standings,
)

TCEC = list(DEFAULT_TIEBREAKS)
RES = {"1": "1-0", "0": "0-1", "=": "1/2-1/2"}


def event(seeds: str, gpm: int, rounds: list[str], incomplete: int | None = None,
          extra: dict[int, str] | None = None) -> EventResults:
    """Rounds as text: ``"AB1 CD= bye:E"`` = A(white)-B 1-0, C-D draw, E has a bye.

    A game may carry an r-mobility tag: ``AB=@G1.0``. ``extra`` adds rounds of extra games.
    """
    out = []

    def parse(number: int, text: str, is_extra: bool) -> RoundResult:
        games, bye = [], None
        for i, tok in enumerate(t for t in text.split() if not t.startswith("bye:")):
            tok, _, tag = tok.partition("@")
            games.append(PlayedGame(number, i + 1, tok[0], tok[1], RES[tok[2]], tag or None, is_extra))
        for t in text.split():
            if t.startswith("bye:"):
                bye = t[4:]
        return RoundResult(number, tuple(games), bye, complete=number != incomplete)

    for n, text in enumerate(rounds, start=1):
        out.append(parse(n, text, False))
    for n, text in (extra or {}).items():
        out.append(parse(n, text, True))
    return EventResults(tuple(seeds), gpm, tuple(out))


def order(rows) -> list[tuple[str, str]]:
    return [(r.place_label, r.name) for r in rows]


def by_name(rows):
    return {r.name: r for r in rows}


# --------------------------------------------------------------------------- event 1
# Six engines, single rounds, 3 rounds. Final: A 2, B 0, C 2, D 2, E 1, F 2.
#   R1: B-A 0-1, D-C = (G3.0: D), F-E 1-0
#   R2: A-F = (G1.0: A), C-E 1-0, B-D 0-1
#   R3: C-A = (-G0.5: A stalemated C), F-D =, E-B 1-0
# By hand, for the four engines on 2 points:
#            SB                 RMob                         Buch  MBuch Prog Black Wins
#   A  0*1+2*.5+2*.5 = 2    1 + .625 + .75   = 2.375          4     2   4.5   2    1
#   C  2*.5+1*1+2*.5 = 3    .4921875 + 1 + .25 = 1.7421875    5     2   4     1    1
#   D  2*.5+0*1+2*.5 = 2    .5078125 + 1 + .5  = 2.0078125    4     2   4     2    1
#   F  1*1+2*.5+2*.5 = 3    1 + .375 + .5    = 1.875          5     2   4.5   1    1
E1 = event("ABCDEF", 1, [
    "BA0 DC=@G3.0 FE1",
    "AF=@G1.0 CE1 BD0",
    "CA=@-G0.5 FD= EB1",
])


def test_event1_values_by_hand():
    rows = by_name(compute_standings(E1, TCEC))
    expect = {
        "A": (2, F(2), F("2.375"), 4, 2, F("4.5"), 2),
        "C": (2, F(3), F("1.7421875"), 5, 2, F(4), 1),
        "D": (2, F(2), F("2.0078125"), 4, 2, F(4), 2),
        "F": (2, F(3), F("1.875"), 5, 2, F("4.5"), 1),
    }
    for name, (score, sb, rmob, buch, mbuch, prog, black) in expect.items():
        tb = rows[name].tiebreaks
        assert rows[name].score == score, name
        assert tb["SonnebornBerger"] == sb, name
        assert tb["RMobility"] == rmob, name
        assert tb["Buchholz"] == buch, name
        assert tb["MedianBuchholz"] == mbuch, name
        assert tb["ProgressiveScore"] == prog, name
        assert tb["BlackGames"] == black, name
        assert tb["Wins"] == 1, name
        assert tb["DirectEncounter"] is None, name  # A and D never met: DE does not apply
    assert (rows["E"].score, rows["B"].score) == (1, 0)
    assert (rows["E"].wins, rows["E"].losses, rows["B"].losses) == (1, 2, 3)


def test_event1_tcec_chain_sb_then_rmobility():
    rows = compute_standings(E1, TCEC)
    assert order(rows) == [("1", "F"), ("2", "C"), ("3", "A"), ("4", "D"), ("5", "E"), ("6", "B")]
    assert [r.decided_by for r in rows] == ["RMobility", "SonnebornBerger", "RMobility", "Score",
                                           "Score", None]


def test_event1_buchholz_shares_places_and_next_place_skips():
    rows = compute_standings(E1, ["Buchholz"])
    # C, F: 5; A, D: 4 -> two shared places; E is 5th, not 3rd.
    assert order(rows) == [("1-2", "C"), ("1-2", "F"), ("3-4", "A"), ("3-4", "D"), ("5", "E"), ("6", "B")]
    assert [r.place for r in rows] == [1, 1, 3, 3, 5, 6]
    assert rows[0].shared and not rows[4].shared


def test_event1_progressive_score_then_black_games():
    rows = compute_standings(E1, ["ProgressiveScore"])
    assert order(rows)[:4] == [("1-2", "A"), ("1-2", "F"), ("3-4", "C"), ("3-4", "D")]
    rows = compute_standings(E1, ["ProgressiveScore", "BlackGames"])
    assert order(rows)[:4] == [("1", "A"), ("2", "F"), ("3", "D"), ("4", "C")]


def test_event1_black_games():
    rows = compute_standings(E1, ["BlackGames"])
    assert order(rows)[:4] == [("1-2", "A"), ("1-2", "D"), ("3-4", "C"), ("3-4", "F")]


def test_event1_wins_and_direct_encounter_leave_all_four_tied():
    for chain in (["Wins"], ["DirectEncounter"], ["MedianBuchholz"], []):
        rows = compute_standings(E1, chain)
        assert [r.place_label for r in rows] == ["1-4"] * 4 + ["5", "6"], chain
        # inside a shared place: seed order
        assert [r.name for r in rows[:4]] == ["A", "C", "D", "F"]


def test_event1_rmobility_alone():
    rows = compute_standings(E1, ["RMobility"])
    assert [r.name for r in rows[:4]] == ["A", "D", "F", "C"]


# --------------------------------------------------------------------------- event 2
# Round robin of six, single games. B, D, F finish on 3 points with SB 6.25, 2 wins and
# r-mobility 3 (no tags: draws are neutral); C also has 3 points but SB 7.25.
#   R1: A-F =, B-E 1-0, C-D 1-0     R2: A-E 1-0, F-D 0-1, B-C 1-0
#   R3: A-D =, E-C =, F-B 1-0      R4: A-C 0-1, D-B =, E-F 0-1     R5: A-B =, C-F =, D-E 1-0
# SB: B = E .5 + C 3 + D 3*.5 + A 2.5*.5 = 6.25; D = F 3 + A 1.25 + B 1.5 + E .5 = 6.25;
#     F = A 1.25 + B 3 + E .5 + C 1.5 = 6.25; C = D 3 + E .25 + A 2.5 + F 1.5 = 7.25.
# Mini-table of B, D, F: D beat F, drew B -> 1.5; F beat B -> 1; B -> 0.5.
E2 = event("ABCDEF", 1, [
    "AF= BE1 CD1",
    "AE1 FD0 BC1",
    "AD= EC= FB1",
    "AC0 DB= EF0",
    "AB= CF= DE1",
])


def test_three_way_tie_resolved_only_by_direct_encounter():
    rows = compute_standings(E2, TCEC)
    assert order(rows) == [("1", "C"), ("2", "D"), ("3", "F"), ("4", "B"), ("5", "A"), ("6", "E")]
    got = by_name(rows)
    for name in "BDF":
        assert got[name].score == 3
        assert got[name].tiebreaks["SonnebornBerger"] == F("6.25")
        assert got[name].tiebreaks["RMobility"] == 3
        assert got[name].wins == 2
    assert [got[n].tiebreaks["DirectEncounter"] for n in "DFB"] == [F("1.5"), 1, F("0.5")]
    assert [got[n].decided_by for n in "CDFB"] == ["SonnebornBerger", "DirectEncounter",
                                                  "DirectEncounter", "Score"]
    # without direct encounter they share 2nd-4th place
    rows = compute_standings(E2, TCEC[:3])
    assert [r.place_label for r in rows] == ["1", "2-4", "2-4", "2-4", "5", "6"]


# --------------------------------------------------------------------------- event 3
# Direct encounter applied again to the group it splits off. A, B, C, D play a round robin
# (R1-R3): A beat B and C, D beat A, B beat C and D, C-D draw -> mini-table A 2, B 2, D 1.5,
# C 0.5. A and B are still tied: their own game (A beat B) puts A first. Rounds 4-5 against
# E-H bring A-D to 2.5 each. E-H draw among themselves (R1-R3): E, F end on 3 (their game was
# drawn -> shared 1-2), G, H on 2 (drawn -> shared 7-8).
E3 = event("ABCDEFGH", 1, [
    "AB1 CD= EF= GH=",
    "AC1 DB0 EG= FH=",
    "DA1 BC1 EH= FG=",
    "AE= BF= CG1 DH=",
    "AF0 BE0 CH1 DG=",
])


def test_direct_encounter_is_reapplied_to_the_tied_subgroup():
    rows = compute_standings(E3, ["DirectEncounter"])
    assert order(rows) == [("1-2", "E"), ("1-2", "F"), ("3", "A"), ("4", "B"), ("5", "D"),
                           ("6", "C"), ("7-8", "G"), ("7-8", "H")]
    got = by_name(rows)
    assert all(got[n].score == F("2.5") for n in "ABCD")
    # the first (4-engine) mini-table is what is shown
    assert [got[n].tiebreaks["DirectEncounter"] for n in "ABDC"] == [2, 2, F("1.5"), F("0.5")]
    assert got["E"].tiebreaks["DirectEncounter"] == F("0.5")


# --------------------------------------------------------------------------- byes
# Five engines, double rounds (a bye is worth 2 points).
#   R1: B-A 1-0, A-B =; D-C =, C-D =; bye E        R2: B-E 0-1, E-B =; C-A 1-0, A-C 0-1; bye D
# Scores: E 2 + 1.5 = 3.5; C 1 + 2 = 3; D 1 + 2 = 3; B 1.5 + .5 = 2; A .5.
# C and D tie on 3: D received a bye, so C is ahead before any tiebreak.
E4 = event("ABCDE", 2, [
    "BA1 AB= DC= CD= bye:E",
    "BE0 EB= CA1 AC0 bye:D",
])


def test_byes_score_and_rank_before_tiebreaks():
    rows = compute_standings(E4, TCEC)
    assert order(rows) == [("1", "E"), ("2", "C"), ("3", "D"), ("4", "B"), ("5", "A")]
    got = by_name(rows)
    assert (got["E"].score, got["D"].score, got["C"].score) == (F("3.5"), 3, 3)
    assert (got["E"].byes, got["D"].byes, got["C"].byes) == (1, 1, 0)
    assert got["C"].decided_by == "Byes"
    assert got["E"].games == 2 and got["D"].games == 2 and got["C"].games == 4


def test_bye_treatment_in_each_tiebreak():
    got = by_name(compute_standings(E4, TCEC))
    d, e = got["D"].tiebreaks, got["E"].tiebreaks
    # SB: a bye has no opponent and adds nothing. D: two draws with C (3) = 3.
    assert d["SonnebornBerger"] == 3
    assert e["SonnebornBerger"] == 3  # B (2): 1 + .5 -> 2 * 1.5
    # r-mobility: a bye counts as a win per game (2 in double rounds).
    assert d["RMobility"] == 1 + 2 and e["RMobility"] == F("1.5") + 2
    # Buchholz: only real opponents, once per match.
    assert d["Buchholz"] == 3 and e["Buchholz"] == 2
    assert got["C"].tiebreaks["Buchholz"] == F("3.5")  # D 3 + A .5
    # progressive score counts the bye points in the round they were received
    assert d["ProgressiveScore"] == 1 + 3 and e["ProgressiveScore"] == 2 + F("3.5")
    # Wins and games with black count games only
    assert d["Wins"] == 0 and e["Wins"] == 1 and e["BlackGames"] == 1
    assert got["B"].tiebreaks["SonnebornBerger"] == F("0.5") * F("1.5") + F("3.5") * F("0.5")


def test_single_round_bye_is_one_point():
    ev = event("ABC", 1, ["BA1 bye:C", "CB0 bye:A"])
    got = by_name(compute_standings(ev, TCEC))
    assert (got["A"].score, got["B"].score, got["C"].score) == (1, 2, 1)
    assert got["C"].tiebreaks["RMobility"] == 1


# --------------------------------------------------------------------------- extra pairs
# A and B tie for first on 1.5 with equal SB, no r-mobility tags, 1 win each and a drawn game
# between them: shared 1st. Two extra games (A wins one, draws one) decide first place.
E5 = "AC1 BD1", "AB= CD="


def test_extra_pair_decides_first_place_only():
    plain = event("ABCD", 1, list(E5))
    assert [r.place_label for r in compute_standings(plain, TCEC)] == ["1-2", "1-2", "3-4", "3-4"]
    assert first_place_tie(plain) == ("A", "B")
    played = event("ABCD", 1, list(E5), extra={3: "BA0 AB="})
    rows = compute_standings(played, TCEC)
    assert order(rows) == [("1", "A"), ("2", "B"), ("3-4", "C"), ("3-4", "D")]
    assert rows[0].decided_by == "ExtraPairs"
    assert rows[0].score == F("1.5") and rows[0].games == 2  # extra games never count
    assert (rows[0].extra_score, rows[0].extra_games) == (F("1.5"), 2)
    before = compute_standings(plain, TCEC)[0].tiebreaks
    assert {k: v for k, v in rows[0].tiebreaks.items() if k != "DirectEncounter"} == {
        k: v for k, v in before.items() if k != "DirectEncounter"}
    assert first_place_tie(played) is None
    level = event("ABCD", 1, list(E5), extra={3: "BA= AB="})
    assert first_place_tie(level) == ("A", "B")


def test_first_place_tie_ignores_three_way_ties():
    assert first_place_tie(E1) is None  # four engines on 2 points


# --------------------------------------------------------------------------- errors


def test_unknown_engine_and_bad_tiebreak_are_reported():
    bad = EventResults(("A", "B"), 1, (RoundResult(1, (PlayedGame(1, 1, "A", "Z", "1-0"),)),))
    with pytest.raises(ValueError, match=r"game 1\.1 \(A - Z\): 'Z' is not a seeded engine"):
        compute_standings(bad, TCEC)
    with pytest.raises(ValueError, match="unknown tiebreak 'Elo'"):
        compute_standings(E1, ["Elo"])


def test_fmt_num():
    assert fmt_num(F(5, 2)) == "2.5"
    assert fmt_num(F(3)) == "3"
    assert fmt_num(F("2.109375")) == "2.109375"
    assert fmt_num(F(1, 3)) == "0.333333"
    assert fmt_num(F(-1, 4)) == "-0.25"
    assert fmt_num(None) == ""


# --------------------------------------------------------------------------- output


def test_text_output_aligns_and_shows_crosstable_and_rounds():
    rows = compute_standings(E2, TCEC)
    text = render_standings(rows, E2, "text")
    lines = text.splitlines()
    assert lines[0] == "Standings after round 5: 6 engines, single rounds"
    header = lines[2]
    table = lines[2:10]
    # the Score column is right-aligned at the same position on every row
    end = header.index("Score") + len("Score")
    assert all(line[end - 1] != " " for line in table[2:])
    assert "SB" in header and "RMob" in header and "DE" in header
    assert "Crosstable" in lines and "Rounds" in lines
    cross = lines[lines.index("Crosstable") + 4]  # C's row (rank 1)
    assert cross.split()[:3] == ["1", "C", "*"]
    # C vs D (rank 2): C won with White in round 1
    assert "1w" in cross
    rounds = lines[lines.index("Rounds") + 4]
    # round 1: C (rank 1) met D (rank 2) and won with White
    assert rounds.split()[2] == "2:1w"


def test_text_output_shows_colours_of_double_round_matches_and_byes():
    text = render_standings(compute_standings(E4, TCEC), E4, "text")
    assert "3:½b ½w" in text  # C vs D (rank 3) in round 1: Black first, then White
    assert "BYE" in text


def test_extra_games_are_shown():
    played = event("ABCD", 1, list(E5), extra={3: "BA0 AB="})
    rows = compute_standings(played, TCEC)
    text = render_standings(rows, played, "text")
    assert "Extra tie-break games" in text and "3.1  B - A  0-1" in text
    md = render_standings(rows, played, "markdown")
    assert "### Extra tie-break games" in md and "| 3.1 | B | A | 0-1 |" in md
    doc = json.loads(render_standings(rows, played, "json"))
    assert doc["extra_games"][0] == {"game": "3.1", "white": "B", "black": "A", "result": "0-1"}
    assert doc["standings"][0]["extra_score"] == 1.5


def test_markdown_tables_are_well_formed():
    md = render_standings(compute_standings(E1, TCEC), E1, "markdown")
    tables = [line for line in md.splitlines() if line.startswith("|")]
    assert tables
    assert all(line.endswith("|") for line in tables)
    first = [line for line in tables if line.startswith("| #")][0]
    width = first.count("|")
    block = tables[: tables.index(first) + 8]
    assert all(line.count("|") == width for line in block)


def test_json_is_stable_and_exact():
    rows = compute_standings(E1, TCEC)
    doc = json.loads(render_standings(rows, E1, "json"))
    assert doc["format"] == "swiss-runner-standings" and doc["version"] == 1
    assert list(doc) == ["format", "version", "games_per_match", "rounds", "round_in_progress",
                         "tiebreaks", "standings", "extra_games", "title"]
    first = doc["standings"][0]
    assert first["engine"] == "F" and first["place_label"] == "1"
    assert list(first["tiebreaks"]) == list(TIEBREAKS)
    assert first["tiebreaks_exact"]["RMobility"] == "15/8"
    assert first["crosstable"]["A"] == "½b"
    assert first["rounds"][0] == {"round": 1, "bye": False, "opponent": "E", "games": [
        {"game": "1.3", "color": "white", "points": 1.0, "result": "1-0", "rmobility": None}]}
    # same input -> byte-identical output
    assert render_standings(rows, E1, "json") == render_standings(compute_standings(E1, TCEC), E1, "json")


def test_csv_has_one_row_per_engine():
    text = render_standings(compute_standings(E4, TCEC), E4, "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["engine"] for r in rows] == ["E", "C", "D", "B", "A"]
    assert rows[0]["score"] == "3.5" and rows[0]["R1"] == "BYE" and rows[2]["R2"] == "BYE"
    assert rows[1]["SonnebornBerger"] == "4" and rows[1]["decided_by"] == "Byes"


def test_round_in_progress_is_marked():
    ev = event("ABCD", 1, ["AB1 CD=", "CA0"], incomplete=2)
    text = render_standings(compute_standings(ev, TCEC), ev, "text")
    assert text.startswith("Standings after round 1, with 1 game of round 2 (round 2 in "
                           "progress)")
    assert "R2*" in text
    doc = json.loads(render_standings(compute_standings(ev, TCEC), ev, "json"))
    assert doc["round_in_progress"] == 2


def test_the_title_names_the_rounds_the_table_counts():
    """#54: "Standings before round 1" with round 1's results counted, "after round 2" with a
    round-3 result counted, were wrong; the title names what is counted."""
    during_first = event("ABCDEF", 1, ["AB1 CD="], incomplete=1)
    text = render_standings(compute_standings(during_first, TCEC), during_first, "text")
    assert text.startswith("Standings with 2 games of round 1 (round 1 in progress): ")
    in_third = event("ABCDEF", 1, ["AB1 CD= EF0", "CA0 BE= DF1", "AD1 BF0 CE="], incomplete=3)
    rows = compute_standings(in_third, TCEC)
    assert render_standings(rows, in_third, "text").startswith(
        "Standings after round 2, with 3 games of round 3 (round 3 in progress): ")
    assert json.loads(render_standings(rows, in_third, "json"))["title"] == \
        "Standings after round 2, with 3 games of round 3 (round 3 in progress)"
    complete = event("ABCDEF", 1, ["AB1 CD= EF0", "CA0 BE= DF1"])
    assert render_standings(compute_standings(complete, TCEC), complete, "text").startswith(
        "Standings after round 2: ")


def test_unknown_format():
    with pytest.raises(ValueError, match="text \\| markdown \\| json \\| csv"):
        render_standings(compute_standings(E1, TCEC), E1, "html")


def test_before_any_game_everyone_shares_first_place():
    ev = EventResults(("A", "B", "C", "D"), 2, (RoundResult(1, (), None, complete=False),))
    rows = compute_standings(ev, TCEC)
    assert [r.place_label for r in rows] == ["1-4"] * 4 and [r.name for r in rows] == list("ABCD")
    text = render_standings(rows, ev, "text")
    assert text.startswith("Standings before round 1 (round 1 in progress)")


def test_extra_round_is_not_a_round_column():
    played = event("ABCD", 1, list(E5), extra={3: "BA0 AB="})
    doc = json.loads(render_standings(compute_standings(played, TCEC), played, "json"))
    assert doc["rounds"] == [1, 2]
    assert "R3" not in render_standings(compute_standings(played, TCEC), played, "text")


# --------------------------------------------------------------------------- real TCEC events

def tcec_event(folder: Path, name: str) -> EventResults:
    """Results of a real TCEC Swiss test event from its PGN headers (no r-mobility tags)."""
    seeds = tuple(line.strip() for line in
                  (folder / f"{name}.seeds.txt").read_text().splitlines() if line.strip())
    games: dict[int, list[PlayedGame]] = {}
    with open(folder / f"{name}.pgn", encoding="utf-8") as fh:
        while (headers := chess.pgn.read_headers(fh)) is not None:
            rnd, game = (int(x) for x in headers["Round"].split("."))
            games.setdefault(rnd, []).append(
                PlayedGame(rnd, game, headers["White"], headers["Black"], headers["Result"]))
    gpm = 2 if name == "swiss-test-4" else 1
    return EventResults(seeds, gpm, tuple(RoundResult(n, tuple(g)) for n, g in sorted(games.items())))


def generated_event(players: int, rounds: int, gpm: int, seed: int) -> EventResults:
    """A TCEC-sized event of the project's own: paired by runner.domain.pairing, seeded random results."""
    import random

    from runner.domain.pairing import RoundRecord, pair_round

    rng = random.Random(seed)
    seeds = [f"Engine {i:02d}" for i in range(1, players + 1)]
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    for number in range(1, rounds + 1):
        plan = pair_round(seeds, history, number, gpm, "consecutive", excluded)
        excluded = plan.excluded
        games = tuple(PlayedGame(number, g.game_in_round, g.white, g.black,
                                 rng.choice(("1-0", "0-1", "1/2-1/2", "1/2-1/2")))
                      for g in plan.games)
        history.append(RoundRecord(number, plan.pairs, games, plan.bye))
    return EventResults(tuple(seeds), gpm, tuple(RoundResult(r.number, r.games, r.bye)
                                                 for r in history))


def check_ranked_consistently(ev: EventResults, games: int) -> None:
    rows = compute_standings(ev, TCEC)  # speed is measured by bench, not asserted in tests
    assert len(rows) == len(ev.seeds)
    assert sum(r.score for r in rows) == games  # no byes: every game distributes 1 point
    assert sum(r.games for r in rows) == 2 * games
    assert all(a.score >= b.score for a, b in zip(rows, rows[1:], strict=False))
    for a, b in zip(rows, rows[1:], strict=False):
        if a.place == b.place:  # shared: equal on everything in the chain
            assert (a.score, a.tiebreaks["SonnebornBerger"], a.wins) == (b.score, b.tiebreaks["SonnebornBerger"], b.wins)
        elif a.score == b.score:
            assert a.decided_by in TCEC
            key = a.decided_by
            if key != "DirectEncounter":
                assert a.tiebreaks[key] > b.tiebreaks[key] or any(
                    a.tiebreaks[k] != b.tiebreaks[k] for k in TCEC[: TCEC.index(key)])
    for fmt in ("text", "markdown", "json", "csv"):
        assert render_standings(rows, ev, fmt)


@pytest.mark.parametrize("rounds, gpm, games", [(5, 1, 105), (2, 2, 84), (11, 2, 462)])
def test_generated_tcec_sized_event_is_ranked_consistently(rounds, gpm, games):
    check_ranked_consistently(generated_event(42, rounds, gpm, seed=rounds), games)


@pytest.mark.parametrize("name,games", [("swiss-test-2", 105), ("swiss-test-4", 84)])
def test_real_tcec_event_is_ranked_consistently(name, games, tcec_events):
    check_ranked_consistently(tcec_event(tcec_events, name), games)


def _reference_sums(results: EventResults) -> dict[str, dict[str, F]]:
    """Score, extra score, SB, Buchholz, median Buchholz and progressive score added up as
    Fractions, game by game (compute_standings adds half points as integers)."""
    from runner.domain.models import white_score

    score = {n: F(0) for n in results.seeds}
    extra = {n: F(0) for n in results.seeds}
    rounds: dict[str, dict[int, F]] = {n: {} for n in results.seeds}
    opponents: dict[str, dict[int, str]] = {n: {} for n in results.seeds}
    views: dict[str, list[tuple[str, F]]] = {n: [] for n in results.seeds}
    numbered = sorted(r.number for r in results.rounds
                      if r.bye is not None or any(not g.extra for g in r.games))
    for rnd in sorted(results.rounds, key=lambda r: r.number):
        if rnd.bye is not None:
            score[rnd.bye] += results.games_per_match
            rounds[rnd.bye][rnd.number] = rounds[rnd.bye].get(rnd.number, F(0)) + results.games_per_match
        for g in rnd.games:
            ws = F(white_score(g.result))
            for name, opp, pts in ((g.white, g.black, ws), (g.black, g.white, 1 - ws)):
                if g.extra:
                    extra[name] += pts
                    continue
                score[name] += pts
                rounds[name][g.round] = rounds[name].get(g.round, F(0)) + pts
                opponents[name][g.round] = opp
                views[name].append((opp, pts))
    out = {}
    for name in results.seeds:
        opp = [score[o] for _, o in sorted(opponents[name].items())]
        median = sorted(opp)[1:-1] if len(opp) >= 3 else opp
        running = progressive = F(0)
        for number in numbered:
            running += rounds[name].get(number, F(0))
            progressive += running
        out[name] = {"score": score[name], "extra": extra[name],
                     "SonnebornBerger": sum((score[o] * p for o, p in views[name]), F(0)),
                     "Buchholz": sum(opp, F(0)), "MedianBuchholz": sum(median, F(0)),
                     "ProgressiveScore": progressive}
    return out


@pytest.mark.parametrize("seed", range(40))
def test_sums_in_half_points_are_the_fraction_sums(seed: int) -> None:
    import random

    rng = random.Random(seed)
    seeds = tuple(f"E{i}" for i in range(rng.choice([2, 3, 5, 6, 9])))
    gpm = rng.choice([1, 2])
    rounds = []
    for number in range(1, rng.randint(2, 7)):
        names = list(seeds)
        rng.shuffle(names)
        bye = names.pop() if len(names) % 2 else None
        games = [PlayedGame(number, 2 * i + leg + 1, *((a, b) if leg == 0 else (b, a)),
                            rng.choice(["1-0", "0-1", "1/2-1/2"]), rng.choice([None, "G1.0", "G3.5"]))
                 for i, (a, b) in enumerate(zip(names[::2], names[1::2], strict=True))
                 for leg in range(gpm) if rng.random() < 0.9]
        rounds.append(RoundResult(number, tuple(games), bye, complete=True))
    last = len(rounds) + 1
    a, b = seeds[0], seeds[1]
    rounds.append(RoundResult(last, tuple(
        PlayedGame(last, leg + 1, *((a, b) if leg == 0 else (b, a)), rng.choice(["1-0", "1/2-1/2"]),
                   None, extra=True) for leg in range(gpm))))
    results = EventResults(seeds, gpm, tuple(rounds))
    chain = ("SonnebornBerger", "Buchholz", "MedianBuchholz", "ProgressiveScore")
    expected = _reference_sums(results)
    for row in compute_standings(results, chain):
        want = expected[row.name]
        assert row.score == want["score"] and type(row.score) is F
        assert row.extra_score == (want["extra"] if row.extra_games else None)
        for key in chain:
            assert row.tiebreaks[key] == want[key] and type(row.tiebreaks[key]) is F, key


def _decimal_text(value: F, digits: int) -> str:
    """fmt_num's text as it was made with Decimal (the reference)."""
    from decimal import Decimal

    if value.denominator == 1:
        return str(value.numerator)
    scaled = value * 10**digits
    if scaled.denominator != 1:
        return f"{float(value):.{digits}f}"
    text = format(Decimal(scaled.numerator).scaleb(-digits), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


_VALUES = [F(n, d) for n in range(-130, 131, 3)
           for d in (1, 2, 3, 4, 5, 8, 16, 25, 64, 125, 1024, 4096, 10**6, 2 * 10**6, 3 * 10**6)]


@pytest.mark.parametrize("digits", [0, 1, 2, 6, 9])
def test_numbers_print_as_their_decimal_text(digits: int) -> None:
    """A tiebreak's text (made in integers) is the Decimal text it was, for any value."""
    for value in _VALUES:
        assert fmt_num(value, digits) == _decimal_text(value, digits), value


def test_rmobility_places_are_those_of_fraction_rounding() -> None:
    """The fewest places that tell values apart, and a value at those places, as rounding
    the Fractions (half to even) gives them."""
    from decimal import Decimal

    def reference(values: list[F | None], most: int = 12) -> int:
        known = sorted({v for v in values if v is not None})
        for places in range(most + 1):
            if len({round(v * 10**places) for v in known}) == len(known):
                return places
        return most

    for group in ([F(6), F(11, 2), F(2499, 1000)], [F(1, 3), F(1, 3) + F(1, 10**9), None],
                  [F(5, 2), F(7, 2), F(-5, 2), F(1, 8), F(3, 8)], [F(n, 7) for n in range(40)],
                  [None], []):
        assert distinguishing_places(group) == reference(group)
    for value in _VALUES:
        for places in (1, 2, 3, 5):
            expected = str(value.numerator) if value.denominator == 1 else format(
                Decimal(round(value * 10**places)).scaleb(-places), "f")
            assert fmt_places(value, places) == expected, (value, places)


def test_tables_align_as_ljust_and_rjust_do() -> None:
    from runner.render.tables import text_table

    header = ["#", "Engine", "Score", "R1"]
    body = [["1", "Stockfish ½", "10.5", "2:1w"], ["12", "E\x1b[31m", "", "BYE"],
            ["3", "", "7", ""], ["4", "{0} {x}", "½", "WD"]]
    text = text_table(header, body, right={0, 2})
    rows = [header, *[[c.replace("\x1b", "\\x1b") for c in row] for row in body]]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in (0, 2) else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    assert text == "\n".join([line(header), line(["-" * w for w in widths]),
                              *map(line, rows[1:])])
    with pytest.raises(ValueError):
        text_table(header, [["1", "2"]])


def test_a_ranking_kept_for_other_games_is_not_taken() -> None:
    """Two events with the same rounds, byes and game counts but one result changed are
    ranked each on its own (the rankings kept are looked up by their rounds' games)."""
    from runner.service.views.snapshotdoc import ranked

    def event(result: str) -> EventResults:
        games = (PlayedGame(1, 1, "A", "B", "1-0"), PlayedGame(1, 2, "B", "A", result))
        return EventResults(("A", "B", "C"), 2, (RoundResult(1, games, "C"),))

    won, lost = event("1-0"), event("0-1")
    assert ranked(won, DEFAULT_TIEBREAKS) == compute_standings(won, DEFAULT_TIEBREAKS)
    assert ranked(lost, DEFAULT_TIEBREAKS) == compute_standings(lost, DEFAULT_TIEBREAKS)
    assert ranked(won, DEFAULT_TIEBREAKS) != ranked(lost, DEFAULT_TIEBREAKS)
