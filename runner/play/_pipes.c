/* runner.play._pipes: an engine's stdout read, split and time-stamped below Python.
 *
 * One native thread per engine (a Reader) waits in a blocking read() of the engine's stdout
 * (one system call per wake: the engine writes a line, the read returns it) with the GIL
 * never taken, and stamps CLOCK_MONOTONIC (the clock of Python's time.monotonic() on Linux)
 * the moment each read returns. stop() cancels the thread (pthread_cancel), which is
 * cancellable in that read only, never while it holds a lock. It never touches a Python
 * object: what it has for the event loop is queued under a mutex, and the loop is woken by
 * an eventfd it watches (loop.add_reader) only when the queue goes from empty to not empty.
 *
 * Two modes:
 *   pass  every chunk read is queued as it is (the handshake, isready/readyok, XBoard,
 *         idle): the loop is woken for it, as the Python reader is.
 *   move  (begin_move, set by the runner before it writes "go"): the thread splits the
 *         lines itself, writes each to the engine log (a LogFile) if one is set, keeps the
 *         last "info" line with a score, the last with a bound and the last with a PV (of
 *         the first PV of a MultiPV search), and queues one event when the "bestmove" line
 *         is complete, stamped with the read that completed it; what follows that line is
 *         queued as a pass chunk and the reader is back in pass mode.
 *   At EOF or a read error an EOF event is queued and the thread ends (closing the
 *   engine's stdout, which it owns). stop() ends it at once, queueing nothing.
 *
 * Priority (Reader(fd, realtime, nice, slice_ns), chosen by runner.play.pipes): first
 * thing, the thread asks for SCHED_FIFO at priority `realtime` (> 0), else for the nice
 * value `nice` (< 0) and a time slice of `slice_ns` (Linux 6.12+), else for the slice
 * alone, for itself only (never inherited: SCHED_RESET_ON_FORK); what the kernel refuses
 * it goes without, silently. The thread only blocks in read() and spends microseconds per
 * read: what the priority buys is that the read of a bestmove, and so its stamp, does not
 * wait for a core behind engines or the event loop. `native_id` and `priority` say which
 * thread it is and what it got. At SCHED_FIFO, given its engine's pid, it follows the
 * engine's CPU (see "following the engine's CPU"; `cpu` says where it is bound).
 *
 * LogFile: the engine log of one game, a 64 KiB buffer over a file descriptor shared by the
 * loop thread (its own lines) and the readers of the game's engines (their lines in move
 * mode), under one mutex, so that the lines stay in the order they were written. The first
 * write error turns it off (its errno is kept; the next write from Python raises it).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <math.h>

#define READ_SIZE (16 * 1024)
#define LOG_BUFFER (64 * 1024)

static double now_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ growable bytes */

typedef struct {
    char *data;
    size_t len, cap;
} Bytes;

static int bytes_reserve(Bytes *b, size_t need) {
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL) return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int bytes_set(Bytes *b, const char *src, size_t n) {
    if (bytes_reserve(b, n + 1) < 0) return -1;
    memcpy(b->data, src, n);
    b->len = n;
    return 0;
}

static int bytes_append(Bytes *b, const char *src, size_t n) {
    if (bytes_reserve(b, b->len + n + 1) < 0) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static void bytes_free(Bytes *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ the log file */

typedef struct {
    atomic_int refs;
    pthread_mutex_t mu;
    int fd;          /* -1: closed */
    int failed;      /* errno of the first write error, 0 */
    Bytes buf;
} LogCore;

static void log_flush_locked(LogCore *log) {
    size_t done = 0;
    while (done < log->buf.len && log->fd >= 0 && !log->failed) {
        ssize_t n = write(log->fd, log->buf.data + done, log->buf.len - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            log->failed = errno;
            break;
        }
        done += (size_t)n;
    }
    log->buf.len = 0;
}

static void log_put_locked(LogCore *log, const char *text, size_t n) {
    if (log->fd < 0 || log->failed) return;
    if (log->buf.len + n > LOG_BUFFER) log_flush_locked(log);
    if (n > LOG_BUFFER) {
        if (bytes_append(&log->buf, text, n) == 0) log_flush_locked(log);
        return;
    }
    if (bytes_append(&log->buf, text, n) < 0) log->failed = ENOMEM;
}

static void log_release(LogCore *log) {
    if (log == NULL) return;
    if (atomic_fetch_sub(&log->refs, 1) == 1) {
        if (log->fd >= 0) {
            log_flush_locked(log);
            close(log->fd);
        }
        bytes_free(&log->buf);
        pthread_mutex_destroy(&log->mu);
        free(log);
    }
}

typedef struct {
    PyObject_HEAD
    LogCore *core;
} LogFileObject;

static void lock_from_python(pthread_mutex_t *mu) {
    if (pthread_mutex_trylock(mu) == 0) return;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(mu);
    Py_END_ALLOW_THREADS
}

static int LogFile_init(LogFileObject *self, PyObject *args, PyObject *kwds) {
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd)) return -1;
    LogCore *core = calloc(1, sizeof(LogCore));
    if (core == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    atomic_init(&core->refs, 1);
    pthread_mutex_init(&core->mu, NULL);
    core->fd = fd;
    if (bytes_reserve(&core->buf, LOG_BUFFER + 1) < 0) {
        free(core);
        PyErr_NoMemory();
        return -1;
    }
    log_release(self->core);
    self->core = core;
    return 0;
}

static void LogFile_dealloc(LogFileObject *self) {
    log_release(self->core);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *raise_errno(int err) {
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
}

static PyObject *LogFile_write(LogFileObject *self, PyObject *arg) {
    Py_ssize_t n;
    PyObject *encoded = NULL;
    const char *text;
    if (PyUnicode_Check(arg)) {
        encoded = PyUnicode_AsEncodedString(arg, "utf-8", "replace");
        if (encoded == NULL) return NULL;
        text = PyBytes_AS_STRING(encoded);
        n = PyBytes_GET_SIZE(encoded);
    } else if (PyBytes_Check(arg)) {
        text = PyBytes_AS_STRING(arg);
        n = PyBytes_GET_SIZE(arg);
    } else {
        PyErr_SetString(PyExc_TypeError, "write() takes str or bytes");
        return NULL;
    }
    LogCore *log = self->core;
    lock_from_python(&log->mu);
    int failed = log->failed, closed = log->fd < 0;
    if (!failed && !closed) {
        log_put_locked(log, text, (size_t)n);
        failed = log->failed;
    }
    pthread_mutex_unlock(&log->mu);
    Py_XDECREF(encoded);
    if (failed) return raise_errno(failed);
    if (closed) {
        PyErr_SetString(PyExc_ValueError, "I/O operation on a closed log");
        return NULL;
    }
    return PyLong_FromSsize_t(n);
}

static PyObject *LogFile_close(LogFileObject *self, PyObject *unused) {
    LogCore *log = self->core;
    lock_from_python(&log->mu);
    int failed = 0;
    if (log->fd >= 0) {
        if (!log->failed) log_flush_locked(log);
        failed = log->failed;
        if (close(log->fd) < 0 && !failed) failed = errno;
        log->fd = -1;
    }
    pthread_mutex_unlock(&log->mu);
    if (failed) return raise_errno(failed);
    Py_RETURN_NONE;
}

static PyObject *LogFile_get_failed(LogFileObject *self, void *closure) {
    LogCore *log = self->core;
    lock_from_python(&log->mu);
    int failed = log->failed;
    pthread_mutex_unlock(&log->mu);
    return PyLong_FromLong(failed);
}

static PyMethodDef LogFile_methods[] = {
    {"write", (PyCFunction)LogFile_write, METH_O,
     "write(text): add text (str or bytes) to the buffer; OSError once the log failed."},
    {"close", (PyCFunction)LogFile_close, METH_NOARGS,
     "close(): flush and close the file (readers' later lines are dropped)."},
    {NULL}};

static PyGetSetDef LogFile_getset[] = {
    {"failed", (getter)LogFile_get_failed, NULL, "errno of the first write error, 0", NULL},
    {NULL}};

static PyTypeObject LogFileType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "runner.play._pipes.LogFile",
    .tp_basicsize = sizeof(LogFileObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LogFile(fd): an engine log's buffered file, shared with the readers (owns fd).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LogFile_init,
    .tp_dealloc = (destructor)LogFile_dealloc,
    .tp_methods = LogFile_methods,
    .tp_getset = LogFile_getset,
};

/* ------------------------------------------------------------------ the reader */

enum { EV_DATA = 0, EV_MOVE = 1, EV_EOF = 2 };

typedef struct Event {
    struct Event *next;
    int kind;
    double stamp;
    int err;
    Bytes data;  /* DATA: the chunk; MOVE: the bestmove line */
    Bytes score, bound, pv;  /* MOVE: the last such lines (len 0: none) */
    int has_score, has_bound, has_pv;
    /* a relay's move (runner.play.relay): the side, its go stamp, whether it was relayed
     * (then next_go: the stamp of the go written to the other side), what followed it */
    int side, relayed;
    double go_stamp, next_go;
    Bytes rest;
} Event;

struct RelayCore;
static void relay_release(struct RelayCore *R);
static void relay_move(struct RelayCore *R, int side, Event *ev);

typedef struct {
    atomic_int refs;
    pthread_mutex_t mu;
    int fd;        /* the engine's stdout, the thread's to read and close */
    int wake_fd;   /* eventfd: the thread tells the loop */
    Event *head, *tail;
    int moving;    /* move mode */
    Bytes partial; /* move mode: the start of a line not complete yet */
    Bytes score, bound, pv;
    int has_score, has_bound, has_pv;
    LogCore *log;  /* move mode: where its lines go (NULL: nowhere) */
    Bytes prefix;  /* " <who> < " */
    double t0;     /* the log's time origin */
    int ended;     /* the thread has closed fd and queued its EOF (unless stopped) */
    int stopped;   /* stop() has cancelled the thread */
    pthread_t thread;
    int started;
    struct RelayCore *relay; /* move mode begun by a relay: the move is the relay's */
    int relay_side;
    Event *relay_ev;         /* the relay's move, found under mu, handed over after it */
    int realtime, nice;  /* the priority asked for (0: none) */
    long long slice_ns;  /* the time slice asked for where not realtime (0: the default) */
    atomic_int tid;      /* the thread's id, once it runs (0 before) */
    atomic_int priority; /* what it got: PRIORITY_* (-1 before it asked) */
    int engine_pid;      /* the engine whose CPU it follows (0: none) */
    int move_reads;      /* move mode: reads so far in this move */
    atomic_int cpu;      /* the CPU it is bound to (-1: not bound) */
} ReaderCore;

/* What a reader thread got: bits of PRIORITY_NICE | PRIORITY_SLICE, or PRIORITY_REALTIME */
enum { PRIORITY_NORMAL = 0, PRIORITY_NICE = 1, PRIORITY_SLICE = 2, PRIORITY_REALTIME = 4 };

/* struct sched_attr as Linux takes it (SCHED_ATTR_SIZE_VER0: no utilization clamps) */
typedef struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} SchedAttr;

/* A normal thread's nice value and time slice (Linux 6.12+: the slice is a normal thread's
 * `runtime`; older kernels ignore it), for the calling thread only; 1 when the kernel took
 * both as asked (read back). */
static int set_normal_attr(int nice, uint64_t slice_ns) {
#if defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
    SchedAttr attr = {.size = sizeof attr, .policy = SCHED_OTHER, .flags = 1 /* RESET_ON_FORK */,
                      .nice = nice, .runtime = slice_ns};
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return 0;
    SchedAttr now = {0};
    if (syscall(SYS_sched_getattr, 0, &now, sizeof now, 0) != 0) return 0;
    return now.nice == nice && (slice_ns == 0 || now.runtime == slice_ns);
#else
    return 0;
#endif
}

/* The calling thread's priority raised as asked (see the top): SCHED_FIFO at `realtime`,
 * else the nice value and the time slice, else the slice alone (no privilege needed). */
static int raise_priority(int realtime, int nice, long long slice_ns) {
    if (realtime > 0) {
        struct sched_param param = {.sched_priority = realtime};
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0)
            return PRIORITY_REALTIME;
    }
    uint64_t slice = slice_ns > 0 ? (uint64_t)slice_ns : 0;
    int current = getpriority(PRIO_PROCESS, 0);  /* Linux: the calling thread's */
    if (nice < 0 && nice < current && set_normal_attr(nice, slice))
        return PRIORITY_NICE | (slice ? PRIORITY_SLICE : 0);
    if (slice && set_normal_attr(current, slice)) return PRIORITY_SLICE;
    return PRIORITY_NORMAL;
}

static void event_free(Event *ev) {
    bytes_free(&ev->data);
    bytes_free(&ev->score);
    bytes_free(&ev->bound);
    bytes_free(&ev->pv);
    bytes_free(&ev->rest);
    free(ev);
}

static void reader_release(ReaderCore *r) {
    if (r == NULL) return;
    if (atomic_fetch_sub(&r->refs, 1) == 1) {
        Event *ev = r->head;
        while (ev != NULL) {
            Event *next = ev->next;
            event_free(ev);
            ev = next;
        }
        if (r->wake_fd >= 0) close(r->wake_fd);
        if (r->fd >= 0) close(r->fd);
        bytes_free(&r->partial);
        bytes_free(&r->score);
        bytes_free(&r->bound);
        bytes_free(&r->pv);
        bytes_free(&r->prefix);
        log_release(r->log);
        if (r->relay_ev) event_free(r->relay_ev);
        relay_release(r->relay);
        pthread_mutex_destroy(&r->mu);
        free(r);
    }
}

/* Queue an event; returns 1 when the queue was empty (the loop must be woken). */
static int enqueue_locked(ReaderCore *r, Event *ev) {
    int was_empty = r->head == NULL;
    ev->next = NULL;
    if (r->tail) r->tail->next = ev;
    else r->head = ev;
    r->tail = ev;
    return was_empty;
}

static Event *new_event(int kind, double stamp) {
    Event *ev = calloc(1, sizeof(Event));
    if (ev != NULL) {
        ev->kind = kind;
        ev->stamp = stamp;
    }
    return ev;
}

static int queue_data_locked(ReaderCore *r, const char *data, size_t n, double stamp) {
    if (n == 0) return 0;
    Event *ev = new_event(EV_DATA, stamp);
    if (ev == NULL || bytes_set(&ev->data, data, n) < 0) {
        if (ev) event_free(ev);
        return 0;  /* out of memory: the chunk is lost, as a failed read would lose it */
    }
    return enqueue_locked(r, ev);
}

/* Which of these an info line has (anywhere, the words after a space): " score ", " pv ",
 * " multipv ", " multipv 1 ", " lowerbound" or " upperbound"; one pass over its spaces. */
enum { W_SCORE = 1, W_PV = 2, W_MULTIPV = 4, W_MULTIPV_1 = 8, W_BOUND = 16 };

static int starts(const char *p, const char *end, const char *word, size_t m) {
    return (size_t)(end - p) >= m && memcmp(p, word, m) == 0;
}

static const struct { const char *word; size_t n; int bit; } INFO_WORDS[] = {
    {"score ", 6, W_SCORE}, {"pv ", 3, W_PV}, {"multipv ", 8, W_MULTIPV},
    {"lowerbound", 10, W_BOUND}, {"upperbound", 10, W_BOUND}};

static int info_words(const char *s, size_t n) {
    const char *end = s + n, *p = s;
    int words = 0;
    while ((p = memchr(p, ' ', (size_t)(end - p))) != NULL) {
        if (++p >= end) break;
        for (size_t k = 0; k < sizeof INFO_WORDS / sizeof INFO_WORDS[0]; k++) {
            if (*p != INFO_WORDS[k].word[0] || !starts(p, end, INFO_WORDS[k].word, INFO_WORDS[k].n))
                continue;
            words |= INFO_WORDS[k].bit;
            if (INFO_WORDS[k].bit == W_MULTIPV && starts(p + 8, end, "1 ", 2)) words |= W_MULTIPV_1;
            break;
        }
    }
    return words;
}

/* One line into an engine log: "+<ms since t0> <prefix><line>\n" (prefix " who < "). */
static void log_line(LogCore *log, double t0, const Bytes *prefix, const char *line, size_t n,
                     double stamp) {
    if (log == NULL) return;
    char head[64];
    int h = snprintf(head, sizeof head, "%+12.3f", (stamp - t0) * 1000.0);
    pthread_mutex_lock(&log->mu);
    if (log->fd >= 0 && !log->failed) {
        log_put_locked(log, head, (size_t)h);
        log_put_locked(log, prefix->data, prefix->len);
        log_put_locked(log, line, n);
        log_put_locked(log, "\n", 1);
    }
    pthread_mutex_unlock(&log->mu);
}

static void log_line_locked(ReaderCore *r, const char *line, size_t n, double stamp) {
    log_line(r->log, r->t0, &r->prefix, line, n, stamp);
}

/* One complete line (without its newline) in move mode. Returns 1 when it is the move. */
static int move_line_locked(ReaderCore *r, const char *line, size_t n, double stamp) {
    if (n && line[n - 1] == '\r') n--;
    log_line_locked(r, line, n, stamp);
    if (n >= 5 && memcmp(line, "info ", 5) == 0) {
        int words = info_words(line, n);
        int has_score = words & W_SCORE, has_pv = words & W_PV;
        if (!has_score && !has_pv) return 0;
        if ((words & W_MULTIPV) && !(words & W_MULTIPV_1)) return 0;
        if (has_score) {
            if (words & W_BOUND) {
                if (bytes_set(&r->bound, line, n) == 0) r->has_bound = 1;
            } else if (bytes_set(&r->score, line, n) == 0) {
                r->has_score = 1;
            }
        }
        if (has_pv && bytes_set(&r->pv, line, n) == 0) r->has_pv = 1;
        return 0;
    }
    if (n >= 8 && memcmp(line, "bestmove", 8) == 0
            && (n == 8 || line[8] == ' ' || line[8] == '\t')) {
        Event *ev = new_event(EV_MOVE, stamp);
        if (ev == NULL) return 0;
        bytes_set(&ev->data, line, n);
        if (r->has_score) { ev->score = r->score; ev->has_score = 1; r->score = (Bytes){0}; }
        if (r->has_bound) { ev->bound = r->bound; ev->has_bound = 1; r->bound = (Bytes){0}; }
        if (r->has_pv) { ev->pv = r->pv; ev->has_pv = 1; r->pv = (Bytes){0}; }
        r->has_score = r->has_bound = r->has_pv = 0;
        if (r->relay != NULL) r->relay_ev = ev;  /* handed to the relay once mu is released */
        else enqueue_locked(r, ev);
        return 1;
    }
    return 0;
}

/* A chunk read in move mode; returns whether the loop must be woken. */
static int move_chunk_locked(ReaderCore *r, const char *data, size_t n, double stamp) {
    size_t at = 0;
    while (at < n) {
        const char *nl = memchr(data + at, '\n', n - at);
        if (nl == NULL) {
            bytes_append(&r->partial, data + at, n - at);
            return 0;
        }
        size_t end = (size_t)(nl - data);
        int moved;
        if (r->partial.len) {
            bytes_append(&r->partial, data + at, end - at);
            moved = move_line_locked(r, r->partial.data, r->partial.len, stamp);
            r->partial.len = 0;
        } else {
            moved = move_line_locked(r, data + at, end - at, stamp);
        }
        at = end + 1;
        if (moved) {
            r->moving = 0;
            if (r->relay_ev != NULL) {  /* the relay's: what follows goes with the move */
                bytes_set(&r->relay_ev->rest, data + at, n - at);
                return 0;
            }
            int was_empty = r->head == r->tail;  /* the move is the only event queued */
            queue_data_locked(r, data + at, n - at, stamp);
            return was_empty;
        }
    }
    return 0;
}

static void wake(ReaderCore *r) {
    uint64_t one = 1;
    ssize_t w;
    do {
        w = write(r->wake_fd, &one, sizeof one);
    } while (w < 0 && errno == EINTR);
}

/* ---- following the engine's CPU
 *
 * A SCHED_FIFO thread wakes on the CPU it last ran on (the kernel's rule for a real-time
 * task), wherever the engine writes from. A wake on another CPU than the writer's costs the
 * reader many times a wake on the writer's own (an interrupt to the other CPU, a cold cache:
 * 20 us against 2.5 on a 2-vCPU VM), and a move's info lines wake it once each. So, at the
 * third read of each move, a real-time reader given its engine's pid looks up the CPU of the
 * engine's running thread (/proc/<pid>/task/<tid>/stat) and binds itself to that CPU (within
 * the CPUs it was allowed at start): the engine's next lines wake it where they are written,
 * and the bestmove is read at once, the reader preempting the engine that has just written
 * it. Where the engine moves on, the next move's look-up follows it. An engine thread at a
 * real-time policy itself is not followed (the reader could not preempt it). */

/* The read of a move at which the engine's CPU is looked up: an engine that writes less per
 * move (a line or two, then bestmove) is not worth the look-up. */
#define FOLLOW_AT 3

struct dirent64_raw {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* The CPU of an engine thread by its stat file (read from its start): >= 0 when the thread
 * is running (state R) at a normal policy, -1 when it is not, -2 when it cannot be read. */
static int running_cpu(int stat_fd) {
    char text[1024];
    ssize_t got = pread(stat_fd, text, sizeof text - 1, 0);
    if (got <= 0) return -2;
    text[got] = 0;
    char *p = strrchr(text, ')');  /* "pid (comm) state ppid ...": fields from 3 on */
    if (p == NULL || p[1] != ' ') return -2;
    if (p[2] != 'R') return -1;
    long fields[42] = {0};
    int field = 3;
    for (p += 2; *p && field < 41; p++)
        if (*p == ' ') fields[++field] = strtol(p + 1, NULL, 10);
    if (field < 41 || fields[41] == SCHED_FIFO || fields[41] == SCHED_RR) return -1;
    return (int)fields[39];  /* processor; 41: policy */
}

/* The CPU of the engine's running thread, or -1: the thread found last time (*stat_fd, its
 * stat file kept open) when it still runs, else the first running one of its threads (its
 * stat file kept in *stat_fd for the next time). */
static int engine_cpu(int task_dir, int *stat_fd) {
    if (*stat_fd >= 0) {
        int cpu = running_cpu(*stat_fd);
        if (cpu >= 0) return cpu;
        close(*stat_fd);
        *stat_fd = -1;
    }
    char dents[8192], path[300];
    if (lseek(task_dir, 0, SEEK_SET) < 0) return -1;
    long n = syscall(SYS_getdents64, task_dir, dents, sizeof dents);
    for (long at = 0; at < n;) {
        struct dirent64_raw *d = (struct dirent64_raw *)(dents + at);
        at += d->reclen;
        if (d->name[0] < '0' || d->name[0] > '9') continue;
        snprintf(path, sizeof path, "%s/stat", d->name);
        int fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        int cpu = running_cpu(fd);
        if (cpu >= 0) {
            *stat_fd = fd;
            return cpu;
        }
        close(fd);
    }
    return -1;
}

/* Bind the calling reader to its engine's CPU (see above). */
static void follow_engine(ReaderCore *r, int task_dir, int *stat_fd, const cpu_set_t *allowed) {
    int cpu = engine_cpu(task_dir, stat_fd);
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, allowed) || cpu == atomic_load(&r->cpu))
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) atomic_store(&r->cpu, cpu);
}

/* /proc/<pid>/task of the engine to follow, when this reader follows one (-1: it does not):
 * a real-time reader, an engine's pid, more than one CPU allowed. */
static int follow_dir(ReaderCore *r, cpu_set_t *allowed) {
    if (atomic_load(&r->priority) != PRIORITY_REALTIME || r->engine_pid <= 0) return -1;
    if (sched_getaffinity(0, sizeof *allowed, allowed) != 0 || CPU_COUNT(allowed) < 2) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", r->engine_pid);
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* What a reader thread holds, for its end (by stop(): cancelled in its read). */
typedef struct {
    ReaderCore *r;
    char *buf;
    int task_dir, stat_fd;  /* following the engine (-1: not) */
    int err;  /* 0: EOF; an errno; -1: stopped (no EOF event) */
} ReaderRun;

/* The thread's end: the engine's stdout closed, the EOF event queued (unless stopped). */
static void reader_end(void *arg) {
    ReaderRun *run = arg;
    ReaderCore *r = run->r;
    free(run->buf);
    if (run->task_dir >= 0) close(run->task_dir);
    if (run->stat_fd >= 0) close(run->stat_fd);
    pthread_mutex_lock(&r->mu);
    close(r->fd);
    r->fd = -1;
    r->ended = 1;  /* from here on stop() leaves the thread alone */
    struct RelayCore *gone = r->relay;  /* a relay's move never answered: unlinked */
    r->relay = NULL;
    int must_wake = 0;
    if (run->err != -1) {
        Event *ev = new_event(EV_EOF, now_monotonic());
        if (ev != NULL) {
            ev->err = run->err;
            must_wake = enqueue_locked(r, ev);
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (must_wake) wake(r);
    relay_release(gone);
    reader_release(r);
}

/* A blocking read of the engine's stdout: the one place where stop() (pthread_cancel) can
 * end the thread, which is otherwise not cancellable (it never is holding a lock there). */
static ssize_t read_or_stop(int fd, char *buf) {
    int was;
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &was);
    ssize_t n = read(fd, buf, READ_SIZE);
    if (n < 0 && errno == EAGAIN) {  /* O_NONBLOCK set again by someone: wait for data */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, 1, -1);
        errno = EAGAIN;
    }
    int got = errno;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
    errno = got;
    return n;
}

static void *reader_main(void *arg) {
    ReaderCore *r = arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_setname_np(pthread_self(), "engine-reader");
    atomic_store(&r->tid, (int)syscall(SYS_gettid));
    atomic_store(&r->priority, raise_priority(r->realtime, r->nice, r->slice_ns));
    cpu_set_t allowed;
    ReaderRun run = {.r = r, .buf = malloc(READ_SIZE), .stat_fd = -1, .err = -1};
    run.task_dir = follow_dir(r, &allowed);
    pthread_cleanup_push(reader_end, &run);
    char *buf = run.buf;
    for (;;) {
        if (buf == NULL) { run.err = ENOMEM; break; }
        ssize_t n = read_or_stop(r->fd, buf);  /* one syscall per wake */
        double stamp = now_monotonic();
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            run.err = errno;
            break;
        }
        if (n == 0) { run.err = 0; break; }
        pthread_mutex_lock(&r->mu);
        int must_wake = r->moving ? move_chunk_locked(r, buf, (size_t)n, stamp)
                                  : queue_data_locked(r, buf, (size_t)n, stamp);
        Event *hand = r->relay_ev;
        struct RelayCore *relay = NULL;
        int side = r->relay_side;
        if (hand != NULL) {  /* the relay's reference goes with the move */
            relay = r->relay;
            r->relay = NULL;
            r->relay_ev = NULL;
        }
        int follow = r->moving && ++r->move_reads == FOLLOW_AT && run.task_dir >= 0;
        pthread_mutex_unlock(&r->mu);
        if (must_wake) wake(r);
        if (hand != NULL) relay_move(relay, side, hand);
        if (follow) follow_engine(r, run.task_dir, &run.stat_fd, &allowed);
    }
    pthread_cleanup_pop(1);
    return NULL;
}

typedef struct {
    PyObject_HEAD
    ReaderCore *core;
} ReaderObject;

static int Reader_init(ReaderObject *self, PyObject *args, PyObject *kwds) {
    int fd, realtime = 0, nice = 0, engine_pid = 0;
    long long slice_ns = 0;
    if (!PyArg_ParseTuple(args, "i|iiLi", &fd, &realtime, &nice, &slice_ns, &engine_pid))
        return -1;
    if (self->core != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Reader is started once");
        return -1;
    }
    ReaderCore *r = calloc(1, sizeof(ReaderCore));
    if (r == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->fd = fd;
    r->realtime = realtime;
    r->nice = nice;
    r->slice_ns = slice_ns;
    r->engine_pid = engine_pid;
    atomic_init(&r->cpu, -1);
    atomic_init(&r->tid, 0);
    atomic_init(&r->priority, -1);
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->wake_fd < 0) {
        int err = errno;
        r->fd = -1;  /* the caller keeps the fd on failure */
        atomic_init(&r->refs, 1);
        reader_release(r);
        raise_errno(err);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);  /* the thread blocks in read() */
    if (flags >= 0 && (flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    atomic_init(&r->refs, 2);  /* this object and the thread */
    int rc = pthread_create(&r->thread, NULL, reader_main, r);
    if (rc != 0) {
        r->fd = -1;
        atomic_store(&r->refs, 1);
        reader_release(r);
        raise_errno(rc);
        return -1;
    }
    pthread_detach(r->thread);
    r->started = 1;
    self->core = r;
    return 0;
}

/* End the thread: cancelled in its read (at once, or at its next read when it is busy),
 * unless it has ended already (its id is then no longer to be used). */
static void stop_core(ReaderCore *r) {
    lock_from_python(&r->mu);
    if (r->started && !r->ended && !r->stopped) {
        r->stopped = 1;
        pthread_cancel(r->thread);
    }
    pthread_mutex_unlock(&r->mu);
}

static void Reader_dealloc(ReaderObject *self) {
    if (self->core != NULL) {
        stop_core(self->core);
        reader_release(self->core);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Reader_fileno(ReaderObject *self, PyObject *unused) {
    if (self->core == NULL) {
        PyErr_SetString(PyExc_ValueError, "Reader not started");
        return NULL;
    }
    return PyLong_FromLong(self->core->wake_fd);
}

static PyObject *Reader_get_native_id(ReaderObject *self, void *closure) {
    int tid = self->core ? atomic_load(&self->core->tid) : 0;
    if (tid == 0) Py_RETURN_NONE;
    return PyLong_FromLong(tid);
}

static PyObject *Reader_get_priority(ReaderObject *self, void *closure) {
    static const char *names[] = {"normal", "nice", "slice", "nice+slice", "realtime"};
    int got = self->core ? atomic_load(&self->core->priority) : -1;
    if (got < 0 || got > PRIORITY_REALTIME) Py_RETURN_NONE;
    return PyUnicode_FromString(names[got]);
}

static PyObject *Reader_get_cpu(ReaderObject *self, void *closure) {
    int cpu = self->core ? atomic_load(&self->core->cpu) : -1;
    if (cpu < 0) Py_RETURN_NONE;
    return PyLong_FromLong(cpu);
}

static PyGetSetDef Reader_getset[] = {
    {"cpu", (getter)Reader_get_cpu, NULL,
     "The CPU the thread has bound itself to, following its engine's; None while unbound.",
     NULL},
    {"native_id", (getter)Reader_get_native_id, NULL,
     "The reader thread's id (Linux TID, as threading's native_id); None until it runs.", NULL},
    {"priority", (getter)Reader_get_priority, NULL,
     "What the thread got: 'realtime' (SCHED_FIFO), else 'nice+slice', 'nice' or 'slice' "
     "(a lower nice value, a short time slice), else 'normal'; None until it has asked.", NULL},
    {NULL}};

static PyObject *bytes_or_none(Bytes *b, int has) {
    if (!has) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(b->data, (Py_ssize_t)b->len);
}

static PyObject *event_tuple(Event *ev) {
    switch (ev->kind) {
    case EV_DATA:
        return Py_BuildValue("(iy#d)", EV_DATA, ev->data.data, (Py_ssize_t)ev->data.len,
                             ev->stamp);
    case EV_MOVE: {
        PyObject *score = bytes_or_none(&ev->score, ev->has_score);
        PyObject *bound = bytes_or_none(&ev->bound, ev->has_bound);
        PyObject *pv = bytes_or_none(&ev->pv, ev->has_pv);
        PyObject *t = NULL;
        if (score && bound && pv)
            t = Py_BuildValue("(iy#dOOO)", EV_MOVE, ev->data.data, (Py_ssize_t)ev->data.len,
                              ev->stamp, score, bound, pv);
        Py_XDECREF(score);
        Py_XDECREF(bound);
        Py_XDECREF(pv);
        return t;
    }
    default:
        return Py_BuildValue("(iid)", EV_EOF, ev->err, ev->stamp);
    }
}

static PyObject *Reader_take(ReaderObject *self, PyObject *unused) {
    ReaderCore *r = self->core;
    if (r == NULL) return PyList_New(0);
    uint64_t count;
    ssize_t got = read(r->wake_fd, &count, sizeof count);  /* reset the wake-up */
    (void)got;
    lock_from_python(&r->mu);
    Event *ev = r->head;
    r->head = r->tail = NULL;
    pthread_mutex_unlock(&r->mu);
    PyObject *out = PyList_New(0);
    while (ev != NULL) {
        Event *next = ev->next;
        if (out != NULL) {
            PyObject *t = event_tuple(ev);
            if (t == NULL || PyList_Append(out, t) < 0) Py_CLEAR(out);
            Py_XDECREF(t);
        }
        event_free(ev);
        ev = next;
    }
    return out;
}

static PyObject *Reader_begin_move(ReaderObject *self, PyObject *args) {
    const char *pending;
    Py_ssize_t npending, nprefix = 0;
    PyObject *log = Py_None;
    const char *prefix = "";
    double t0 = 0.0;
    if (!PyArg_ParseTuple(args, "y#|Oy#d", &pending, &npending, &log, &prefix, &nprefix, &t0))
        return NULL;
    if (log != Py_None && !PyObject_TypeCheck(log, &LogFileType)) {
        PyErr_SetString(PyExc_TypeError, "log must be a LogFile or None");
        return NULL;
    }
    ReaderCore *r = self->core;
    if (r == NULL) Py_RETURN_NONE;
    LogCore *core = log == Py_None ? NULL : ((LogFileObject *)log)->core;
    if (core) atomic_fetch_add(&core->refs, 1);
    lock_from_python(&r->mu);
    LogCore *old = r->log;
    r->log = core;
    bytes_set(&r->prefix, prefix, (size_t)nprefix);
    r->t0 = t0;
    bytes_set(&r->partial, pending, (size_t)npending);
    r->has_score = r->has_bound = r->has_pv = 0;
    r->moving = 1;
    r->move_reads = 0;
    pthread_mutex_unlock(&r->mu);
    log_release(old);
    Py_RETURN_NONE;
}

static PyObject *Reader_end_move(ReaderObject *self, PyObject *unused) {
    ReaderCore *r = self->core;
    if (r == NULL) Py_RETURN_NONE;
    lock_from_python(&r->mu);
    int was = r->moving;
    r->moving = 0;
    r->partial.len = 0;
    LogCore *old = r->log;
    r->log = NULL;
    struct RelayCore *relay = r->relay;
    r->relay = NULL;
    pthread_mutex_unlock(&r->mu);
    log_release(old);
    relay_release(relay);
    return PyBool_FromLong(was);
}

static PyObject *Reader_stop(ReaderObject *self, PyObject *unused) {
    if (self->core != NULL) stop_core(self->core);
    Py_RETURN_NONE;
}

static PyMethodDef Reader_methods[] = {
    {"fileno", (PyCFunction)Reader_fileno, METH_NOARGS,
     "The eventfd the loop watches: readable when take() has events."},
    {"take", (PyCFunction)Reader_take, METH_NOARGS,
     "The events queued since the last call, in order: (0, chunk, stamp), "
     "(1, bestmove_line, stamp, score_line, bound_line, pv_line), (2, errno, stamp)."},
    {"begin_move", (PyCFunction)Reader_begin_move, METH_VARARGS,
     "begin_move(pending, log=None, prefix=b'', t0=0.0): move mode, before 'go' is written."},
    {"end_move", (PyCFunction)Reader_end_move, METH_NOARGS,
     "Back to pass mode (an abandoned move); True when it was in move mode."},
    {"stop", (PyCFunction)Reader_stop, METH_NOARGS,
     "End the thread (it closes the engine's stdout); no EOF event is queued."},
    {NULL}};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "runner.play._pipes.Reader",
    .tp_basicsize = sizeof(ReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(fd, realtime=0, nice=0, slice_ns=0, engine_pid=0): a native thread "
              "reading an engine's stdout (owns fd), at SCHED_FIFO priority realtime, else at "
              "nice with a time slice of slice_ns, where permitted (see priority); at "
              "SCHED_FIFO it follows the CPU of the engine engine_pid (see cpu).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

/* ------------------------------------------------------------------ the relay
 *
 * A Relay links the two engines of one game (their Readers and a duplicate of each one's
 * stdin). While it is armed, a move begun through it (go()) is the relay's: when the
 * reader of the side to move completes its "bestmove X" line, the reader's thread charges
 * the move (bestmove stamp - go stamp) to the side's clock (as runner.domain.timecontrol's
 * Clock does), and unless the flag fell, X is not a plain UCI move ([a-h][1-8][a-h][1-8],
 * two squares, and an optional promotion piece), the relay was disarmed or the loop has not taken the
 * last RELAY_AHEAD relayed moves yet (ack()), it appends X to the position and writes
 * "position ... moves ... X" and the other side's go line to the other engine, stamped,
 * from that same thread. Every move of the relay (relayed or not) is queued for the loop,
 * which watches the relay's timerfd: a relayed move needs nothing from the loop (the game
 * goes on below Python), so a quick one (thought less than RELAY_WAKE_DELAY) does not
 * wake the loop at once: the timer is set to fire when the oldest relayed move queued has
 * waited RELAY_WAKE_DELAY, or at once when RELAY_WAKE_MOVES relayed moves are queued, and
 * the loop takes them all in one wake. A slower move (waiting would gather no other), and
 * a move not relayed (the flag, a text that is not a plain move, the relay disarmed or too
 * far ahead: the loop must decide) set it to fire at once. take() disarms it. The loop
 * (python-chess) stays the authority on every move, and disarms the relay when it does not
 * follow it.
 * Lock order: a relay's mutex, then a reader's (a reader calls relay_move with none held).
 */

#define RELAY_AHEAD 12
/* A quick relayed move (thought in less than this) wakes the loop at most this late (the
 * live views' 200 ms budget keeps far more; the wakes per move fall as moves come faster
 * than this) ... */
#define RELAY_WAKE_DELAY_NS 15000000L
/* ... or when this many relayed moves are queued (below RELAY_AHEAD: the relay does not
 * wait for a loop checking a batch) */
#define RELAY_WAKE_MOVES 6

enum { TIMER_OFF, TIMER_LATER, TIMER_NOW };

typedef struct RelayCore {
    atomic_int refs;
    pthread_mutex_t mu;
    int wake_fd;
    Event *head, *tail;
    ReaderCore *reader[2];  /* 0 white, 1 black */
    int in_fd[2];           /* duplicates of the engines' stdin */
    LogCore *log;           /* the game's engine log (NULL: none) */
    Bytes in_prefix[2], out_prefix[2];
    double t0;
    int armed, thinking;    /* thinking: the side with a go out (-1: none) */
    int ahead;              /* moves relayed that the loop has not taken yet (ack) */
    int queued_relayed;     /* relayed moves queued since the last take() */
    int timer;              /* the wake timer: TIMER_OFF, TIMER_LATER or TIMER_NOW */
    Bytes position;         /* "position ..." and " moves ..." so far */
    int has_moves;
    int clocked;            /* a clock is kept (the time control is not infinite) */
    double remaining[2], base, inc, margin, max_elapsed[2];
    long per_moves, made[2];
    Bytes fixed_go[2];      /* len 0: the clock form */
    double go_stamp[2];
} RelayCore;

static void relay_release(RelayCore *R) {
    if (R == NULL) return;
    if (atomic_fetch_sub(&R->refs, 1) == 1) {
        Event *ev = R->head;
        while (ev != NULL) {
            Event *next = ev->next;
            event_free(ev);
            ev = next;
        }
        for (int i = 0; i < 2; i++) {
            reader_release(R->reader[i]);
            if (R->in_fd[i] >= 0) close(R->in_fd[i]);
            bytes_free(&R->in_prefix[i]);
            bytes_free(&R->out_prefix[i]);
            bytes_free(&R->fixed_go[i]);
        }
        if (R->wake_fd >= 0) close(R->wake_fd);
        bytes_free(&R->position);
        log_release(R->log);
        pthread_mutex_destroy(&R->mu);
        free(R);
    }
}

static int plain_move(const char *s, size_t n) {
    if (n != 4 && n != 5) return 0;
    if (s[0] < 'a' || s[0] > 'h' || s[1] < '1' || s[1] > '8') return 0;
    if (s[2] < 'a' || s[2] > 'h' || s[3] < '1' || s[3] > '8') return 0;
    if (s[0] == s[2] && s[1] == s[3]) return 0;  /* no move (python-chess: not a move text) */
    return n == 4 || (s[4] != 0 && strchr("qrbn", s[4]) != NULL);
}

/* The token after "bestmove" in line (NULL when there is none). */
static const char *move_token(const Bytes *line, size_t *len) {
    const char *s = line->data, *end = s + line->len;
    const char *p = s + 8;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    const char *q = p;
    while (q < end && *q != ' ' && *q != '\t' && *q != '\r') q++;
    *len = (size_t)(q - p);
    return q > p ? p : NULL;
}

static long long ms_of(double seconds) {  /* Python's round(): half to even */
    return (long long)nearbyint(seconds * 1000.0);
}

/* The go line of side (into out), as runner.play.uci.go_line makes it. */
static int relay_go_line(RelayCore *R, int side, Bytes *out) {
    if (R->fixed_go[side].len) return bytes_append(out, R->fixed_go[side].data, R->fixed_go[side].len);
    long long w = ms_of(R->remaining[0]), b = ms_of(R->remaining[1]), inc = ms_of(R->inc);
    char text[160];
    int n = snprintf(text, sizeof text, "go wtime %lld btime %lld winc %lld binc %lld",
                     w < 1 ? 1 : w, b < 1 ? 1 : b, inc, inc);
    if (R->per_moves > 0)
        n += snprintf(text + n, sizeof text - (size_t)n, " movestogo %ld",
                      R->per_moves - R->made[side] % R->per_moves);
    return bytes_append(out, text, (size_t)n);
}

/* Charge elapsed to side's clock as Clock.spend does; 0 when the flag fell. */
static int relay_spend(RelayCore *R, int side, double elapsed) {
    if (elapsed > R->max_elapsed[side]) return 0;
    if (!R->clocked) {
        R->made[side]++;
        return 1;
    }
    double left = R->remaining[side] - elapsed;
    if (left < -R->margin) return 0;
    R->remaining[side] = (left < 0.0 ? 0.0 : left) + R->inc;
    R->made[side]++;
    if (R->per_moves > 0 && R->made[side] % R->per_moves == 0) R->remaining[side] += R->base;
    return 1;
}

static void write_all(int fd, const char *data, size_t n) {
    double deadline = now_monotonic() + 1.0;
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w >= 0) {
            data += w;
            n -= (size_t)w;
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return;  /* the engine is gone: its exit is the loop's to see */
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int left = (int)((deadline - now_monotonic()) * 1000);
        if (left <= 0 || poll(&p, 1, left) < 0) return;
    }
}

/* Begin side's move: its reader in move mode for this relay, "position" + go written.
 * Under R->mu. Returns the go stamp. */
static double relay_begin_locked(RelayCore *R, int side) {
    ReaderCore *r = R->reader[side];
    pthread_mutex_lock(&r->mu);
    LogCore *old = r->log;
    r->log = R->log;
    if (r->log) atomic_fetch_add(&r->log->refs, 1);
    bytes_set(&r->prefix, R->in_prefix[side].data, R->in_prefix[side].len);
    r->t0 = R->t0;
    r->partial.len = 0;
    r->has_score = r->has_bound = r->has_pv = 0;
    RelayCore *was = r->relay;
    r->relay = R;
    atomic_fetch_add(&R->refs, 1);
    r->relay_side = side;
    r->moving = 1;
    r->move_reads = 0;
    pthread_mutex_unlock(&r->mu);
    log_release(old);
    if (was == R) atomic_fetch_sub(&R->refs, 1);  /* R itself: never the last */
    else relay_release(was);
    Bytes out = {0};
    bytes_append(&out, R->position.data, R->position.len);
    size_t go_at = out.len + 1;
    bytes_append(&out, "\n", 1);
    relay_go_line(R, side, &out);
    bytes_append(&out, "\n", 1);
    double stamp = now_monotonic();  /* before the write: the engine may read it at once */
    R->go_stamp[side] = stamp;
    R->thinking = side;
    if (out.data != NULL) {  /* logged first: the engine's answer is logged after it */
        log_line(R->log, R->t0, &R->out_prefix[side], out.data, go_at - 1, stamp);
        log_line(R->log, R->t0, &R->out_prefix[side], out.data + go_at, out.len - go_at - 1, stamp);
        write_all(R->in_fd[side], out.data, out.len);
    }
    bytes_free(&out);
    return stamp;
}

static int relay_append(RelayCore *R, const char *move, size_t n) {
    if (!R->has_moves) {
        if (bytes_append(&R->position, " moves", 6) < 0) return -1;
        R->has_moves = 1;
    }
    if (bytes_append(&R->position, " ", 1) < 0) return -1;
    return bytes_append(&R->position, move, n);
}

/* The loop's wake timer (under R->mu): off, at RELAY_WAKE_DELAY_NS from now, or at once. */
static void relay_timer_locked(RelayCore *R, int when) {
    struct itimerspec at = {0};
    if (when == TIMER_LATER) at.it_value.tv_nsec = RELAY_WAKE_DELAY_NS;
    else if (when == TIMER_NOW) at.it_value.tv_nsec = 1;
    R->timer = when;
    timerfd_settime(R->wake_fd, 0, &at, NULL);  /* also clears the expirations not read */
}

/* A reader's thread: the move of side (ev) has come. Queues it for the loop, relayed to
 * the other side when it may be. Consumes ev and the reader's reference to R. */
static void relay_move(RelayCore *R, int side, Event *ev) {
    pthread_mutex_lock(&R->mu);
    if (R->thinking == side) R->thinking = -1;
    ev->side = side;
    ev->go_stamp = R->go_stamp[side];
    size_t n;
    const char *move = move_token(&ev->data, &n);
    if (R->armed && R->ahead < RELAY_AHEAD && move != NULL && plain_move(move, n)
            && relay_spend(R, side, ev->stamp - R->go_stamp[side])
            && relay_append(R, move, n) == 0) {
        R->ahead++;  /* the loop is at most RELAY_AHEAD moves behind the relay */
        ev->relayed = 1;
        ev->next_go = relay_begin_locked(R, 1 - side);
    }
    ev->next = NULL;
    if (R->tail) R->tail->next = ev;
    else R->head = ev;
    R->tail = ev;
    /* a move thought over RELAY_WAKE_DELAY: the next is not likely sooner, no waiting */
    int quick = ev->stamp - ev->go_stamp < RELAY_WAKE_DELAY_NS / 1e9;
    if (ev->relayed && quick && ++R->queued_relayed < RELAY_WAKE_MOVES) {
        if (R->timer == TIMER_OFF) relay_timer_locked(R, TIMER_LATER);
    } else if (R->timer != TIMER_NOW) {
        relay_timer_locked(R, TIMER_NOW);
    }
    pthread_mutex_unlock(&R->mu);
    relay_release(R);
}

/* ---- the relay's moves as the loop gets them: each one made here, as the referee takes it
 *
 * The move's text and ponder (the bestmove line's second and fourth words, split as Python's
 * str.split splits them), the search's info as runner.play.uci.parse_info reads the line
 * (its score a chess.engine.PovScore of the side that moved), the PV's plain moves and, for
 * a relayed move (its text checked plain here), its chess.Move: the objects python-chess
 * would make, made without a line of Python per move (the Move made once, :func:`move_of`;
 * so are a plain move's text, :func:`ascii_word`, and a score, :func:`pov_score`: none of
 * them ever changes).
 * The referee takes a relayed move's Move as it is: no PlayResult is made for it. */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

typedef struct { const char *p; size_t n; } Token;

/* Python's str.split() whitespace among the ASCII characters (is_space's, \x1c to \x1f) */
static int py_space(char c) { return is_space(c) || (c >= 0x1c && c <= 0x1f); }

/* The first (at most) ``most`` words of s, split at ``space``. */
static size_t tokenize(const char *s, size_t n, Token *out, size_t most, int (*space)(char)) {
    size_t k = 0, i = 0;
    while (i < n && k < most) {
        while (i < n && space(s[i])) i++;
        if (i >= n) break;
        size_t j = i;
        while (j < n && !space(s[j])) j++;
        out[k].p = s + i;
        out[k].n = j - i;
        k++;
        i = j;
    }
    return k;
}

static int token_is(Token t, const char *word) {
    size_t m = strlen(word);
    return t.n == m && memcmp(t.p, word, m) == 0;
}

/* int(token) for the plain form (sign, ASCII digits); NULL with no error when it is not. */
static PyObject *token_int(Token t) {
    size_t i = (t.n && (t.p[0] == '-' || t.p[0] == '+')) ? 1 : 0;
    if (i >= t.n || t.n > 60) return NULL;
    long long small = 0;
    for (size_t j = i; j < t.n; j++) {
        if (t.p[j] < '0' || t.p[j] > '9') return NULL;
        if (j - i < 18) small = small * 10 + (t.p[j] - '0');  /* 18 digits fit a long long */
    }
    if (t.n - i <= 18) return PyLong_FromLongLong(t.p[0] == '-' ? -small : small);
    char text[64];
    memcpy(text, t.p, t.n);
    text[t.n] = 0;
    return PyLong_FromString(text, NULL, 10);
}

static int utf8_ok(const Bytes *b) {
    for (size_t i = 0; i < b->len; i++) {
        if ((unsigned char)b->data[i] >= 0x80) {
            PyObject *u = PyUnicode_DecodeUTF8(b->data, (Py_ssize_t)b->len, "strict");
            if (u == NULL) {
                PyErr_Clear();
                return 0;
            }
            Py_DECREF(u);
            return 1;
        }
    }
    return 1;
}

/* What a move is made of, from python-chess and interned keys: loaded at the first move. */
static struct {
    int loaded;
    PyObject *cp, *mate, *pov_score, *move;  /* the classes */
    PyObject *int_keys[8], *time, *score, *lowerbound, *upperbound;
} py;

static const char *INT_KEYS[] = {"depth", "seldepth", "nodes", "nps", "tbhits", "hashfull",
                                 "multipv", NULL};

static PyObject *attr_of(const char *module, const char *name) {
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL) return NULL;
    PyObject *v = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    return v;
}

static int load_py(void) {
    if (py.loaded) return 0;
    if ((py.cp = attr_of("chess.engine", "Cp")) == NULL
            || (py.mate = attr_of("chess.engine", "Mate")) == NULL
            || (py.pov_score = attr_of("chess.engine", "PovScore")) == NULL
            || (py.move = attr_of("chess", "Move")) == NULL)
        return -1;
    for (int k = 0; INT_KEYS[k]; k++)
        if ((py.int_keys[k] = PyUnicode_InternFromString(INT_KEYS[k])) == NULL) return -1;
    if ((py.time = PyUnicode_InternFromString("time")) == NULL
            || (py.score = PyUnicode_InternFromString("score")) == NULL
            || (py.lowerbound = PyUnicode_InternFromString("lowerbound")) == NULL
            || (py.upperbound = PyUnicode_InternFromString("upperbound")) == NULL)
        return -1;
    py.loaded = 1;
    return 0;
}

static int set_item(PyObject *d, PyObject *key, PyObject *v) {
    if (v == NULL) return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* Scores made once per process and value: python-chess never changes a Score or PovScore (nor
 * does the runner), so, as the Moves (:func:`move_of`), one PovScore per (Cp or Mate, value,
 * side) with |value| < SCORES_MADE is made at its first use and handed out again; one of a
 * larger value is made each time. */
#define SCORES_MADE 2048
static PyObject *scores_made[2][2][2 * SCORES_MADE];  /* [mate][black][value + SCORES_MADE] */

/* chess.engine.PovScore(Cp(value) or Mate(value), turn) (steals value). */
static PyObject *pov_score(int kind, PyObject *value, PyObject *turn) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    PyObject **slot = NULL;
    if (!overflow && v > -SCORES_MADE && v < SCORES_MADE)
        slot = &scores_made[kind == 2][turn == Py_False][v + SCORES_MADE];
    else if (v == -1 && PyErr_Occurred())
        PyErr_Clear();  /* an int too large for the table: made as it comes */
    if (slot != NULL && *slot != NULL) {
        Py_DECREF(value);
        return Py_NewRef(*slot);
    }
    PyObject *score = PyObject_CallOneArg(kind == 1 ? py.cp : py.mate, value);
    Py_DECREF(value);
    if (score == NULL) return NULL;
    PyObject *args[] = {score, turn};
    PyObject *pov = PyObject_Vectorcall(py.pov_score, args, 2, NULL);
    Py_DECREF(score);
    /* kept unless another thread's take made it meanwhile (the calls ran Python) */
    if (pov != NULL && slot != NULL && *slot == NULL) *slot = Py_NewRef(pov);
    return pov;
}

#define MAX_TOKENS 512

/* runner.play.uci.parse_info of one line (its score a PovScore of turn): the dict (new
 * reference) or NULL on an error. */
static PyObject *parse_info_c(const Bytes *line, PyObject *turn) {
    PyObject *info = PyDict_New();
    if (info == NULL || line->len == 0 || !utf8_ok(line)) return info;
    Token tok[MAX_TOKENS];
    size_t n = tokenize(line->data, line->len, tok, MAX_TOKENS, is_space), i = 1;
    while (i < n) {
        Token key = tok[i];
        if (token_is(key, "pv") || token_is(key, "string")) break;
        int int_key = -1;
        for (int k = 0; INT_KEYS[k]; k++) if (token_is(key, INT_KEYS[k])) int_key = k;
        if (int_key >= 0 && i + 1 < n) {
            PyObject *v = token_int(tok[i + 1]);
            if (v != NULL && set_item(info, py.int_keys[int_key], v) < 0) goto fail;
            i += 2;
        } else if (token_is(key, "time") && i + 1 < n) {
            PyObject *v = token_int(tok[i + 1]);
            if (v != NULL) {
                double ms = PyLong_AsDouble(v);
                Py_DECREF(v);
                if (set_item(info, py.time, PyFloat_FromDouble(ms / 1000)) < 0) goto fail;
            }
            i += 2;
        } else if (token_is(key, "score") && i + 2 < n) {
            int k = token_is(tok[i + 1], "cp") ? 1 : token_is(tok[i + 1], "mate") ? 2 : 0;
            PyObject *v = k ? token_int(tok[i + 2]) : NULL;
            if (v != NULL && set_item(info, py.score, pov_score(k, v, turn)) < 0) goto fail;
            i += 3;
            if (i < n && (token_is(tok[i], "lowerbound") || token_is(tok[i], "upperbound"))) {
                if (set_item(info, token_is(tok[i], "lowerbound") ? py.lowerbound : py.upperbound,
                             Py_NewRef(Py_True)) < 0) goto fail;
                i++;
            }
        } else {
            i++;
        }
    }
    return info;
fail:
    Py_DECREF(info);
    return NULL;
}

/* The slot of a plain move text ([a-h][1-8][a-h][1-8], two squares, an optional promotion
 * piece) in a table of 64 * 64 * 5 (from, to, promotion or none). */
static size_t move_slot(const char *m, size_t n) {
    int piece = n == 5 ? (m[4] == 'n' ? 2 : m[4] == 'b' ? 3 : m[4] == 'r' ? 4 : 5) : 0;
    int from = (m[0] - 'a') + 8 * (m[1] - '1'), to = (m[2] - 'a') + 8 * (m[3] - '1');
    return (size_t)((from * 64 + to) * 5 + (piece ? piece - 1 : 0));
}

/* One str per plain move text, made at its first use and handed out again (a str never
 * changes); another ASCII token is made each time. New reference. */
static PyObject *texts_made[64 * 64 * 5];

static PyObject *ascii_word(const char *p, size_t n) {
    if (!plain_move(p, n)) return PyUnicode_DecodeASCII(p, (Py_ssize_t)n, "strict");
    PyObject **slot = &texts_made[move_slot(p, n)];
    if (*slot == NULL && (*slot = PyUnicode_DecodeASCII(p, (Py_ssize_t)n, "strict")) == NULL)
        return NULL;
    return Py_NewRef(*slot);
}

/* runner.play.referee._pv of a UCI line: the plain moves right after the first "pv". */
static PyObject *pv_moves(const Bytes *line) {
    if (!utf8_ok(line)) Py_RETURN_NONE;
    Token tok[MAX_TOKENS];
    size_t n = tokenize(line->data, line->len, tok, MAX_TOKENS, is_space), i = 0;
    while (i < n && !token_is(tok[i], "pv")) i++;
    size_t first = ++i;
    while (i < n && plain_move(tok[i].p, tok[i].n)) i++;
    PyObject *pv = PyTuple_New((Py_ssize_t)(i > first ? i - first : 0));
    for (size_t j = first; pv != NULL && j < i; j++) {
        PyObject *s = ascii_word(tok[j].p, tok[j].n);  /* a plain move */
        if (s == NULL) Py_CLEAR(pv);
        else PyTuple_SET_ITEM(pv, (Py_ssize_t)(j - first), s);
    }
    return pv;
}

/* move_words of an ASCII line: 1 when done, 0 when the line is not ASCII. */
static int ascii_move_words(const Bytes *line, PyObject **text, PyObject **ponder) {
    const char *s = line->data ? line->data : "";
    for (size_t j = 0; j < line->len; j++)
        if ((unsigned char)s[j] >= 0x80) return 0;
    Token tok[4];
    size_t k = tokenize(s, line->len, tok, 4, py_space);
    *text = k > 1 ? ascii_word(tok[1].p, tok[1].n) : Py_NewRef(Py_None);
    *ponder = k > 3 && token_is(tok[2], "ponder") ? ascii_word(tok[3].p, tok[3].n)
                                                   : Py_NewRef(Py_None);
    return 1;
}

/* The bestmove line's words 1 and 3 (when word 2 is "ponder"), as runner.play.uci reads
 * them: line.decode("utf-8", errors="replace").split(). New references (None: no word). */
static int move_words(const Bytes *line, PyObject **text, PyObject **ponder) {
    *text = *ponder = NULL;
    if (ascii_move_words(line, text, ponder)) {
        if (*text != NULL && *ponder != NULL) return 0;
        Py_CLEAR(*text);
        Py_CLEAR(*ponder);
        return -1;
    }
    PyObject *s = PyUnicode_DecodeUTF8(line->data ? line->data : "", (Py_ssize_t)line->len,
                                       "replace");
    if (s == NULL) return -1;
    PyObject *words = PyUnicode_Split(s, NULL, 4);
    Py_DECREF(s);
    if (words == NULL) return -1;
    Py_ssize_t n = PyList_GET_SIZE(words);
    *text = Py_NewRef(n > 1 ? PyList_GET_ITEM(words, 1) : Py_None);
    int ponders = n > 3 && PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(words, 2),
                                                            "ponder") == 0;
    *ponder = Py_NewRef(ponders ? PyList_GET_ITEM(words, 3) : Py_None);
    Py_DECREF(words);
    return 0;
}

/* chess.Move.from_uci(text) of a relayed move (its text plain: [a-h][1-8][a-h][1-8], two
 * squares, an optional promotion piece): new reference. python-chess never changes a Move
 * (nor does the runner), so one Move per (from, to, promotion) is made at its first use and
 * handed out again, as python-chess's own tables of squares are (at most 64 * 64 * 5). */
static PyObject *moves_made[64 * 64 * 5];

static PyObject *move_of(const Bytes *line) {
    size_t n;
    const char *m = move_token(line, &n);
    if (m == NULL || !plain_move(m, n)) Py_RETURN_NONE;
    int piece = n == 5 ? (m[4] == 'n' ? 2 : m[4] == 'b' ? 3 : m[4] == 'r' ? 4 : 5) : 0;
    int from = (m[0] - 'a') + 8 * (m[1] - '1'), to = (m[2] - 'a') + 8 * (m[3] - '1');
    PyObject **slot = &moves_made[move_slot(m, n)];
    if (*slot != NULL) return Py_NewRef(*slot);
    PyObject *from_ = PyLong_FromLong(from), *to_ = PyLong_FromLong(to);
    PyObject *promotion = piece ? PyLong_FromLong(piece) : Py_NewRef(Py_None);
    PyObject *move = NULL;
    if (from_ != NULL && to_ != NULL && promotion != NULL) {
        PyObject *args[] = {from_, to_, promotion};
        move = PyObject_Vectorcall(py.move, args, 3, NULL);
    }
    Py_XDECREF(from_);
    Py_XDECREF(to_);
    Py_XDECREF(promotion);
    if (move != NULL && *slot == NULL) *slot = Py_NewRef(move);  /* (as pov_score's) */
    return move;
}

/* (side, text, ponder, stamp, go stamp, relayed, next go stamp, info, PV moves or None,
 * what followed, chess.Move of a relayed move or None) */
static PyObject *relay_event_tuple(Event *ev) {
    if (load_py() < 0) return NULL;
    PyObject *turn = ev->side == 0 ? Py_True : Py_False;
    const Bytes *scored = ev->has_score ? &ev->score : ev->has_bound ? &ev->bound : NULL;
    Bytes none = {0};
    PyObject *text, *ponder;
    if (move_words(&ev->data, &text, &ponder) < 0) return NULL;
    PyObject *info = parse_info_c(scored ? scored : &none, turn);
    PyObject *pv = ev->has_pv ? pv_moves(&ev->pv) : Py_NewRef(Py_None);
    PyObject *played = info == NULL ? NULL : ev->relayed ? move_of(&ev->data)
                                                         : Py_NewRef(Py_None);
    PyObject *t = info != NULL && pv != NULL && played != NULL ? PyTuple_New(11) : NULL;
    if (t == NULL) {
        Py_DECREF(text);
        Py_DECREF(ponder);
        Py_XDECREF(info);
        Py_XDECREF(pv);
        Py_XDECREF(played);
        return NULL;
    }
    PyObject *items[11] = {
        PyLong_FromLong(ev->side), text, ponder, PyFloat_FromDouble(ev->stamp),
        PyFloat_FromDouble(ev->go_stamp), PyLong_FromLong(ev->relayed),
        PyFloat_FromDouble(ev->next_go), info, pv,
        PyBytes_FromStringAndSize(ev->rest.data ? ev->rest.data : "", (Py_ssize_t)ev->rest.len),
        played};
    for (int i = 0; i < 11; i++) {  /* each item's reference goes to the tuple, or is dropped */
        if (items[i] == NULL) Py_CLEAR(t);
        else if (t != NULL) PyTuple_SET_ITEM(t, i, items[i]);
        else Py_DECREF(items[i]);
    }
    return t;
}

/* ---- the Python type */

typedef struct {
    PyObject_HEAD
    RelayCore *core;
} RelayObject;


static int Relay_init(RelayObject *self, PyObject *args, PyObject *kwds) {
    PyObject *w, *b;
    int wfd, bfd;
    if (!PyArg_ParseTuple(args, "O!O!ii", &ReaderType, &w, &ReaderType, &b, &wfd, &bfd))
        return -1;
    ReaderCore *rw = ((ReaderObject *)w)->core, *rb = ((ReaderObject *)b)->core;
    if (self->core != NULL || rw == NULL || rb == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Relay links two started Readers, once");
        return -1;
    }
    RelayCore *R = calloc(1, sizeof(RelayCore));
    if (R == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    atomic_init(&R->refs, 1);
    pthread_mutex_init(&R->mu, NULL);
    R->thinking = -1;
    R->in_fd[0] = R->in_fd[1] = -1;
    R->reader[0] = rw;
    R->reader[1] = rb;
    atomic_fetch_add(&rw->refs, 1);
    atomic_fetch_add(&rb->refs, 1);
    R->wake_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    R->in_fd[0] = fcntl(wfd, F_DUPFD_CLOEXEC, 3);
    R->in_fd[1] = fcntl(bfd, F_DUPFD_CLOEXEC, 3);
    if (R->wake_fd < 0 || R->in_fd[0] < 0 || R->in_fd[1] < 0) {
        int err = errno;
        relay_release(R);
        raise_errno(err);
        return -1;
    }
    self->core = R;
    return 0;
}

static void relay_unlink(RelayCore *R) {
    for (int i = 0; i < 2; i++) {
        ReaderCore *r = R->reader[i];
        pthread_mutex_lock(&r->mu);
        int linked = r->relay == R;
        if (linked) {
            r->relay = NULL;
            r->moving = 0;
            r->partial.len = 0;
        }
        pthread_mutex_unlock(&r->mu);
        if (linked) atomic_fetch_sub(&R->refs, 1);  /* the caller's keeps it */
    }
}

static void Relay_dealloc(RelayObject *self) {
    if (self->core != NULL) {
        relay_unlink(self->core);
        relay_release(self->core);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static RelayCore *relay_of(RelayObject *self) {
    if (self->core == NULL) PyErr_SetString(PyExc_ValueError, "Relay not made");
    return self->core;
}

static int prefix_arg(PyObject *seq, Bytes *out) {
    for (int i = 0; i < 2; i++) {
        PyObject *item = PyTuple_GetItem(seq, i);
        if (item == NULL || !PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "a pair of bytes expected");
            return -1;
        }
        bytes_set(&out[i], PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item));
    }
    return 0;
}

static PyObject *Relay_arm(RelayObject *self, PyObject *args) {
    const char *pos;
    Py_ssize_t npos;
    PyObject *fixed, *log, *in_prefix, *out_prefix;
    double base, inc, margin, max_w, max_b, t0;
    long per_moves;
    int clocked;
    if (!PyArg_ParseTuple(args, "y#pdddlO!ddOO!O!d", &pos, &npos, &clocked, &base, &inc, &margin,
                          &per_moves, &PyTuple_Type, &fixed, &max_w, &max_b, &log,
                          &PyTuple_Type, &in_prefix, &PyTuple_Type, &out_prefix, &t0))
        return NULL;
    if (log != Py_None && !PyObject_TypeCheck(log, &LogFileType)) {
        PyErr_SetString(PyExc_TypeError, "log must be a LogFile or None");
        return NULL;
    }
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    lock_from_python(&R->mu);
    bytes_set(&R->position, pos, (size_t)npos);
    R->has_moves = memmem(pos, (size_t)npos, " moves", 6) != NULL;
    R->clocked = clocked;
    R->base = base;
    R->inc = inc;
    R->margin = margin;
    R->per_moves = per_moves;
    R->max_elapsed[0] = max_w;
    R->max_elapsed[1] = max_b;
    LogCore *old = R->log;
    R->log = log == Py_None ? NULL : ((LogFileObject *)log)->core;
    if (R->log) atomic_fetch_add(&R->log->refs, 1);
    R->t0 = t0;
    int bad = prefix_arg(fixed, R->fixed_go) < 0 || prefix_arg(in_prefix, R->in_prefix) < 0
              || prefix_arg(out_prefix, R->out_prefix) < 0;
    R->armed = !bad;
    pthread_mutex_unlock(&R->mu);
    log_release(old);
    if (bad) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Relay_go(RelayObject *self, PyObject *args) {
    int side;
    const char *move = NULL;
    Py_ssize_t nmove = 0;
    double w, b;
    long wm, bm;
    if (!PyArg_ParseTuple(args, "iz#ddll", &side, &move, &nmove, &w, &b, &wm, &bm)) return NULL;
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    if (side != 0 && side != 1) {
        PyErr_SetString(PyExc_ValueError, "side is 0 (white) or 1 (black)");
        return NULL;
    }
    lock_from_python(&R->mu);
    if (!R->armed || R->thinking >= 0) {
        pthread_mutex_unlock(&R->mu);
        PyErr_SetString(PyExc_RuntimeError, "the relay is disarmed or a move is on");
        return NULL;
    }
    if (move != NULL) relay_append(R, move, (size_t)nmove);
    R->remaining[0] = w;
    R->remaining[1] = b;
    R->made[0] = wm;
    R->made[1] = bm;
    R->ahead = 0;
    double stamp = relay_begin_locked(R, side);
    pthread_mutex_unlock(&R->mu);
    return PyFloat_FromDouble(stamp);
}

static PyObject *Relay_ack(RelayObject *self, PyObject *unused) {
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    lock_from_python(&R->mu);
    if (R->ahead > 0) R->ahead--;
    pthread_mutex_unlock(&R->mu);
    Py_RETURN_NONE;
}

static PyObject *Relay_disarm(RelayObject *self, PyObject *unused) {
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    lock_from_python(&R->mu);
    R->armed = 0;
    int thinking = R->thinking;
    pthread_mutex_unlock(&R->mu);
    return PyLong_FromLong(thinking);
}

static PyObject *Relay_close(RelayObject *self, PyObject *unused) {
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    lock_from_python(&R->mu);
    R->armed = 0;
    R->thinking = -1;
    for (int i = 0; i < 2; i++) {  /* an engine's stdin is the runner's alone again */
        if (R->in_fd[i] >= 0) close(R->in_fd[i]);
        R->in_fd[i] = -1;
    }
    pthread_mutex_unlock(&R->mu);
    relay_unlink(R);
    Py_RETURN_NONE;
}

static PyObject *Relay_fileno(RelayObject *self, PyObject *unused) {
    RelayCore *R = relay_of(self);
    return R == NULL ? NULL : PyLong_FromLong(R->wake_fd);
}

static PyObject *Relay_take(RelayObject *self, PyObject *unused) {
    RelayCore *R = relay_of(self);
    if (R == NULL) return NULL;
    lock_from_python(&R->mu);
    Event *ev = R->head;
    R->head = R->tail = NULL;
    R->queued_relayed = 0;
    if (R->timer != TIMER_OFF) relay_timer_locked(R, TIMER_OFF);  /* nothing queued: no wake */
    pthread_mutex_unlock(&R->mu);
    PyObject *out = PyList_New(0);
    while (ev != NULL) {
        Event *next = ev->next;
        if (out != NULL) {
            PyObject *t = relay_event_tuple(ev);
            if (t == NULL || PyList_Append(out, t) < 0) Py_CLEAR(out);
            Py_XDECREF(t);
        }
        event_free(ev);
        ev = next;
    }
    return out;
}

static PyMethodDef Relay_methods[] = {
    {"arm", (PyCFunction)Relay_arm, METH_VARARGS,
     "arm(position, clocked, base, inc, margin, per_moves, (white_go, black_go), "
     "max_white, max_black, log, (white_in, black_in), (white_out, black_out), t0): "
     "the game's state; a fixed go line per side (b'': the clock form)."},
    {"go", (PyCFunction)Relay_go, METH_VARARGS,
     "go(side, move_or_None, white_left, black_left, white_made, black_made): append the "
     "move, set the clocks and start side's move (position + go written); the go stamp."},
    {"ack", (PyCFunction)Relay_ack, METH_NOARGS, "The loop took a relayed move (at most RELAY_AHEAD are relayed ahead)."},
    {"disarm", (PyCFunction)Relay_disarm, METH_NOARGS,
     "Relay no more; the side that has a go out and no bestmove back yet (-1: none)."},
    {"close", (PyCFunction)Relay_close, METH_NOARGS,
     "Disarm and unlink the readers (a move still on becomes theirs in pass mode)."},
    {"fileno", (PyCFunction)Relay_fileno, METH_NOARGS, "The timerfd the loop watches: readable when take() has moves for it."},
    {"take", (PyCFunction)Relay_take, METH_NOARGS,
     "The moves queued since the last call: (side, text, ponder, stamp, go_stamp, relayed, "
     "next_go, info, pv_moves_or_None, rest, move_or_None); the wake timer disarmed."},
    {NULL}};

static PyTypeObject RelayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "runner.play._pipes.Relay",
    .tp_basicsize = sizeof(RelayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Relay(white_reader, black_reader, white_stdin, black_stdin): one game's move relay.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Relay_init,
    .tp_dealloc = (destructor)Relay_dealloc,
    .tp_methods = Relay_methods,
};

static PyObject *pipes_monotonic(PyObject *mod, PyObject *unused) {
    return PyFloat_FromDouble(now_monotonic());
}

static PyMethodDef module_methods[] = {
    {"monotonic", pipes_monotonic, METH_NOARGS, "CLOCK_MONOTONIC in seconds (the readers' clock)."},
    {NULL}};

/* What Python sees of this module (its types' methods, what they take and hand over):
 * bumped with every change to it, and equal to runner.play.pipes.INTERFACE, which refuses a
 * module built from other source (a checkout updated without a rebuild). */
#define PIPES_INTERFACE 2

static struct PyModuleDef pipes_module = {
    PyModuleDef_HEAD_INIT, "runner.play._pipes",
    "An engine's stdout read, split and time-stamped on a native thread.", -1, module_methods};

PyMODINIT_FUNC PyInit__pipes(void) {
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&LogFileType) < 0
            || PyType_Ready(&RelayType) < 0) return NULL;
    PyObject *m = PyModule_Create(&pipes_module);
    if (m == NULL) return NULL;
    Py_INCREF(&ReaderType);
    Py_INCREF(&LogFileType);
    Py_INCREF(&RelayType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0
            || PyModule_AddObject(m, "LogFile", (PyObject *)&LogFileType) < 0
            || PyModule_AddObject(m, "Relay", (PyObject *)&RelayType) < 0
            || PyModule_AddIntConstant(m, "INTERFACE", PIPES_INTERFACE) < 0
            || PyModule_AddIntConstant(m, "DATA", EV_DATA) < 0
            || PyModule_AddIntConstant(m, "MOVE", EV_MOVE) < 0
            || PyModule_AddIntConstant(m, "EOF", EV_EOF) < 0
            || PyModule_AddIntConstant(m, "RELAY_AHEAD", RELAY_AHEAD) < 0
            || PyModule_AddIntConstant(m, "RELAY_WAKE_MOVES", RELAY_WAKE_MOVES) < 0
            || PyModule_AddObject(m, "RELAY_WAKE_DELAY",
                                  PyFloat_FromDouble(RELAY_WAKE_DELAY_NS / 1e9)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
