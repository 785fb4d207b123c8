/* POSIX engine: buffered pread, O_DIRECT with aligned transfers, mmap reads, pwrite, fsync. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

static int read_sysfs_long(const char *path, long *v) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fscanf(f, "%ld", v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

int dm_dio_alignment(const char *path, size_t *mem, size_t *off, const char **source,
                     dm_err *e) {
    struct statx sx;
    memset(&sx, 0, sizeof sx);
    if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN | STATX_BASIC_STATS, &sx) != 0) {
        dm_err_set(e, errno, "cannot stat %s: %s", path, strerror(errno));
        return -1;
    }
    if ((sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0) {
        *mem = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : sx.stx_dio_offset_align;
        *off = sx.stx_dio_offset_align;
        if (source) *source = "statx";
        return 0;
    }
    /* logical block size of the device holding the file (or of its parent for a partition) */
    char p[128];
    long v = 0;
    unsigned maj = sx.stx_dev_major, min = sx.stx_dev_minor;
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/queue/logical_block_size", maj, min);
    if (read_sysfs_long(p, &v) != 0) {
        snprintf(p, sizeof p, "/sys/dev/block/%u:%u/../queue/logical_block_size", maj, min);
        if (read_sysfs_long(p, &v) != 0) v = 0;
    }
    if (v <= 0) v = 4096;   /* no device information (network or virtual file system) */
    *mem = (size_t)v;
    *off = (size_t)v;
    if (source) *source = "blocksize";
    return 0;
}

int dm_dio_probe(const char *dir, dm_err *e) {
    char path[4200];
    snprintf(path, sizeof path, "%s/.dlio_mpi_odirect_probe.%ld", dir, (long)getpid());
    int fd = open(path, O_CREAT | O_RDWR | O_DIRECT | O_EXCL, 0600);
    if (fd < 0) {
        int err = errno;
        if (err == EINVAL)
            dm_err_set(e, err, "the file system of %s does not support O_DIRECT", dir);
        else
            dm_err_set(e, err, "cannot create an O_DIRECT probe file in %s: %s", dir,
                       strerror(err));
        return -1;
    }
    size_t mem = 4096, off = 4096;
    dm_dio_alignment(path, &mem, &off, NULL, NULL);
    size_t blk = mem > off ? mem : off;
    void *buf = dm_aligned_alloc(blk, blk);
    int rc = 0;
    if (!buf) {
        dm_err_set(e, DM_ENOMEM, "cannot allocate %zu aligned bytes", blk);
        rc = -1;
    } else {
        memset(buf, 0, blk);
        if (pwrite(fd, buf, blk, 0) != (ssize_t)blk || pread(fd, buf, blk, 0) != (ssize_t)blk) {
            dm_err_set(e, errno, "the file system of %s refuses O_DIRECT transfers: %s", dir,
                       strerror(errno));
            rc = -1;
        }
        dm_aligned_free(buf);
    }
    close(fd);
    unlink(path);
    return rc;
}

int dm_posix_open(dm_posix *h, const char *path, int flags, int mmap_mode, int advice,
                  int32_t file_id, dm_oplog *log, dm_err *e) {
    memset(h, 0, sizeof *h);
    h->fd = -1;
    snprintf(h->path, sizeof h->path, "%s", path);
    h->flags = flags;
    h->file_id = file_id;
    h->log = log;
    h->iface = (flags & DM_O_DIRECT) ? DM_IF_POSIX_DIRECT : (mmap_mode ? DM_IF_MMAP : DM_IF_POSIX);
    if (mmap_mode && (flags & (DM_O_WRITE | DM_O_DIRECT))) {
        dm_err_set(e, DM_EARG, "mmap mode is read-only and buffered: %s", path);
        return -1;
    }
    int of = (flags & DM_O_WRITE) ? O_RDWR : O_RDONLY;
    /* a write never goes through a link at the file's name: one planted in a shared folder
     * would redirect it to the link's target */
    if (flags & DM_O_WRITE) of |= O_NOFOLLOW;
    if (flags & DM_O_CREATE) of |= O_CREAT;
    if (flags & DM_O_EXCL) of |= O_EXCL;
    if (flags & DM_O_TRUNC) of |= O_TRUNC;
    if (flags & DM_O_DIRECT) of |= O_DIRECT;
    of |= O_CLOEXEC;
    uint64_t t0 = dm_ticks();
    int fd;
    do { fd = open(path, of, 0644); } while (fd < 0 && errno == EINTR);
    uint64_t t1 = dm_ticks();
    if (fd < 0) {
        int err = errno;
        if (err == EINVAL && (flags & DM_O_DIRECT))
            dm_err_set(e, err, "cannot open %s with O_DIRECT: the file system does not support it",
                       path);
        else if (dm_refused_write(e, err, path, flags))
            ;
        else
            dm_err_set(e, err, "cannot open %s: %s", path, strerror(err));
        return -1;
    }
    h->fd = fd;
    dm_log(log, t0, t1, -1, 0, file_id, DM_OP_OPEN, h->iface);
    if (flags & DM_O_DIRECT) {
        if (dm_dio_alignment(path, &h->mem_align, &h->off_align, NULL, e) != 0) {
            close(fd);
            h->fd = -1;
            return -1;
        }
    }
    if (advice >= 0) {
        int rc = posix_fadvise(fd, 0, 0, advice);
        if (rc != 0) {
            dm_err_set(e, rc, "posix_fadvise(%d) on %s failed: %s", advice, path, strerror(rc));
            close(fd);
            h->fd = -1;
            return -1;
        }
    }
    if (mmap_mode) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            dm_err_set(e, errno, "cannot stat %s: %s", path, strerror(errno));
            close(fd);
            h->fd = -1;
            return -1;
        }
        h->map_len = (size_t)st.st_size;
        if (h->map_len > 0) {
            t0 = dm_ticks();
            void *m = mmap(NULL, h->map_len, PROT_READ, MAP_SHARED, fd, 0);
            t1 = dm_ticks();
            if (m == MAP_FAILED) {
                dm_err_set(e, errno, "cannot mmap %s: %s", path, strerror(errno));
                close(fd);
                h->fd = -1;
                return -1;
            }
            h->map = m;
            if (advice >= 0) madvise(m, h->map_len, advice == POSIX_FADV_RANDOM ? MADV_RANDOM
                                     : advice == POSIX_FADV_SEQUENTIAL ? MADV_SEQUENTIAL
                                     : MADV_NORMAL);
            dm_log(log, t0, t1, 0, 0, file_id, DM_OP_MMAP, DM_IF_MMAP);
        }
    }
    return 0;
}

int dm_posix_close(dm_posix *h, dm_err *e) {
    if (dm_inflight_check_close(&h->inflight, h->path, e) != 0) return -1;
    int rc = 0;
    if (h->map) {
        munmap(h->map, h->map_len);
        h->map = NULL;
    }
    if (h->fd >= 0) {
        uint64_t t0 = dm_ticks();
        int r = close(h->fd);
        uint64_t t1 = dm_ticks();
        if (r != 0 && errno != EINTR) {
            dm_err_set(e, errno, "close of %s failed: %s", h->path, strerror(errno));
            rc = -1;
        }
        dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_CLOSE, h->iface);
        h->fd = -1;
    }
    return rc;
}

int dm_posix_size(dm_posix *h, int64_t *size, dm_err *e) {
    struct stat st;
    if (fstat(h->fd, &st) != 0) {
        dm_err_set(e, errno, "cannot stat %s: %s", h->path, strerror(errno));
        return -1;
    }
    *size = (int64_t)st.st_size;
    return 0;
}

int dm_posix_fadvise(dm_posix *h, int64_t off, int64_t len, int advice, dm_err *e) {
    int rc = posix_fadvise(h->fd, (off_t)off, (off_t)len, advice);
    if (rc != 0) {
        dm_err_set(e, rc, "posix_fadvise(%d) on %s failed: %s", advice, h->path, strerror(rc));
        return -1;
    }
    return 0;
}

int dm_posix_check_aligned(const dm_posix *h, int64_t off, int64_t len, const void *buf,
                           dm_err *e) {
    if (!(h->flags & DM_O_DIRECT)) return 0;
    size_t a = h->off_align, m = h->mem_align;
    if ((off % (int64_t)a) != 0 || (len % (int64_t)a) != 0) {
        dm_err_set(e, DM_EALIGN,
                   "misaligned O_DIRECT request on %s: offset %lld length %lld, the file system "
                   "needs multiples of %zu bytes", h->path, (long long)off, (long long)len, a);
        return -1;
    }
    if (buf && len > 0 && ((uintptr_t)buf % m) != 0) {
        dm_err_set(e, DM_EALIGN, "misaligned O_DIRECT buffer for %s: needs %zu-byte alignment",
                   h->path, m);
        return -1;
    }
    return 0;
}

/* One transfer: pread until len bytes or EOF, on EINTR and short reads. */
static inline int64_t pread_full(int fd, char *buf, int64_t len, int64_t off, int *err) {
    int64_t done = 0;
    while (done < len) {
        size_t want = (size_t)(len - done);
        if (want > (size_t)1 << 30) want = (size_t)1 << 30;
        ssize_t r = pread(fd, buf + done, want, (off_t)(off + done));
        /* a short read of a regular file is its end: stop there, as buffered readers do,
         * without a second call that would return 0 (the caller retries where it must) */
        if (r > 0) { done += r; if ((size_t)r < want) break; continue; }
        if (r == 0) break;
        if (errno == EINTR) continue;
        *err = errno;
        return -1;
    }
    return done;
}

static inline int64_t pwrite_full(int fd, const char *buf, int64_t len, int64_t off, int *err) {
    int64_t done = 0;
    while (done < len) {
        size_t want = (size_t)(len - done);
        if (want > (size_t)1 << 30) want = (size_t)1 << 30;
        ssize_t r = pwrite(fd, buf + done, want, (off_t)(off + done));
        if (r > 0) { done += r; continue; }
        if (r < 0 && errno == EINTR) continue;
        *err = r < 0 ? errno : ENOSPC;
        return -1;
    }
    return done;
}

/* One read transfer: pread, or a copy out of the mapping. */
static int64_t posix_read(void *hp, char *buf, int64_t len, int64_t off, dm_err *e) {
    dm_posix *h = hp;
    if (h->map) {
        int64_t avail = (int64_t)h->map_len - off;
        int64_t r = avail <= 0 ? 0 : (len < avail ? len : avail);
        if (r > 0) memcpy(buf, h->map + off, (size_t)r);
        return r;
    }
    if (h->iface == DM_IF_MMAP) return 0;     /* an empty file: nothing mapped */
    int err = 0;
    int64_t r = pread_full(h->fd, buf, len, off, &err);
    if (r < 0)
        dm_err_set(e, err, "read of %lld bytes at offset %lld of %s failed: %s",
                   (long long)len, (long long)off, h->path, strerror(err));
    return r;
}

static int64_t posix_write(void *hp, char *buf, int64_t len, int64_t off, dm_err *e) {
    dm_posix *h = hp;
    int err = 0;
    int64_t r = pwrite_full(h->fd, buf, len, off, &err);
    if (r < 0)
        dm_err_set(e, err, "write of %lld bytes at offset %lld of %s failed: %s",
                   (long long)len, (long long)off, h->path, strerror(err));
    return r;
}

/* In O_DIRECT mode the transfer size, every range and its place in buf must be aligned. */
static int check_direct(void *hp, size_t n, const int64_t *off, const int64_t *len,
                        const char *buf, int64_t xfer, dm_err *e) {
    dm_posix *h = hp;
    if (xfer > 0 && (xfer % (int64_t)h->off_align) != 0) {
        dm_err_set(e, DM_EALIGN, "O_DIRECT transfer size %lld on %s is not a multiple of %zu",
                   (long long)xfer, h->path, h->off_align);
        return -1;
    }
    int64_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (dm_posix_check_aligned(h, off[i], len[i], buf + pos, e) != 0) return -1;
        pos += len[i];
    }
    return 0;
}

dm_transfer dm_posix_transfer(dm_posix *h, int op, int64_t xfer) {
    int reading = op == DM_OP_READ;
    return (dm_transfer){.handle = h, .move = reading ? posix_read : posix_write,
                         .check = (h->flags & DM_O_DIRECT) ? check_direct : NULL, .op = op,
                         .iface = h->iface, .file_id = h->file_id, .log = h->log,
                         .path = h->path, .xfer = xfer, .chained = reading,
                         .retry_short = 1};
}

int dm_posix_sync(dm_posix *h, int data_only, dm_err *e) {
    return dm_sync_fd(h->fd, data_only, h->log, h->file_id, h->iface, h->path, e);
}

/* ---- the engine's table (buffered, O_DIRECT and mmap alike) */
static int posix_open(void *h, const dm_open_args *a, dm_err *e) {
    return dm_posix_open(h, a->path, a->flags, a->mmap_mode, a->advice, a->file_id, a->log, e);
}
static int posix_close(void *h, dm_err *e) { return dm_posix_close(h, e); }
static int posix_size(void *h, int64_t *size, dm_err *e) { return dm_posix_size(h, size, e); }
static int posix_sync(void *h, int data_only, dm_err *e) {
    return dm_posix_sync(h, data_only, e);
}
static dm_oplog *posix_log(const void *h) { return ((const dm_posix *)h)->log; }
static dm_transfer posix_transfer(void *h, int op, int64_t xfer) {
    return dm_posix_transfer(h, op, xfer);
}
static dm_inflight *posix_inflight(void *h) { return &((dm_posix *)h)->inflight; }

const dm_engine_ops dm_posix_ops = {
    .name = "posix", .ordered = 0, .close_when_freed = 1, .cuts = 1,
    .open = posix_open, .close = posix_close, .size = posix_size, .sync = posix_sync,
    .submit = dm_ranges_submit, .complete = dm_done_at_submit,
    .threadable = dm_threadable_always, .span = dm_span_bytes, .log = posix_log,
    .transfer = posix_transfer, .inflight = posix_inflight,
};
