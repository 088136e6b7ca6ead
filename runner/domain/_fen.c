/* runner.domain._fen: the piece placement of a FEN, written from python-chess's bitboards.
 *
 * board_fen(pawns, knights, bishops, rooks, queens, kings, white, black) -> str is
 * python-chess's Board.board_fen() for a board whose public bitboards are these (each an
 * int of 64 bits, square a1 = bit 0, h8 = bit 63): rank 8 first, "/" between ranks, a run of
 * empty squares as its length, White's pieces upper case. A square in no colour's set is
 * empty; one in both sets, or in a colour's set but in no piece's, is an error (ValueError):
 * no python-chess board has one. A pure function: no state, no I/O. The pure-Python path
 * (runner/domain/fen.py) gives the same text and is what runs where this is not built; the
 * tests compare the two on many positions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define PIECES 6

static const char LETTERS[2][PIECES] = {{'p', 'n', 'b', 'r', 'q', 'k'},
                                        {'P', 'N', 'B', 'R', 'Q', 'K'}};

static int bitboard(PyObject *value, uint64_t *out) {
    if (!PyLong_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "board_fen: each bitboard must be an int");
        return -1;
    }
    unsigned long long bits = PyLong_AsUnsignedLongLong(value);
    if (bits == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "board_fen: a bitboard must be in 0 .. 2**64 - 1");
        return -1;
    }
    *out = (uint64_t)bits;
    return 0;
}

/* The letter on ``square`` ('\0': empty), -1 when the bitboards contradict each other. */
static int letter_at(const uint64_t *pieces, uint64_t white, uint64_t black, int square) {
    uint64_t bit = (uint64_t)1 << square;
    int color = (white & bit) ? 1 : (black & bit) ? 0 : -1;
    if (color < 0) return 0;
    if ((white & bit) && (black & bit)) return -1;
    for (int p = 0; p < PIECES; p++)
        if (pieces[p] & bit) return LETTERS[color][p];
    return -1;
}

static PyObject *fen_board_fen(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != PIECES + 2) {
        PyErr_Format(PyExc_TypeError, "board_fen() takes 8 bitboards (pawns, knights, bishops, "
                     "rooks, queens, kings, white, black), got %zd arguments", nargs);
        return NULL;
    }
    uint64_t pieces[PIECES], white, black;
    for (int p = 0; p < PIECES; p++)
        if (bitboard(args[p], &pieces[p]) < 0) return NULL;
    if (bitboard(args[PIECES], &white) < 0 || bitboard(args[PIECES + 1], &black) < 0)
        return NULL;
    char text[8 * 8 + 7];  /* at most 8 characters per rank and 7 slashes */
    size_t n = 0;
    for (int rank = 7; rank >= 0; rank--) {
        int empty = 0;
        for (int file = 0; file < 8; file++) {
            int letter = letter_at(pieces, white, black, rank * 8 + file);
            if (letter < 0) {
                PyErr_Format(PyExc_ValueError, "board_fen: square %c%c is in two colours' sets "
                             "or in a colour's set and no piece's", 'a' + file, '1' + rank);
                return NULL;
            }
            if (letter == 0) {
                empty++;
                continue;
            }
            if (empty) text[n++] = (char)('0' + empty);
            empty = 0;
            text[n++] = (char)letter;
        }
        if (empty) text[n++] = (char)('0' + empty);
        if (rank) text[n++] = '/';
    }
    return PyUnicode_DecodeASCII(text, (Py_ssize_t)n, NULL);
}

static PyMethodDef fen_methods[] = {
    {"board_fen", (PyCFunction)(void (*)(void))fen_board_fen, METH_FASTCALL,
     "board_fen(pawns, knights, bishops, rooks, queens, kings, white, black) -> str: "
     "python-chess's Board.board_fen() of these bitboards."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fen_module = {
    PyModuleDef_HEAD_INIT, "runner.domain._fen",
    "The piece placement of a FEN from python-chess's bitboards (runner/domain/fen.py).", 0,
    fen_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fen(void) { return PyModule_Create(&fen_module); }
