/* HDF5 engine: a dataset opened through the MPI-IO driver or sec2; a batch of samples (rows of
 * dimension 0) read as one union of hyperslabs in one H5Dread, collective or independent. */
#define _GNU_SOURCE
#include "dm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t g_h5_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_once_t g_h5_once = PTHREAD_ONCE_INIT;
/* Files whose H5Fclose failed and whose id HDF5 still holds. HDF5 1.10 frees a file's structure
 * when its close fails (a metadata write refused: ENOSPC) but keeps the id, and the library's
 * own shutdown at MPI_Finalize closes that id again, reading freed memory (a segfault in
 * H5F__close_cb). A process holding one must end without that shutdown. */
static int g_h5_unclosed;

void dm_h5_lock(void) { pthread_mutex_lock(&g_h5_lock); }
void dm_h5_unlock(void) { pthread_mutex_unlock(&g_h5_lock); }

static void h5_init(void) {
    H5open();
}

typedef struct { char *out; size_t cap; int n; } walk_ctx;

static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *data) {
    walk_ctx *w = data;
    (void)n;
    if (w->n >= 2 || !err->desc || !err->desc[0]) return 0;
    size_t used = strlen(w->out);
    snprintf(w->out + used, w->cap - used, "%s%s", w->n ? "; " : "", err->desc);
    w->n++;
    return 0;
}

/* The innermost HDF5 error descriptions, then the stack cleared. */
static void h5_err(dm_err *e, const char *what, const dm_h5 *h, int64_t row) {
    char detail[400] = "";
    walk_ctx w = {detail, sizeof detail, 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (row >= 0)
        dm_err_set(e, DM_EHDF5, "%s of dataset %s in %s at row %lld failed: %s", what, h->name,
                   h->path, (long long)row, detail[0] ? detail : "HDF5 error");
    else
        dm_err_set(e, DM_EHDF5, "%s of dataset %s in %s failed: %s", what, h->name, h->path,
                   detail[0] ? detail : "HDF5 error");
}

/* The file access properties of a handle, or -1 with e set (naming path). Through sec2 the
 * reads go through the logging driver: without it the run would count no bytes moved, so a
 * failed setup is an error, not a fall back to plain sec2. */
static hid_t make_fapl(int driver, MPI_Comm comm, int nhints, const char *const *keys,
                       const char *const *vals, dm_oplog *log, int32_t file_id,
                       const char *path, dm_err *e) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) {
        dm_err_set(e, DM_EHDF5, "cannot make the file access properties of %s", path);
        return -1;
    }
    if (driver == DM_H5_MPIO) {
        MPI_Info info = MPI_INFO_NULL;
        int rc = MPI_SUCCESS;
        if (nhints > 0) {
            rc = MPI_Info_create(&info);
            for (int i = 0; i < nhints && rc == MPI_SUCCESS; i++)
                rc = MPI_Info_set(info, keys[i], vals[i]);
        }
        herr_t hr = rc == MPI_SUCCESS ? H5Pset_fapl_mpio(fapl, comm, info) : -1;
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        if (rc != MPI_SUCCESS || hr < 0) {
            dm_err_set(e, rc != MPI_SUCCESS ? DM_EMPI : DM_EHDF5, "cannot set up the MPI-IO "
                       "driver%s for %s", rc != MPI_SUCCESS ? "'s hints" : "", path);
            H5Pclose(fapl);
            return -1;
        }
    } else if (dm_logvfd_set(fapl, log, file_id, driver == DM_H5_CORE) != 0) {
        dm_err_set(e, DM_EHDF5, "cannot set up the logging sec2 driver for %s", path);
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

static int describe(dm_h5 *h, dm_err *e) {
    h->space = H5Dget_space(h->dset);
    h->dtype = H5Dget_type(h->dset);
    if (h->space < 0 || h->dtype < 0) { h5_err(e, "describe", h, -1); return -1; }
    if (H5Tget_class(h->dtype) == H5T_VLEN && !h->writing) {
        /* a sequence of bytes a row: read into descriptors (hvl_t), as h5py reads them */
        hid_t mem = H5Tvlen_create(H5T_NATIVE_UCHAR);
        if (mem < 0) { h5_err(e, "describe", h, -1); return -1; }
        H5Tclose(h->dtype);
        h->dtype = mem;
        h->vlen = 1;
    }
    h->rank_ndims = H5Sget_simple_extent_ndims(h->space);
    if (h->rank_ndims < 1 || h->rank_ndims > 8) {
        dm_err_set(e, DM_EARG, "dataset %s in %s has %d dimensions (1 to 8 supported)", h->name,
                   h->path, h->rank_ndims);
        return -1;
    }
    H5Sget_simple_extent_dims(h->space, h->dims, NULL);
    h->elem_size = H5Tget_size(h->dtype);
    h->row_elems = 1;
    for (int d = 1; d < h->rank_ndims; d++) h->row_elems *= h->dims[d];
    h->row_bytes = h->own_row_bytes = (int64_t)(h->row_elems * h->elem_size);
    return 0;
}

/* H5Fclose, counting a file whose close failed while its id stays registered (see
 * g_h5_unclosed). Called holding the lock. */
static herr_t close_file(hid_t file) {
    herr_t r = H5Fclose(file);
    if (r < 0 && H5Iis_valid(file) > 0) g_h5_unclosed++;
    return r;
}

int dm_h5_unclosed(void) {
    dm_h5_lock();
    int n = g_h5_unclosed;
    dm_h5_unlock();
    return n;
}

/* The fields' ids closed (called holding the lock); nonzero when a close failed. */
static int close_fields(dm_h5 *h) {
    int r = 0;
    for (int i = 0; i < h->nfields; i++) {
        dm_h5_field *f = &h->field[i];
        if (f->dtype >= 0) r |= H5Tclose(f->dtype) < 0;
        if (f->space >= 0) r |= H5Sclose(f->space) < 0;
        if (f->dset >= 0) r |= H5Dclose(f->dset) < 0;
        f->dtype = f->space = f->dset = -1;
    }
    h->nfields = 0;
    return r;
}

static void close_ids(dm_h5 *h) {
    close_fields(h);
    if (h->dtype > 0) H5Tclose(h->dtype);
    if (h->space > 0) H5Sclose(h->space);
    if (h->dset > 0) H5Dclose(h->dset);
    if (h->file > 0) close_file(h->file);
    h->dtype = h->space = h->dset = h->file = -1;
}

/* A handle's fields before its file is opened or created. */
static void start(dm_h5 *h, const char *path, const char *dset, int driver, int collective,
                  int writing, int32_t file_id, dm_oplog *log) {
    pthread_once(&g_h5_once, h5_init);
    int per_read = h->dset_per_read;    /* set before the open (a deferred handle's too) */
    int no_cache = h->no_chunk_cache;
    memset(h, 0, sizeof *h);
    h->dset_per_read = per_read;
    h->no_chunk_cache = no_cache;
    h->file = h->dset = h->space = h->dtype = -1;
    snprintf(h->path, sizeof h->path, "%s", path);
    snprintf(h->name, sizeof h->name, "%s", dset);
    h->driver = driver;
    h->collective = collective && driver == DM_H5_MPIO;
    h->file_id = file_id;
    h->log = log;
    h->writing = writing;
}

/* H5Dopen2 of dataset name of h's file, with no chunk cache where h says so (H5Pset_chunk_cache
 * with rdcc_nbytes 0: h5py's File(rdcc_nbytes=0)); called holding the lock. */
static hid_t open_dataset(const dm_h5 *h, const char *name) {
    if (!h->no_chunk_cache) return H5Dopen2(h->file, name, H5P_DEFAULT);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl < 0) return -1;
    hid_t d = H5Pset_chunk_cache(dapl, H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0,
                                 H5D_CHUNK_CACHE_W0_DEFAULT) < 0
                  ? -1 : H5Dopen2(h->file, name, dapl);
    H5Pclose(dapl);
    return d;
}

/* The end of an open or a create (called holding the lock, which it releases): the dataset
 * described, the open logged from t0 to t1. */
static int opened(dm_h5 *h, uint64_t t0, uint64_t t1, dm_err *e) {
    int rc = describe(h, e);
    if (rc != 0) close_ids(h);
    dm_h5_unlock();
    if (rc == 0)
        dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_OPEN,
               h->driver != DM_H5_MPIO ? DM_IF_HDF5_SEC2
                                       : (h->collective ? DM_IF_HDF5_COLL : DM_IF_HDF5_IND));
    return rc;
}

int dm_h5_open(dm_h5 *h, const char *path, const char *dset, int driver, MPI_Comm comm,
               int collective, int writing, int nhints, const char *const *keys,
               const char *const *vals, int32_t file_id, dm_oplog *log, dm_err *e) {
    start(h, path, dset, driver, collective, writing, file_id, log);
    /* a missing or unreadable file is named with its errno, not HDF5's stack */
    if (access(path, writing ? (R_OK | W_OK) : R_OK) != 0) {
        dm_err_set(e, errno, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    dm_h5_lock();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fapl = make_fapl(driver, comm, nhints, keys, vals, log, file_id, path, e);
    if (fapl < 0) {
        dm_h5_unlock();
        return -1;
    }
    uint64_t t0 = dm_ticks();
    h->file = H5Fopen(path, writing ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (h->file < 0) {
        int is = H5Fis_hdf5(path);
        H5Eclear2(H5E_DEFAULT);
        if (is == 0) dm_err_set(e, DM_EHDF5, "%s is not an HDF5 file", path);
        else h5_err(e, "open", h, -1);
        dm_h5_unlock();
        return -1;
    }
    h->dset = open_dataset(h, dset);
    uint64_t t1 = dm_ticks();
    if (h->dset < 0) {
        H5Eclear2(H5E_DEFAULT);
        dm_err_set(e, DM_EHDF5, "%s has no dataset named %s", path, dset);
        close_ids(h);
        dm_h5_unlock();
        return -1;
    }
    return opened(h, t0, t1, e);
}

int dm_h5_open_fields(dm_h5 *h, int nfields, const char *const *fields, dm_err *e) {
    if (nfields < 0 || nfields > DM_H5_FIELDS) {
        dm_err_set(e, DM_EARG, "%d fields beside dataset %s (0 to %d)", nfields, h->name,
                   DM_H5_FIELDS);
        return -1;
    }
    if (nfields > 0 && h->writing) {
        dm_err_set(e, DM_EARG, "fields beside dataset %s in %s are read only", h->name, h->path);
        return -1;
    }
    dm_h5_lock();
    int rc = 0;
    for (int i = 0; i < nfields && rc == 0; i++) {
        dm_h5_field *f = &h->field[i];
        memset(f, 0, sizeof *f);
        f->space = f->dtype = -1;
        snprintf(f->name, sizeof f->name, "%s", fields[i]);
        f->dset = open_dataset(h, f->name);
        h->nfields = i + 1;             /* closed with the handle from here on */
        if (f->dset < 0) {
            H5Eclear2(H5E_DEFAULT);
            dm_err_set(e, DM_EHDF5, "%s has no dataset named %s", h->path, f->name);
            rc = -1;
            break;
        }
        f->space = H5Dget_space(f->dset);
        f->dtype = H5Dget_type(f->dset);
        f->rank_ndims = f->space < 0 ? -1 : H5Sget_simple_extent_ndims(f->space);
        if (f->dtype < 0 || f->rank_ndims < 1 || f->rank_ndims > 8) {
            H5Eclear2(H5E_DEFAULT);
            dm_err_set(e, DM_EHDF5, "dataset %s in %s: not a dataset of 1 to 8 dimensions",
                       f->name, h->path);
            rc = -1;
            break;
        }
        H5Sget_simple_extent_dims(f->space, f->dims, NULL);
        if (f->dims[0] != h->dims[0]) {
            dm_err_set(e, DM_EARG, "dataset %s in %s has %llu rows, dataset %s %llu: a field "
                       "has a row for each row", f->name, h->path,
                       (unsigned long long)f->dims[0], h->name,
                       (unsigned long long)h->dims[0]);
            rc = -1;
            break;
        }
        f->elem_size = H5Tget_size(f->dtype);
        f->row_elems = 1;
        for (int d = 1; d < f->rank_ndims; d++) f->row_elems *= f->dims[d];
        f->row_bytes = (int64_t)(f->row_elems * f->elem_size);
        h->row_bytes += f->row_bytes;
    }
    dm_h5_unlock();
    return rc;
}

int dm_h5_create(dm_h5 *h, const char *path, const char *dset, int ndims, const hsize_t *dims,
                 hsize_t chunk_rows, int latest, int exclusive, int driver, MPI_Comm comm,
                 int collective, int nhints,
                 const char *const *keys, const char *const *vals, int32_t file_id,
                 dm_oplog *log, dm_err *e) {
    start(h, path, dset, driver, collective, 1, file_id, log);
    if (ndims < 1 || ndims > 8) {
        dm_err_set(e, DM_EARG, "cannot create a %d-dimensional dataset", ndims);
        return -1;
    }
    dm_h5_lock();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fapl = make_fapl(driver, comm, nhints, keys, vals, log, file_id, path, e);
    if (fapl < 0) {
        dm_h5_unlock();
        return -1;
    }
    if (latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    uint64_t t0 = dm_ticks();
    h->file = H5Fcreate(path, exclusive ? H5F_ACC_EXCL : H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (h->file < 0) {
        h5_err(e, "create", h, -1);
        dm_h5_unlock();
        return -1;
    }
    hid_t space = H5Screate_simple(ndims, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    herr_t ok = space >= 0 && dcpl >= 0 ? 0 : -1;
    if (ok == 0 && chunk_rows > 0) {
        hsize_t cd[8];
        cd[0] = chunk_rows < dims[0] ? chunk_rows : (dims[0] ? dims[0] : 1);
        for (int d = 1; d < ndims; d++) cd[d] = dims[d];
        ok = H5Pset_chunk(dcpl, ndims, cd);
    }
    h->dset = ok < 0 ? -1 : H5Dcreate2(h->file, dset, H5T_NATIVE_UINT8, space, H5P_DEFAULT,
                                       dcpl, H5P_DEFAULT);
    /* the file's metadata written now, before any row: its blocks are then allocated, so
     * that a file system filled during the writes fails the writes, not the close (a failed
     * H5Fclose cannot be recovered from, see g_h5_unclosed) */
    errno = 0;
    herr_t flushed = h->dset < 0 ? -1 : H5Fflush(h->file, H5F_SCOPE_LOCAL);
    int flush_errno = errno;
    uint64_t t1 = dm_ticks();
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    if (h->dset < 0 || flushed < 0) {
        if (h->dset >= 0 && flush_errno) {    /* the system's reason, not HDF5's stack */
            H5Eclear2(H5E_DEFAULT);
            dm_err_set(e, flush_errno, "writing the metadata of dataset %s in %s failed: %s",
                       h->name, h->path, strerror(flush_errno));
        } else {
            h5_err(e, "create", h, -1);
        }
        close_ids(h);
        dm_h5_unlock();
        return -1;
    }
    return opened(h, t0, t1, e);
}

int dm_h5_close(dm_h5 *h, dm_err *e) {
    if (h->file < 0) return 0;
    if (dm_inflight_check_close(&h->inflight, h->path, e) != 0) return -1;
    dm_h5_lock();
    uint64_t t0 = dm_ticks();
    herr_t r = close_fields(h) ? -1 : 0;
    if (h->dtype >= 0) r |= H5Tclose(h->dtype);
    if (h->space >= 0) r |= H5Sclose(h->space);
    if (h->dset >= 0) r |= H5Dclose(h->dset);
    r |= close_file(h->file);
    uint64_t t1 = dm_ticks();
    if (r < 0) h5_err(e, "close", h, -1);
    h->dtype = h->space = h->dset = h->file = -1;
    dm_h5_unlock();
    dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_CLOSE,
           h->driver != DM_H5_MPIO ? DM_IF_HDF5_SEC2
                                   : (h->collective ? DM_IF_HDF5_COLL : DM_IF_HDF5_IND));
    return r < 0 ? -1 : 0;
}

/* With dset_per_read, the dataset opened for a read and closed after it: a program that
 * opens the dataset for each read (h5py's f["x"][i] in a Dataset's __getitem__) starts each
 * with libhdf5's chunk cache empty, so a chunk holding several samples is read again for
 * each. The cache belongs to the open dataset, which libhdf5 shares among the handles of one
 * process that open the same file: no handle keeps it open between reads. Called holding
 * the lock. */
static int fresh_dataset(dm_h5 *h) {
    if (!h->dset_per_read || h->writing) return 0;
    if (h->dset >= 0) H5Dclose(h->dset);
    h->dset = open_dataset(h, h->name);
    return h->dset < 0 ? -1 : 0;
}

static void dataset_done(dm_h5 *h) {
    if (!h->dset_per_read || h->writing || h->dset < 0) return;
    H5Dclose(h->dset);
    h->dset = -1;
}

typedef struct { int64_t s, c; } rows;

static int cmp_rows(const void *a, const void *b) {
    const rows *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : 0;
}

/* Read rows r[0..m) (nrows of them) of field f into buf, as the rows' read did for the
 * dataset: the same selection, the field's own dataset opened anew with dset_per_read.
 * Called holding the lock; returns the H5Dread's result (-1 when a step before it failed). */
static herr_t read_field(dm_h5 *h, dm_h5_field *f, const rows *r, size_t m, int64_t nrows,
                         hid_t dxpl, char *buf) {
    if (h->dset_per_read) {
        if (f->dset >= 0) H5Dclose(f->dset);
        f->dset = open_dataset(h, f->name);
        if (f->dset < 0) return -1;
    }
    hid_t fs = H5Scopy(f->space);
    hsize_t st[8] = {0}, ct[8];
    int made = fs >= 0 && H5Sselect_none(fs) >= 0;
    for (size_t i = 0; i < m && made; i++) {
        st[0] = (hsize_t)r[i].s;
        ct[0] = (hsize_t)r[i].c;
        for (int d = 1; d < f->rank_ndims; d++) ct[d] = f->dims[d];
        made = H5Sselect_hyperslab(fs, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, st, NULL, ct,
                                   NULL) >= 0;
    }
    hsize_t nelem = (hsize_t)nrows * f->row_elems;
    hsize_t one = nelem > 0 ? nelem : 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    made = made && ms >= 0 && (nelem > 0 || H5Sselect_none(ms) >= 0);
    herr_t rc = made ? H5Dread(f->dset, f->dtype, ms, fs, dxpl, buf) : -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (h->dset_per_read && f->dset >= 0) {
        H5Dclose(f->dset);
        f->dset = -1;
    }
    return rc;
}

static int transfer(dm_h5 *h, size_t n, const int64_t *start, const int64_t *count, char *buf,
                    int64_t *total, int writing, dm_err *e) {
    *total = 0;
    /* sort and merge: the union of the selections, as HDF5 would make it */
    rows *r = n ? malloc(n * sizeof *r) : NULL;
    if (n && !r) { dm_err_set(e, DM_ENOMEM, "out of memory for %zu row ranges", n); return -1; }
    size_t k = 0;
    int local_fail = 0;
    for (size_t i = 0; i < n; i++) {
        if (count[i] == 0) continue;
        if (start[i] < 0 || count[i] < 0 || (hsize_t)(start[i] + count[i]) > h->dims[0]) {
            dm_err_set(e, DM_EARG, "rows [%lld, %lld) out of the %llu rows of dataset %s in %s",
                       (long long)start[i], (long long)(start[i] + count[i]),
                       (unsigned long long)h->dims[0], h->name, h->path);
            local_fail = 1;
            k = 0;
            break;
        }
        r[k++] = (rows){start[i], count[i]};
    }
    qsort(r, k, sizeof *r, cmp_rows);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && r[i].s <= r[m - 1].s + r[m - 1].c) {
            int64_t end = r[i].s + r[i].c;
            if (end > r[m - 1].s + r[m - 1].c) r[m - 1].c = end - r[m - 1].s;
        } else {
            r[m++] = r[i];
        }
    }
    dm_h5_lock();
    hid_t fs = H5Scopy(h->space);
    hsize_t st[8] = {0}, ct[8];
    int64_t nrows = 0;
    /* the selections made: a failure leaves this rank's selection empty (a collective call is
     * still joined, so that the other ranks do not wait for it) and is reported after */
    int made = fs >= 0 && H5Sselect_none(fs) >= 0;
    for (size_t i = 0; i < m && made; i++) {
        st[0] = (hsize_t)r[i].s;
        ct[0] = (hsize_t)r[i].c;
        for (int d = 1; d < h->rank_ndims; d++) ct[d] = h->dims[d];
        made = H5Sselect_hyperslab(fs, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, st, NULL, ct,
                                   NULL) >= 0;
        nrows += r[i].c;
    }
    hsize_t nelem = (hsize_t)nrows * h->row_elems;
    hsize_t one = nelem > 0 ? nelem : 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    made = made && ms >= 0;
    if (!made) {
        if (fs >= 0) H5Sselect_none(fs);
        if (ms >= 0) H5Sselect_none(ms);
        nelem = 0;
    } else if (nelem == 0) {
        H5Sselect_none(ms);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    int props = dxpl >= 0 && (h->driver != DM_H5_MPIO ||
        H5Pset_dxpl_mpio(dxpl, h->collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT)
        >= 0);
    int64_t first = m > 0 ? r[0].s : -1;
    herr_t rc = 0;
    uint64_t t0 = dm_ticks();
    if (!writing && fresh_dataset(h) != 0) rc = -1;
    /* an independent read of nothing is skipped; a collective one still joins */
    else if (props && fs >= 0 && ms >= 0 && (nelem > 0 || h->collective)) {
        if (writing) rc = H5Dwrite(h->dset, h->dtype, ms, fs, dxpl, buf);
        else rc = H5Dread(h->dset, h->dtype, ms, fs, dxpl, buf);
    }
    /* the sequences' bytes, counted, and the heap memory libhdf5 allocated for them given
     * back (the descriptors in buf are Darshan's H5D bytes; the sequences the sample's) */
    int64_t heap = 0;
    if (h->vlen && !writing && rc >= 0 && nelem > 0) {
        const hvl_t *seq = (const hvl_t *)buf;
        for (hsize_t k = 0; k < nelem; k++) heap += (int64_t)seq[k].len;
        H5Dvlen_reclaim(h->dtype, ms, H5P_DEFAULT, buf);
    }
    if (!writing) dataset_done(h);
    uint64_t t1 = dm_ticks();
    /* the fields' reads, each logged as a read of its own after the rows' */
    int field_failed = -1;
    uint64_t ft[DM_H5_FIELDS + 1];
    ft[0] = t1;
    int64_t packed = (int64_t)(nelem * h->elem_size);
    for (int i = 0; i < h->nfields && !writing; i++) {
        dm_h5_field *f = &h->field[i];
        herr_t frc = 0;
        int ok = rc >= 0 && made && props;
        /* a collective read joins the others' even with nothing to read */
        if ((ok && nelem > 0) || h->collective)
            frc = read_field(h, f, r, ok ? m : 0, ok ? nrows : 0, dxpl, buf + packed);
        ft[i + 1] = dm_ticks();
        if (frc < 0 && field_failed < 0) field_failed = i;
        packed += (int64_t)(made ? nrows : 0) * f->row_bytes;
    }
    if (!local_fail) {
        if (!made || !props)
            h5_err(e, !made ? "selecting the rows" : "setting the transfer mode", h, first);
        else if (rc < 0)
            h5_err(e, writing ? "H5Dwrite" : "H5Dread", h, first);
        else if (field_failed >= 0) {
            char what[300];
            snprintf(what, sizeof what, "H5Dread of field %s", h->field[field_failed].name);
            h5_err(e, what, h, first);
            rc = -1;
        }
    }
    if (dxpl >= 0) H5Pclose(dxpl);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    dm_h5_unlock();
    free(r);
    if (local_fail || !made || !props || rc < 0) return -1;
    int64_t bytes = (int64_t)(nelem * h->elem_size);
    int iface = h->driver != DM_H5_MPIO ? DM_IF_HDF5_SEC2
                                        : (h->collective ? DM_IF_HDF5_COLL : DM_IF_HDF5_IND);
    *total = h->vlen ? heap : bytes;
    if (nelem > 0 || h->collective) {
        dm_log(h->log, t0, t1, first >= 0 ? first * h->own_row_bytes : -1, bytes, h->file_id,
               writing ? DM_OP_WRITE : DM_OP_READ, iface);
        for (int i = 0; i < h->nfields && !writing; i++) {
            int64_t fb = nrows * h->field[i].row_bytes;
            *total += fb;
            dm_log(h->log, ft[i], ft[i + 1], first >= 0 ? first * h->field[i].row_bytes : -1,
                   fb, h->file_id, DM_OP_READ, iface);
        }
    }
    return 0;
}

int dm_h5_read_rows(dm_h5 *h, size_t n, const int64_t *start, const int64_t *count, char *buf,
                    int64_t *total, dm_err *e) {
    return transfer(h, n, start, count, buf, total, 0, e);
}

int dm_h5_read_box(dm_h5 *h, int ndims, const int64_t *start, const int64_t *count, char *buf,
                   int64_t *total, dm_err *e) {
    *total = 0;
    if (ndims != h->rank_ndims) {
        dm_err_set(e, DM_EARG, "a %d-dimensional box of the %d-dimensional dataset %s in %s",
                   ndims, h->rank_ndims, h->name, h->path);
        return -1;
    }
    /* a box of no elements (every count 0) reads nothing: a collective call of a rank with
     * no crop in this round still joins the others' */
    int empty = 1;
    for (int d = 0; d < ndims; d++) empty = empty && count[d] == 0;
    hsize_t st[8], ct[8], nelem = empty ? 0 : 1;
    int bad = 0;
    for (int d = 0; d < ndims && !empty && !bad; d++) {
        if (start[d] < 0 || count[d] < 1 || (hsize_t)(start[d] + count[d]) > h->dims[d]) {
            dm_err_set(e, DM_EARG, "box [%lld, %lld) out of dimension %d (%llu) of dataset %s "
                       "in %s", (long long)start[d], (long long)(start[d] + count[d]), d,
                       (unsigned long long)h->dims[d], h->name, h->path);
            bad = 1;
            break;
        }
        st[d] = (hsize_t)start[d];
        ct[d] = (hsize_t)count[d];
        nelem *= ct[d];
    }
    /* a bad box is this rank's alone: an independent read stops here, a collective one joins
     * the others' with nothing selected and reports after */
    if (bad && !h->collective) return -1;
    if (bad) nelem = 0;
    dm_h5_lock();
    hid_t fs = H5Scopy(h->space);
    hsize_t one = 1;
    hid_t ms = nelem > 0 ? H5Screate_simple(ndims, ct, NULL) : H5Screate_simple(1, &one, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    int made = fs >= 0 && ms >= 0 && dxpl >= 0 &&
               (nelem > 0 ? H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, ct, NULL) >= 0
                          : H5Sselect_none(fs) >= 0 && H5Sselect_none(ms) >= 0) &&
               (h->driver != DM_H5_MPIO ||
                H5Pset_dxpl_mpio(dxpl, h->collective ? H5FD_MPIO_COLLECTIVE
                                                     : H5FD_MPIO_INDEPENDENT) >= 0);
    uint64_t t0 = dm_ticks();
    herr_t rc = 0;
    if (nelem > 0 || h->collective)
        rc = made && fresh_dataset(h) == 0 ? H5Dread(h->dset, h->dtype, ms, fs, dxpl, buf)
                                           : -1;
    dataset_done(h);
    uint64_t t1 = dm_ticks();
    if (rc < 0 && !bad) h5_err(e, made ? "H5Dread" : "selecting the box", h, start[0]);
    if (dxpl >= 0) H5Pclose(dxpl);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    dm_h5_unlock();
    if (rc < 0 || bad) return -1;
    int64_t bytes = (int64_t)(nelem * h->elem_size);
    *total = bytes;
    if (nelem > 0 || h->collective)
        dm_log(h->log, t0, t1, nelem > 0 ? start[0] * h->own_row_bytes : -1, bytes, h->file_id,
               DM_OP_READ, h->driver != DM_H5_MPIO ? DM_IF_HDF5_SEC2
                           : (h->collective ? DM_IF_HDF5_COLL : DM_IF_HDF5_IND));
    return 0;
}

int dm_h5_write_rows(dm_h5 *h, size_t n, const int64_t *start, const int64_t *count,
                     const char *buf, int64_t *total, dm_err *e) {
    return transfer(h, n, start, count, (char *)buf, total, 1, e);
}

int dm_h5_flush(dm_h5 *h, dm_err *e) {
    dm_h5_lock();
    uint64_t t0 = dm_ticks();
    herr_t r = H5Fflush(h->file, H5F_SCOPE_LOCAL);
    uint64_t t1 = dm_ticks();
    if (r < 0) h5_err(e, "H5Fflush", h, -1);
    dm_h5_unlock();
    if (r < 0) return -1;
    dm_log(h->log, t0, t1, -1, 0, h->file_id, DM_OP_FSYNC,
           h->driver != DM_H5_MPIO ? DM_IF_HDF5_SEC2
                                   : (h->collective ? DM_IF_HDF5_COLL : DM_IF_HDF5_IND));
    return 0;
}

/* The size of the file as libhdf5 knows it. */
static int h5_size(void *hp, int64_t *size, dm_err *e) {
    dm_h5 *h = hp;
    hsize_t s = 0;
    dm_h5_lock();
    herr_t r = H5Fget_filesize(h->file, &s);
    if (r < 0) h5_err(e, "H5Fget_filesize", h, -1);
    dm_h5_unlock();
    if (r < 0) return -1;
    *size = (int64_t)s;
    return 0;
}

/* ---- the engine's table: ranges are rows (start, count) of dimension 0, read or written as
 * one union of hyperslabs in one H5Dread (H5Dwrite) at submit; libhdf5 decides its transfers
 * (xfer) and reads a selection into a buffer that holds it (discard). libhdf5 is not
 * thread-safe in this build: every HDF5 call of the engine holds one lock (dm_h5_lock), so
 * read-ahead threads take turns inside libhdf5; through the MPI-IO driver the reads need
 * MPI_THREAD_MULTIPLE as MPI-IO's do. Opening and closing may be collective (the MPI-IO
 * driver): a handle is never closed by its rank alone. */
static int h5_open(void *hp, const dm_open_args *a, dm_err *e) {
    if (a->ndims > 0)
        return dm_h5_create(hp, a->path, a->dataset, a->ndims, a->dims, a->chunk_rows, a->latest,
                            a->exclusive, a->driver, a->comm, a->collective, a->nhints, a->keys,
                            a->vals, a->file_id, a->log, e);
    if (dm_h5_open(hp, a->path, a->dataset, a->driver, a->comm, a->collective,
                   (a->flags & DM_O_WRITE) != 0, a->nhints, a->keys, a->vals, a->file_id,
                   a->log, e) != 0)
        return -1;
    if (a->nfields > 0 && dm_h5_open_fields(hp, a->nfields, a->fields, e) != 0) {
        dm_err held = *e;               /* the fields' error, not the close's */
        dm_h5_close(hp, e);
        *e = held;
        return -1;
    }
    return 0;
}
static int h5_close(void *h, dm_err *e) { return dm_h5_close(h, e); }
static int h5_sync(void *h, int data_only, dm_err *e) {
    (void)data_only;        /* H5Fflush has no data-only form */
    return dm_h5_flush(h, e);
}

static int h5_submit(const dm_engine_ops *ops, void *h, dm_io *io, dm_err *e) {
    (void)ops;
    return transfer(h, io->n, io->off, io->len, io->buf, &io->total, io->op == DM_OP_WRITE, e);
}

static int h5_threadable(const void *hp, dm_err *e) {
    const dm_h5 *h = hp;
    if (!h->collective) return 1;
    dm_err_set(e, DM_EARG, "read-ahead cannot issue collective HDF5 reads (%s)", h->path);
    return 0;
}

static int64_t h5_span(const void *hp, size_t n, const int64_t *len) {
    return dm_span_bytes(hp, n, len) * ((const dm_h5 *)hp)->row_bytes;
}

static dm_oplog *h5_log(const void *h) { return ((const dm_h5 *)h)->log; }
static dm_inflight *h5_inflight(void *h) { return &((dm_h5 *)h)->inflight; }

const dm_engine_ops dm_h5_ops = {
    .name = "hdf5", .ordered = 0, .close_when_freed = 0, .cuts = 0,
    .open = h5_open, .close = h5_close, .size = h5_size, .sync = h5_sync,
    .submit = h5_submit, .complete = dm_done_at_submit,
    .threadable = h5_threadable, .span = h5_span, .log = h5_log, .transfer = NULL,
    .inflight = h5_inflight,
};
