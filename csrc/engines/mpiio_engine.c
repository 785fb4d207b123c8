/* MPI-IO engine: independent read_at/write_at, collective read_at_all/write_at_all of a whole
 * batch of (offset, length) ranges in one call through a file view, and of one contiguous range
 * at an explicit offset without a view. */
#define _GNU_SOURCE
#include "dm.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DM_MPI_CHUNK ((int64_t)1 << 30)   /* largest count given to one MPI call */

static void mpi_err(dm_err *e, int rc, const char *what, const dm_mpiio *h, int64_t off) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    s[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = 0;
    if (off >= 0)
        dm_err_set(e, DM_EMPI, "%s of %s at offset %lld failed: %s", what, h->path,
                   (long long)off, s);
    else
        dm_err_set(e, DM_EMPI, "%s of %s failed: %s", what, h->path, s);
}

int dm_mpiio_open(dm_mpiio *h, MPI_Comm comm, const char *path, int flags, int nhints,
                  const char *const *keys, const char *const *vals, int32_t file_id,
                  dm_oplog *log, dm_err *e) {
    memset(h, 0, sizeof *h);
    h->fh = MPI_FILE_NULL;
    h->comm = comm;
    h->file_id = file_id;
    h->log = log;
    snprintf(h->path, sizeof h->path, "%s", path);
    MPI_Comm_rank(comm, &h->rank);
    int nprocs = 1;
    MPI_Comm_size(comm, &nprocs);
    h->whole_iface = nprocs > 1 ? DM_IF_MPIIO_COLL : DM_IF_MPIIO_IND;
    if (flags & DM_O_DIRECT) {
        dm_err_set(e, DM_EARG, "O_DIRECT is not an MPI-IO open mode (%s): use the MPI-IO "
                   "implementation's hints instead", path);
        return -1;
    }
    int amode = (flags & DM_O_WRITE) ? MPI_MODE_RDWR : MPI_MODE_RDONLY;
    if (flags & DM_O_CREATE) amode |= MPI_MODE_CREATE;
    if (flags & DM_O_EXCL) amode |= MPI_MODE_EXCL;
    MPI_Info info = MPI_INFO_NULL;
    int rc = MPI_SUCCESS;
    if (nhints > 0) {
        rc = MPI_Info_create(&info);
        for (int i = 0; i < nhints && rc == MPI_SUCCESS; i++)
            rc = MPI_Info_set(info, keys[i], vals[i]);
    }
    /* a rank whose hints failed still joins the collective open (the others would wait for
     * it), then leaves with the error */
    int hints_rc = rc;
    uint64_t t0 = dm_ticks();
    rc = MPI_File_open(comm, path, amode, info, &h->fh);
    uint64_t t1 = dm_ticks();
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        h->fh = MPI_FILE_NULL;
        mpi_err(e, rc, "MPI_File_open", h, -1);
        return -1;
    }
    if (hints_rc != MPI_SUCCESS) {
        mpi_err(e, hints_rc, "MPI_Info_set (the hints)", h, -1);
        MPI_File_close(&h->fh);
        return -1;
    }
    if (flags & DM_O_TRUNC) {
        rc = MPI_File_set_size(h->fh, 0);
        if (rc != MPI_SUCCESS) {
            mpi_err(e, rc, "MPI_File_set_size", h, -1);
            MPI_File_close(&h->fh);
            return -1;
        }
    }
    dm_log(log, t0, t1, -1, 0, file_id, DM_OP_OPEN, h->whole_iface);
    return 0;
}

int dm_mpiio_close(dm_mpiio *h, dm_err *e) {
    if (h->fh == MPI_FILE_NULL) return 0;
    if (dm_inflight_check_close(&h->inflight, h->path, e) != 0) return -1;
    uint64_t t0 = dm_ticks();
    int rc = MPI_File_close(&h->fh);
    uint64_t t1 = dm_ticks();
    h->fh = MPI_FILE_NULL;
    /* logged whether or not it failed, as POSIX's close is: the call was made */
    dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_CLOSE, h->whole_iface);
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, "MPI_File_close", h, -1);
        return -1;
    }
    return 0;
}

int dm_mpiio_size(dm_mpiio *h, int64_t *size, dm_err *e) {
    MPI_Offset s = 0;
    int rc = MPI_File_get_size(h->fh, &s);
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, "MPI_File_get_size", h, -1);
        return -1;
    }
    *size = (int64_t)s;
    return 0;
}

/* One independent transfer at an explicit offset: the bytes moved, or -1. */
static int64_t at(dm_mpiio *h, char *buf, int64_t len, int64_t off, int writing, dm_err *e) {
    MPI_Status st;
    int cnt = 0;
    int rc = writing ? MPI_File_write_at(h->fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st)
                     : MPI_File_read_at(h->fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, writing ? "MPI_File_write_at" : "MPI_File_read_at", h, off);
        return -1;
    }
    /* a write moves all or fails (the transfer loop's contract): a short one is an error */
    if (MPI_Get_count(&st, MPI_BYTE, &cnt) != MPI_SUCCESS || cnt == MPI_UNDEFINED) {
        dm_err_set(e, DM_EMPI, "%s of %lld bytes at offset %lld of %s: no byte count",
                   writing ? "MPI_File_write_at" : "MPI_File_read_at", (long long)len,
                   (long long)off, h->path);
        return -1;
    }
    if (writing && cnt != len) {
        dm_err_set(e, DM_EMPI, "MPI_File_write_at of %lld bytes at offset %lld of %s wrote %d",
                   (long long)len, (long long)off, h->path, cnt);
        return -1;
    }
    return cnt;
}

static int64_t mpiio_read(void *h, char *buf, int64_t len, int64_t off, dm_err *e) {
    return at(h, buf, len, off, 0, e);
}

static int64_t mpiio_write(void *h, char *buf, int64_t len, int64_t off, dm_err *e) {
    return at(h, buf, len, off, 1, e);
}

dm_transfer dm_mpiio_transfer(dm_mpiio *h, int op, int64_t xfer) {
    if (xfer <= 0 || xfer > DM_MPI_CHUNK) xfer = DM_MPI_CHUNK;
    return (dm_transfer){.handle = h, .move = op == DM_OP_READ ? mpiio_read : mpiio_write,
                         .op = op, .iface = DM_IF_MPIIO_IND, .file_id = h->file_id,
                         .log = h->log, .path = h->path, .xfer = xfer};
}

/* ---- collective batches */
typedef struct { int64_t off, len, bufpos; } piece;

static int cmp_piece(const void *a, const void *b) {
    const piece *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

/* Build the sorted pieces of a batch (ranges over DM_MPI_CHUNK cut, zero-length ones dropped).
 * Returns the number of pieces, or -1. */
static long build_pieces(const dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len,
                         piece **out, int64_t *sum, int writing, dm_err *e) {
    size_t cap = n + 1, k = 0;
    int64_t pos = 0;
    piece *p = malloc(cap * sizeof *p);
    if (!p) { dm_err_set(e, DM_ENOMEM, "out of memory for a batch of %zu ranges", n); return -1; }
    for (size_t i = 0; i < n; i++) {
        if (off[i] < 0 || len[i] < 0) {
            dm_err_set(e, DM_EARG, "negative offset or length (%lld, %lld) for %s",
                       (long long)off[i], (long long)len[i], h->path);
            free(p);
            return -1;
        }
        for (int64_t d = 0; d < len[i]; d += DM_MPI_CHUNK) {
            if (k == cap) {
                cap *= 2;
                piece *q = realloc(p, cap * sizeof *p);
                if (!q) { free(p); dm_err_set(e, DM_ENOMEM, "out of memory"); return -1; }
                p = q;
            }
            int64_t l = len[i] - d > DM_MPI_CHUNK ? DM_MPI_CHUNK : len[i] - d;
            p[k++] = (piece){off[i] + d, l, pos + d};
        }
        pos += len[i];
    }
    *sum = pos;
    if (pos > INT_MAX) {
        dm_err_set(e, DM_EARG, "a collective batch of %lld bytes on %s exceeds 2 GiB per rank",
                   (long long)pos, h->path);
        free(p);
        return -1;
    }
    qsort(p, k, sizeof *p, cmp_piece);
    if (writing) {
        for (size_t j = 1; j < k; j++)
            if (p[j].off < p[j - 1].off + p[j - 1].len) {
                dm_err_set(e, DM_EARG, "overlapping ranges at offset %lld in a collective write "
                           "to %s", (long long)p[j].off, h->path);
                free(p);
                return -1;
            }
    }
    *out = p;
    return (long)k;
}

/* File views must be monotonic (no overlaps): overlapping read ranges are read once, as their
 * union, into a scratch buffer and copied to their places. Without overlaps the memory type puts
 * each range straight at its place in buf. */
static int collective(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len, char *buf,
                      int64_t *total, int writing, dm_err *e) {
    piece *p = NULL, *run = NULL;
    int64_t sum = 0, ulen = 0;
    char *scratch = NULL;
    *total = 0;
    long k = build_pieces(h, n, off, len, &p, &sum, writing, e);
    /* Every rank must still enter the collective calls below, or the others hang: a local
     * failure joins with an empty request and is reported afterwards. */
    int local_fail = k < 0;
    if (local_fail) k = 0;
    long nr = 0;
    int overlap = 0;
    if (k > 0) {
        run = malloc(k * sizeof *run);
        if (!run) { dm_err_set(e, DM_ENOMEM, "out of memory"); local_fail = 1; k = 0; }
    }
    for (long j = 0; j < k; j++) {
        if (nr > 0 && p[j].off <= run[nr - 1].off + run[nr - 1].len) {
            int64_t end = p[j].off + p[j].len, rend = run[nr - 1].off + run[nr - 1].len;
            if (p[j].off < rend) overlap = 1;
            if (end > rend) run[nr - 1].len = end - run[nr - 1].off;
        } else {
            run[nr++] = (piece){p[j].off, p[j].len, 0};
        }
    }
    for (long j = 0; j < nr; j++) { run[j].bufpos = ulen; ulen += run[j].len; }
    if (overlap) {
        scratch = malloc((size_t)ulen);
        if (!scratch) {
            dm_err_set(e, DM_ENOMEM, "out of memory for %lld bytes", (long long)ulen);
            local_fail = 1; k = nr = 0; overlap = 0;
        }
    }
    /* the file type: runs when reading through scratch, else pieces (monotonic, no overlap) */
    const piece *fp = overlap ? run : p;
    long nf = overlap ? nr : k;
    MPI_Datatype ftype = MPI_BYTE, mtype = MPI_BYTE;
    int *bl = NULL;
    MPI_Aint *fd = NULL, *md = NULL;
    int rc = MPI_SUCCESS;
    if (nf > 0) {
        bl = malloc(nf * sizeof *bl);
        fd = malloc(nf * sizeof *fd);
        md = malloc(nf * sizeof *md);
        if (!bl || !fd || !md) {
            dm_err_set(e, DM_ENOMEM, "out of memory for a batch of %ld pieces", nf);
            local_fail = 1;
            nf = 0;
        } else {
            for (long j = 0; j < nf; j++) {
                bl[j] = (int)fp[j].len;
                fd[j] = (MPI_Aint)fp[j].off;
                md[j] = (MPI_Aint)fp[j].bufpos;
            }
            int trc = MPI_Type_create_hindexed((int)nf, bl, fd, MPI_BYTE, &ftype);
            if (trc == MPI_SUCCESS) trc = MPI_Type_commit(&ftype);
            if (trc == MPI_SUCCESS && !overlap) {
                trc = MPI_Type_create_hindexed((int)nf, bl, md, MPI_BYTE, &mtype);
                if (trc == MPI_SUCCESS) trc = MPI_Type_commit(&mtype);
            }
            if (trc != MPI_SUCCESS) {
                /* this rank joins the collective call with nothing, then reports */
                mpi_err(e, trc, "MPI_Type_create_hindexed", h, -1);
                local_fail = 1;
                nf = 0;
                ftype = mtype = MPI_BYTE;   /* a type half made is left to MPI_Finalize */
            }
        }
    }
    int count = nf > 0 ? (overlap ? (int)ulen : 1) : 0;
    char *target = overlap ? scratch : buf;
    /* the two views and the collective call are logged apart, as Darshan times them */
    uint64_t v0 = dm_ticks();
    int rc_view = MPI_File_set_view(h->fh, 0, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
    uint64_t t0 = dm_ticks();
    dm_log(h->log, v0, t0, -1, 0, h->file_id, DM_OP_VIEW, DM_IF_MPIIO_COLL);
    MPI_Status st;
    memset(&st, 0, sizeof st);
    if (writing)
        rc = MPI_File_write_at_all(h->fh, 0, target, count, mtype, &st);
    else
        rc = MPI_File_read_at_all(h->fh, 0, target, count, mtype, &st);
    uint64_t t1 = dm_ticks();
    int rc_reset = MPI_File_set_view(h->fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    uint64_t v1 = dm_ticks();
    if (ftype != MPI_BYTE) MPI_Type_free(&ftype);
    if (mtype != MPI_BYTE) MPI_Type_free(&mtype);
    free(bl); free(fd); free(md);
    int64_t first = k > 0 ? p[0].off : -1;
    int ok = !local_fail && rc_view == MPI_SUCCESS && rc == MPI_SUCCESS && rc_reset == MPI_SUCCESS;
    MPI_Count cnt = 0;
    if (ok && count > 0) {
        MPI_Get_elements_x(&st, MPI_BYTE, &cnt);
        if (cnt == MPI_UNDEFINED) cnt = 0;
    }
    if (ok) {
        /* bytes delivered per range: the file stream was filled up to cnt bytes (EOF) */
        int64_t limit = INT64_MAX, acc = 0;
        for (long j = 0; j < nr; j++) {
            if (acc + run[j].len > (int64_t)cnt) { limit = run[j].off + ((int64_t)cnt - acc); break; }
            acc += run[j].len;
        }
        long r = 0;
        for (long j = 0; j < k; j++) {
            int64_t end = p[j].off + p[j].len < limit ? p[j].off + p[j].len : limit;
            int64_t got = end > p[j].off ? end - p[j].off : 0;
            *total += got;
            if (overlap && got > 0) {
                while (r + 1 < nr && run[r + 1].off <= p[j].off) r++;
                memcpy(buf + p[j].bufpos, scratch + run[r].bufpos + (p[j].off - run[r].off),
                       (size_t)got);
            }
        }
        dm_log(h->log, t0, t1, first, (int64_t)cnt, h->file_id,
               writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_MPIIO_COLL);
    }
    dm_log(h->log, t1, v1, -1, 0, h->file_id, DM_OP_VIEW, DM_IF_MPIIO_COLL);
    free(p); free(run); free(scratch);
    if (local_fail) return -1;
    if (rc_view != MPI_SUCCESS) { mpi_err(e, rc_view, "MPI_File_set_view", h, first); return -1; }
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, writing ? "MPI_File_write_at_all" : "MPI_File_read_at_all", h, first);
        return -1;
    }
    if (rc_reset != MPI_SUCCESS) { mpi_err(e, rc_reset, "MPI_File_set_view", h, -1); return -1; }
    return 0;
}

int dm_mpiio_read_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len, char *buf,
                      int64_t *total, dm_err *e) {
    return collective(h, n, off, len, buf, total, 0, e);
}

int dm_mpiio_write_all(dm_mpiio *h, size_t n, const int64_t *off, const int64_t *len,
                       const char *buf, int64_t *total, dm_err *e) {
    return collective(h, n, off, len, (char *)buf, total, 1, e);
}

/* ---- one contiguous range at an explicit offset */
/* MPI_File_write_at_all / read_at_all of len bytes at off through the handle's view (the
 * default byte view): no MPI_File_set_view, which is collective and, in ompio, makes every call
 * wait for the slowest rank. A local error joins the call with nothing and is reported after. */
static int at_all(dm_mpiio *h, int64_t off, int64_t len, char *buf, int64_t *total, int writing,
                  dm_err *e) {
    const char *what = writing ? "MPI_File_write_at_all" : "MPI_File_read_at_all";
    *total = 0;
    int bad = off < 0 || len < 0 || len > INT_MAX;
    if (bad)
        dm_err_set(e, DM_EARG, "%s of %lld bytes at offset %lld of %s: the range must be "
                   "non-negative and at most %d bytes", what, (long long)len, (long long)off,
                   h->path, INT_MAX);
    int count = bad ? 0 : (int)len;
    MPI_Offset at = bad ? 0 : (MPI_Offset)off;
    MPI_Status st;
    memset(&st, 0, sizeof st);
    uint64_t t0 = dm_ticks();
    int rc = writing ? MPI_File_write_at_all(h->fh, at, buf, count, MPI_BYTE, &st)
                     : MPI_File_read_at_all(h->fh, at, buf, count, MPI_BYTE, &st);
    uint64_t t1 = dm_ticks();
    if (bad) return -1;
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, what, h, off);
        return -1;
    }
    MPI_Count cnt = 0;
    if (count > 0) {
        MPI_Get_elements_x(&st, MPI_BYTE, &cnt);
        if (cnt == MPI_UNDEFINED) cnt = 0;
    }
    *total = (int64_t)cnt;
    dm_log(h->log, t0, t1, count > 0 ? off : -1, (int64_t)cnt, h->file_id,
           writing ? DM_OP_WRITE : DM_OP_READ, DM_IF_MPIIO_COLL);
    return 0;
}

int dm_mpiio_write_at_all(dm_mpiio *h, int64_t off, int64_t len, const char *buf,
                          int64_t *total, dm_err *e) {
    return at_all(h, off, len, (char *)buf, total, 1, e);
}

int dm_mpiio_read_at_all(dm_mpiio *h, int64_t off, int64_t len, char *buf, int64_t *total,
                         dm_err *e) {
    return at_all(h, off, len, buf, total, 0, e);
}

int dm_mpiio_sync(dm_mpiio *h, dm_err *e) {
    uint64_t t0 = dm_ticks();
    int rc = MPI_File_sync(h->fh);
    uint64_t t1 = dm_ticks();
    if (rc != MPI_SUCCESS) {
        mpi_err(e, rc, "MPI_File_sync", h, -1);
        return -1;
    }
    dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_FSYNC, h->whole_iface);
    return 0;
}

/* ---- the engine's table: independent transfers at explicit offsets, so a handle's reads may
 * run side by side (from read-ahead threads they need an MPI initialized with
 * MPI_THREAD_MULTIPLE, which the readers check); the collective calls above are not in it.
 * Opening and closing are collective: a handle is never closed by its rank alone. */
static int mpiio_open(void *h, const dm_open_args *a, dm_err *e) {
    return dm_mpiio_open(h, a->comm, a->path, a->flags, a->nhints, a->keys, a->vals, a->file_id,
                         a->log, e);
}
static int mpiio_close(void *h, dm_err *e) { return dm_mpiio_close(h, e); }
static int mpiio_size(void *h, int64_t *size, dm_err *e) { return dm_mpiio_size(h, size, e); }
static int mpiio_sync(void *h, int data_only, dm_err *e) {
    (void)data_only;        /* MPI_File_sync has no data-only form */
    return dm_mpiio_sync(h, e);
}
static dm_oplog *mpiio_log(const void *h) { return ((const dm_mpiio *)h)->log; }
static dm_transfer mpiio_transfer(void *h, int op, int64_t xfer) {
    return dm_mpiio_transfer(h, op, xfer);
}
static dm_inflight *mpiio_inflight(void *h) { return &((dm_mpiio *)h)->inflight; }

const dm_engine_ops dm_mpiio_ops = {
    .name = "mpiio", .ordered = 0, .close_when_freed = 0, .cuts = 1,
    .open = mpiio_open, .close = mpiio_close, .size = mpiio_size, .sync = mpiio_sync,
    .submit = dm_ranges_submit, .complete = dm_done_at_submit,
    .threadable = dm_threadable_always, .span = dm_span_bytes, .log = mpiio_log,
    .transfer = mpiio_transfer, .inflight = mpiio_inflight,
};
