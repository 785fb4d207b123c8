/* A virtual file driver for libhdf5 that does what the sec2 driver does (pread/pwrite on one
 * file descriptor, the same feature flags, so the library issues the same requests) and records
 * every call it makes in the op log as a POSIX call: the reads and writes libhdf5 really issues
 * for metadata, chunks and contiguous pieces, at their file offsets. Files it writes are plain
 * HDF5 files (no driver information in the superblock), readable with the default driver.
 * In memory (a file read whole at open, as the core driver does): one read call from offset 0
 * for the whole file (more only if the kernel returns less), then libhdf5's reads are copies
 * out of that image and make no call. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    H5FD_t pub;             /* first: libhdf5 sees this part */
    int fd;
    haddr_t eoa, eof;
    dev_t dev;
    ino_t ino;
    dm_oplog *log;
    int32_t file_id;
    char *image;            /* in memory: the file's bytes, read at open */
} logvfd_t;

#define LOGVFD_MAXADDR (((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1)

static hid_t g_logvfd_id = -1;
static pthread_once_t g_logvfd_once = PTHREAD_ONCE_INIT;

/* The whole file read into f->image, as the core driver reads it at open (read calls from
 * offset 0 until the end), each call logged; nonzero with errno set on a failure. */
static int load_image(logvfd_t *f) {
    size_t size = (size_t)f->eof;
    f->image = malloc(size > 0 ? size : 1);
    if (!f->image) return -1;
    size_t got = 0;
    while (got < size) {
        uint64_t t0 = dm_ticks();
        ssize_t n = pread(f->fd, f->image + got, size - got, (off_t)got);
        uint64_t t1 = dm_ticks();
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;          /* the file shrank under the open */
            free(f->image);
            f->image = NULL;
            return -1;
        }
        dm_log(f->log, t0, t1, (int64_t)got, n, f->file_id, DM_OP_READ, DM_IF_POSIX);
        got += (size_t)n;
    }
    return 0;
}

static H5FD_t *lv_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
    (void)maxaddr;
    const dm_logvfd_info *info = H5Pget_driver_info(fapl);
    /* as the POSIX engine: a write never goes through a link at the file's name */
    int o = (flags & H5F_ACC_RDWR) ? O_RDWR | O_NOFOLLOW : O_RDONLY;
    if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
    if (flags & H5F_ACC_CREAT) o |= O_CREAT;
    if (flags & H5F_ACC_EXCL) o |= O_EXCL;
    dm_oplog *log = info ? info->log : NULL;
    int32_t id = info ? info->file_id : 0;
    uint64_t t0 = dm_ticks();
    int fd = open(name, o | O_CLOEXEC, 0666);
    uint64_t t1 = dm_ticks();
    if (fd < 0) return NULL;
    dm_log(log, t0, t1, -1, 0, id, DM_OP_OPEN, DM_IF_POSIX);
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return NULL; }
    logvfd_t *f = calloc(1, sizeof *f);
    if (!f) { close(fd); return NULL; }
    f->fd = fd;
    f->eof = (haddr_t)st.st_size;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->log = log;
    f->file_id = id;
    if (info && info->in_memory && !(flags & H5F_ACC_RDWR) && load_image(f) != 0) {
        int err = errno;
        close(fd);
        free(f);
        errno = err;
        return NULL;
    }
    return &f->pub;
}

static herr_t lv_close(H5FD_t *file) {
    logvfd_t *f = (logvfd_t *)file;
    uint64_t t0 = dm_ticks();
    int rc = close(f->fd);
    dm_log(f->log, t0, dm_ticks(), -1, 0, f->file_id, DM_OP_CLOSE, DM_IF_POSIX);
    free(f->image);
    free(f);
    return rc == 0 ? 0 : -1;
}

static int lv_cmp(const H5FD_t *a, const H5FD_t *b) {
    const logvfd_t *x = (const logvfd_t *)a, *y = (const logvfd_t *)b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

static herr_t lv_query(const H5FD_t *file, unsigned long *flags) {
    (void)file;
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
             H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA |
             H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_SUPPORTS_SWMR_IO;
#ifdef H5FD_FEAT_DEFAULT_VFD_COMPATIBLE
    *flags |= H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
#endif
    return 0;
}

static haddr_t lv_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const logvfd_t *)file)->eoa;
}

static herr_t lv_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
    (void)type;
    ((logvfd_t *)file)->eoa = addr;
    return 0;
}

static haddr_t lv_get_eof(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const logvfd_t *)file)->eof;
}

static herr_t lv_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
    (void)fapl;
    *handle = &((logvfd_t *)file)->fd;
    return 0;
}

static herr_t lv_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                      void *buf) {
    (void)type; (void)dxpl;
    logvfd_t *f = (logvfd_t *)file;
    char *p = buf;
    if (f->image) {          /* a copy out of the image; past the end zeros, as sec2 gives */
        size_t have = addr < f->eof ? (size_t)(f->eof - addr) : 0;
        size_t n = size < have ? size : have;
        if (n) memcpy(p, f->image + addr, n);
        if (size > n) memset(p + n, 0, size - n);
        return 0;
    }
    while (size > 0) {
        uint64_t t0 = dm_ticks();
        ssize_t n = pread(f->fd, p, size, (off_t)addr);
        uint64_t t1 = dm_ticks();
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        dm_log(f->log, t0, t1, (int64_t)addr, n, f->file_id, DM_OP_READ, DM_IF_POSIX);
        if (n == 0) {           /* past the end of the file: zeros, as sec2 gives */
            memset(p, 0, size);
            break;
        }
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    return 0;
}

static herr_t lv_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                       const void *buf) {
    (void)type; (void)dxpl;
    logvfd_t *f = (logvfd_t *)file;
    const char *p = buf;
    while (size > 0) {
        uint64_t t0 = dm_ticks();
        ssize_t n = pwrite(f->fd, p, size, (off_t)addr);
        uint64_t t1 = dm_ticks();
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        dm_log(f->log, t0, t1, (int64_t)addr, n, f->file_id, DM_OP_WRITE, DM_IF_POSIX);
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    if (addr > f->eof) f->eof = addr;
    return 0;
}

static herr_t lv_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
    (void)dxpl; (void)closing;
    logvfd_t *f = (logvfd_t *)file;
    if (f->eoa != f->eof) {
        if (ftruncate(f->fd, (off_t)f->eoa) != 0) return -1;
        f->eof = f->eoa;
    }
    return 0;
}

static herr_t lv_lock(H5FD_t *file, hbool_t rw) {
    int rc = flock(((logvfd_t *)file)->fd, (rw ? LOCK_EX : LOCK_SH) | LOCK_NB);
    return (rc == 0 || errno == ENOSYS) ? 0 : -1;
}

static herr_t lv_unlock(H5FD_t *file) {
    int rc = flock(((logvfd_t *)file)->fd, LOCK_UN);
    return (rc == 0 || errno == ENOSYS) ? 0 : -1;
}

static const H5FD_class_t g_logvfd_class = {
#if H5_VERSION_GE(1, 13, 2)
    .version = H5FD_CLASS_VERSION,
    .value = (H5FD_class_value_t)601,
#endif
    .name = "dlio_mpi_sec2",
    .maxaddr = LOGVFD_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(dm_logvfd_info),
    .open = lv_open,
    .close = lv_close,
    .cmp = lv_cmp,
    .query = lv_query,
    .get_eoa = lv_get_eoa,
    .set_eoa = lv_set_eoa,
    .get_eof = lv_get_eof,
    .get_handle = lv_get_handle,
    .read = lv_read,
    .write = lv_write,
    .truncate = lv_truncate,
    .lock = lv_lock,
    .unlock = lv_unlock,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

static void register_logvfd(void) { g_logvfd_id = H5FDregister(&g_logvfd_class); }

int dm_logvfd_set(hid_t fapl, dm_oplog *log, int32_t file_id, int in_memory) {
    pthread_once(&g_logvfd_once, register_logvfd);
    if (g_logvfd_id < 0) return -1;
    dm_logvfd_info info = {log, file_id, in_memory};
    return H5Pset_driver(fapl, g_logvfd_id, &info) < 0 ? -1 : 0;
}
