/* STDIO engine: fopen with a settable stream buffer, fseeko + fread / fwrite, as a Python or C
 * program using FILE streams reaches the storage. A seek is issued only when the position
 * changes, as a streaming reader would. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dm_stdio_open(dm_stdio *h, const char *path, int flags, size_t bufsize, int32_t file_id,
                  dm_oplog *log, dm_err *e) {
    memset(h, 0, sizeof *h);
    snprintf(h->path, sizeof h->path, "%s", path);
    h->file_id = file_id;
    h->log = log;
    h->pos = 0;
    if (flags & DM_O_DIRECT) {
        dm_err_set(e, DM_EARG, "O_DIRECT cannot be used through STDIO (%s)", path);
        return -1;
    }
    h->writing = (flags & DM_O_WRITE) != 0;
    uint64_t t0 = dm_ticks();
    FILE *fp;
    int err = 0;
    if (flags & DM_O_WRITE) {
        /* open(2) then fdopen: fopen cannot create without truncating ("a" would force
         * appends), create exclusively, or refuse a link at the file's name */
        int of = O_RDWR | O_NOFOLLOW | O_CLOEXEC;
        if (flags & DM_O_CREATE) of |= O_CREAT;
        if (flags & DM_O_EXCL) of |= O_EXCL;
        if (flags & DM_O_TRUNC) of |= O_TRUNC;
        int fd = open(path, of, 0644);
        err = errno;
        fp = fd < 0 ? NULL : fdopen(fd, "r+b");
        if (fd >= 0 && !fp) {
            err = errno;
            close(fd);
        }
    } else {
        fp = fopen(path, "rb");
        err = errno;
    }
    uint64_t t1 = dm_ticks();
    if (!fp) {
        if (!dm_refused_write(e, err, path, flags))
            dm_err_set(e, err, "cannot open %s: %s", path, strerror(err));
        return -1;
    }
    if (bufsize > 0) {
        h->vbuf = malloc(bufsize);
        if (!h->vbuf || setvbuf(fp, h->vbuf, _IOFBF, bufsize) != 0) {
            dm_err_set(e, DM_ENOMEM, "cannot set a %zu-byte stream buffer on %s", bufsize, path);
            fclose(fp);
            free(h->vbuf);
            h->vbuf = NULL;
            return -1;
        }
    }
    h->fp = fp;
    dm_log(log, t0, t1, -1, 0, file_id, DM_OP_OPEN, DM_IF_STDIO);
    return 0;
}

int dm_stdio_close(dm_stdio *h, dm_err *e) {
    if (dm_inflight_check_close(&h->inflight, h->path, e) != 0) return -1;
    int rc = 0;
    if (h->fp) {
        uint64_t t0 = dm_ticks();
        int r = fclose(h->fp);
        uint64_t t1 = dm_ticks();
        if (r != 0) {
            dm_err_set(e, errno, "fclose of %s failed: %s", h->path, strerror(errno));
            rc = -1;
        }
        dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_CLOSE, DM_IF_STDIO);
        h->fp = NULL;
    }
    free(h->vbuf);
    h->vbuf = NULL;
    return rc;
}

static int seek_to(void *hp, int64_t off, dm_err *e) {
    dm_stdio *h = hp;
    if (h->pos == off) return 0;
    uint64_t t0 = dm_ticks();
    int r = fseeko(h->fp, (off_t)off, SEEK_SET);
    uint64_t t1 = dm_ticks();
    if (r != 0) {
        dm_err_set(e, errno, "fseeko to %lld in %s failed: %s", (long long)off, h->path,
                   strerror(errno));
        h->pos = -1;
        return -1;
    }
    dm_log(h->log, t0, t1, off, 0, h->file_id, DM_OP_SEEK, DM_IF_STDIO);
    h->pos = off;
    return 0;
}

/* One fread at the stream's position (off); a short one is the end of the file. */
static int64_t stdio_read(void *hp, char *buf, int64_t len, int64_t off, dm_err *e) {
    dm_stdio *h = hp;
    size_t r = fread(buf, 1, (size_t)len, h->fp);
    if (r < (size_t)len) {
        if (ferror(h->fp)) {
            int err = errno;
            clearerr(h->fp);
            h->pos = -1;
            dm_err_set(e, err, "fread of %lld bytes at offset %lld of %s failed: %s",
                       (long long)len, (long long)off, h->path, strerror(err));
            return -1;
        }
        clearerr(h->fp);
    }
    h->pos = off + (int64_t)r;
    return (int64_t)r;
}

static int64_t stdio_write(void *hp, char *buf, int64_t len, int64_t off, dm_err *e) {
    dm_stdio *h = hp;
    size_t r = fwrite(buf, 1, (size_t)len, h->fp);
    if (r < (size_t)len) {
        int err = errno ? errno : ENOSPC;
        h->pos = -1;
        dm_err_set(e, err, "fwrite of %lld bytes at offset %lld of %s failed: %s",
                   (long long)len, (long long)off, h->path, strerror(err));
        return -1;
    }
    h->pos = off + (int64_t)r;
    return (int64_t)r;
}

dm_transfer dm_stdio_transfer(dm_stdio *h, int op, int64_t xfer) {
    return (dm_transfer){.handle = h, .move = op == DM_OP_READ ? stdio_read : stdio_write,
                         .seek = seek_to, .op = op, .iface = DM_IF_STDIO, .file_id = h->file_id,
                         .log = h->log, .path = h->path, .xfer = xfer};
}

int dm_stdio_sync(dm_stdio *h, int data_only, dm_err *e) {
    if (fflush(h->fp) != 0) {
        dm_err_set(e, errno, "fflush of %s failed: %s", h->path, strerror(errno));
        return -1;
    }
    return dm_sync_fd(fileno(h->fp), data_only, h->log, h->file_id, DM_IF_STDIO, h->path, e);
}

/* The size of the stream's file on disk (bytes still in a writing stream's buffer are not in
 * it until a sync). */
static int stdio_size(void *hp, int64_t *size, dm_err *e) {
    dm_stdio *h = hp;
    struct stat st;
    if (fstat(fileno(h->fp), &st) != 0) {
        dm_err_set(e, errno, "cannot stat %s: %s", h->path, strerror(errno));
        return -1;
    }
    *size = (int64_t)st.st_size;
    return 0;
}

/* ---- the engine's table: a stream has a position, so its requests are read in order */
static int stdio_open(void *h, const dm_open_args *a, dm_err *e) {
    return dm_stdio_open(h, a->path, a->flags, a->bufsize, a->file_id, a->log, e);
}
static int stdio_close(void *h, dm_err *e) { return dm_stdio_close(h, e); }
static int stdio_sync(void *h, int data_only, dm_err *e) {
    return dm_stdio_sync(h, data_only, e);
}
static dm_oplog *stdio_log(const void *h) { return ((const dm_stdio *)h)->log; }
static dm_transfer stdio_transfer(void *h, int op, int64_t xfer) {
    return dm_stdio_transfer(h, op, xfer);
}
static dm_inflight *stdio_inflight(void *h) { return &((dm_stdio *)h)->inflight; }

const dm_engine_ops dm_stdio_ops = {
    .name = "stdio", .ordered = 1, .close_when_freed = 1, .cuts = 1,
    .open = stdio_open, .close = stdio_close, .size = stdio_size, .sync = stdio_sync,
    .submit = dm_ranges_submit, .complete = dm_done_at_submit,
    .threadable = dm_threadable_always, .span = dm_span_bytes, .log = stdio_log,
    .transfer = stdio_transfer, .inflight = stdio_inflight,
};
