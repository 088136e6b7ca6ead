/* runner.play._pipes: an engine's stdout read, split and time-stamped below Python.
 *
 * One native thread per engine (a Reader) polls the engine's stdout and a stop eventfd,
 * read()s with the GIL never taken, and stamps CLOCK_MONOTONIC (the clock of Python's
 * time.monotonic() on Linux) the moment each read returns. It never touches a Python
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
 *   engine's stdout, which it owns). stop() ends it at once.
 *
 * Priority (Reader(fd, realtime, nice, slice_ns), chosen by runner.play.pipes): first
 * thing, the thread asks for SCHED_FIFO at priority `realtime` (> 0), else for the nice
 * value `nice` (< 0) and a time slice of `slice_ns` (Linux 6.12+), else for the slice
 * alone, for itself only (never inherited: SCHED_RESET_ON_FORK); what the kernel refuses
 * it goes without, silently. The thread only blocks in poll() and read() and spends
 * microseconds per read: what the priority buys is that the read of a bestmove, and so its
 * stamp, does not wait for a core behind engines or the event loop. `native_id` and
 * `priority` say which thread it is and what it got.
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
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

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
} Event;

typedef struct {
    atomic_int refs;
    pthread_mutex_t mu;
    int fd;        /* the engine's stdout, the thread's to read and close */
    int wake_fd;   /* eventfd: the thread tells the loop */
    int stop_fd;   /* eventfd: the loop tells the thread */
    Event *head, *tail;
    int moving;    /* move mode */
    Bytes partial; /* move mode: the start of a line not complete yet */
    Bytes score, bound, pv;
    int has_score, has_bound, has_pv;
    LogCore *log;  /* move mode: where its lines go (NULL: nowhere) */
    Bytes prefix;  /* " <who> < " */
    double t0;     /* the log's time origin */
    int ended;     /* the thread has queued its EOF */
    pthread_t thread;
    int started;
    int realtime, nice;  /* the priority asked for (0: none) */
    long long slice_ns;  /* the time slice asked for where not realtime (0: the default) */
    atomic_int tid;      /* the thread's id, once it runs (0 before) */
    atomic_int priority; /* what it got: PRIORITY_* (-1 before it asked) */
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
        if (r->stop_fd >= 0) close(r->stop_fd);
        if (r->fd >= 0) close(r->fd);
        bytes_free(&r->partial);
        bytes_free(&r->score);
        bytes_free(&r->bound);
        bytes_free(&r->pv);
        bytes_free(&r->prefix);
        log_release(r->log);
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

static int contains(const char *s, size_t n, const char *needle) {
    size_t m = strlen(needle);
    if (m > n) return 0;
    return memmem(s, n, needle, m) != NULL;
}

static void log_line_locked(ReaderCore *r, const char *line, size_t n, double stamp) {
    LogCore *log = r->log;
    if (log == NULL) return;
    char head[64];
    int h = snprintf(head, sizeof head, "%+12.3f", (stamp - r->t0) * 1000.0);
    pthread_mutex_lock(&log->mu);
    if (log->fd >= 0 && !log->failed) {
        log_put_locked(log, head, (size_t)h);
        log_put_locked(log, r->prefix.data, r->prefix.len);
        log_put_locked(log, line, n);
        log_put_locked(log, "\n", 1);
    }
    pthread_mutex_unlock(&log->mu);
}

/* One complete line (without its newline) in move mode. Returns 1 when it is the move. */
static int move_line_locked(ReaderCore *r, const char *line, size_t n, double stamp) {
    if (n && line[n - 1] == '\r') n--;
    log_line_locked(r, line, n, stamp);
    if (n >= 5 && memcmp(line, "info ", 5) == 0) {
        int has_score = contains(line, n, " score ");
        int has_pv = contains(line, n, " pv ");
        if (!has_score && !has_pv) return 0;
        if (contains(line, n, " multipv ") && !contains(line, n, " multipv 1 ")) return 0;
        if (has_score) {
            if (contains(line, n, " lowerbound") || contains(line, n, " upperbound")) {
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
        enqueue_locked(r, ev);
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
            int was_empty = r->head == r->tail;  /* the move is the only event queued */
            r->moving = 0;
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

static void *reader_main(void *arg) {
    ReaderCore *r = arg;
    pthread_setname_np(pthread_self(), "engine-reader");
    atomic_store(&r->tid, (int)syscall(SYS_gettid));
    atomic_store(&r->priority, raise_priority(r->realtime, r->nice, r->slice_ns));
    char *buf = malloc(READ_SIZE);
    struct pollfd fds[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->stop_fd, .events = POLLIN}};
    int err = 0;
    for (;;) {
        if (buf == NULL) { err = ENOMEM; break; }
        int p = poll(fds, 2, -1);
        if (p < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (fds[1].revents) { err = -1; break; }  /* stopped */
        if (!fds[0].revents) continue;
        ssize_t n = read(r->fd, buf, READ_SIZE);
        double stamp = now_monotonic();
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            err = errno;
            break;
        }
        if (n == 0) break;
        pthread_mutex_lock(&r->mu);
        int must_wake = r->moving ? move_chunk_locked(r, buf, (size_t)n, stamp)
                                  : queue_data_locked(r, buf, (size_t)n, stamp);
        pthread_mutex_unlock(&r->mu);
        if (must_wake) wake(r);
    }
    free(buf);
    pthread_mutex_lock(&r->mu);
    close(r->fd);
    r->fd = -1;
    r->ended = 1;
    int must_wake = 0;
    if (err != -1) {
        Event *ev = new_event(EV_EOF, now_monotonic());
        if (ev != NULL) {
            ev->err = err;
            must_wake = enqueue_locked(r, ev);
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (must_wake) wake(r);
    reader_release(r);
    return NULL;
}

typedef struct {
    PyObject_HEAD
    ReaderCore *core;
} ReaderObject;

static int Reader_init(ReaderObject *self, PyObject *args, PyObject *kwds) {
    int fd, realtime = 0, nice = 0;
    long long slice_ns = 0;
    if (!PyArg_ParseTuple(args, "i|iiL", &fd, &realtime, &nice, &slice_ns)) return -1;
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
    atomic_init(&r->tid, 0);
    atomic_init(&r->priority, -1);
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->wake_fd < 0 || r->stop_fd < 0) {
        int err = errno;
        r->fd = -1;  /* the caller keeps the fd on failure */
        atomic_init(&r->refs, 1);
        reader_release(r);
        raise_errno(err);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
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

static void stop_core(ReaderCore *r) {
    uint64_t one = 1;
    ssize_t w;
    do {
        w = write(r->stop_fd, &one, sizeof one);
    } while (w < 0 && errno == EINTR);
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

static PyGetSetDef Reader_getset[] = {
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
    pthread_mutex_unlock(&r->mu);
    log_release(old);
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
    .tp_doc = "Reader(fd, realtime=0, nice=0, slice_ns=0): a native thread reading an "
              "engine's stdout (owns fd), at SCHED_FIFO priority realtime, else at nice "
              "with a time slice of slice_ns, where permitted (see priority).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

static PyObject *pipes_monotonic(PyObject *mod, PyObject *unused) {
    return PyFloat_FromDouble(now_monotonic());
}

static PyMethodDef module_methods[] = {
    {"monotonic", pipes_monotonic, METH_NOARGS, "CLOCK_MONOTONIC in seconds (the readers' clock)."},
    {NULL}};

static struct PyModuleDef pipes_module = {
    PyModuleDef_HEAD_INIT, "runner.play._pipes",
    "An engine's stdout read, split and time-stamped on a native thread.", -1, module_methods};

PyMODINIT_FUNC PyInit__pipes(void) {
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&LogFileType) < 0) return NULL;
    PyObject *m = PyModule_Create(&pipes_module);
    if (m == NULL) return NULL;
    Py_INCREF(&ReaderType);
    Py_INCREF(&LogFileType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0
            || PyModule_AddObject(m, "LogFile", (PyObject *)&LogFileType) < 0
            || PyModule_AddIntConstant(m, "DATA", EV_DATA) < 0
            || PyModule_AddIntConstant(m, "MOVE", EV_MOVE) < 0
            || PyModule_AddIntConstant(m, "EOF", EV_EOF) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
