#include "CSQLiteFaults.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { plan_capacity = 65536 };

// Each thread has its own plan, so that a thread fuzzing the store never fails another thread's files (the corpus
// replay tests run beside every other test of the package, in one process).
static _Thread_local unsigned char *plan;
static _Thread_local size_t plan_count;
static _Thread_local size_t plan_next;
static _Thread_local int plan_paused;
static _Thread_local unsigned long long injected;

/// The next byte of this thread's plan decides this call: SQLITE_OK to go ahead, else the code it fails with.
static int decide(int failure, int full) {
    if (plan_paused || plan_next >= plan_count) return SQLITE_OK;
    unsigned char byte = plan[plan_next++];
    if ((byte & 7) != 0) return SQLITE_OK;
    injected++;
    return (full && (byte & 8)) ? SQLITE_FULL : failure;
}

void passkey_sqlite_faults_plan(const unsigned char *bytes, size_t count) {
    if (count > plan_capacity) count = plan_capacity;
    free(plan);
    plan = 0;
    plan_count = 0;
    plan_next = 0;
    plan_paused = 0;
    if (count == 0) return;
    plan = malloc(count);
    if (!plan) return;
    memcpy(plan, bytes, count);
    plan_count = count;
}

void passkey_sqlite_faults_clear(void) { passkey_sqlite_faults_plan(0, 0); }

void passkey_sqlite_faults_pause(int paused) { plan_paused = paused; }

unsigned long long passkey_sqlite_faults_injected(void) { return injected; }

/// A file of the wrapped VFS, followed in the same allocation by the real file.
typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
} fault_file;

static sqlite3_vfs *root;
static sqlite3_vfs fault_vfs;
static sqlite3_io_methods fault_methods;

#define REAL(file) (((fault_file *)(file))->real)

static int fault_close(sqlite3_file *file) { return REAL(file)->pMethods->xClose(REAL(file)); }

static int fault_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    int failure = decide(SQLITE_IOERR_READ, 0);
    if (failure != SQLITE_OK) return failure;
    return REAL(file)->pMethods->xRead(REAL(file), buffer, amount, offset);
}

static int fault_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    int failure = decide(SQLITE_IOERR_WRITE, 1);
    if (failure != SQLITE_OK) return failure;
    return REAL(file)->pMethods->xWrite(REAL(file), buffer, amount, offset);
}

static int fault_truncate(sqlite3_file *file, sqlite3_int64 size) {
    int failure = decide(SQLITE_IOERR_TRUNCATE, 0);
    if (failure != SQLITE_OK) return failure;
    return REAL(file)->pMethods->xTruncate(REAL(file), size);
}

static int fault_sync(sqlite3_file *file, int flags) {
    int failure = decide(SQLITE_IOERR_FSYNC, 0);
    if (failure != SQLITE_OK) return failure;
    return REAL(file)->pMethods->xSync(REAL(file), flags);
}

static int fault_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}

static int fault_lock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }

static int fault_unlock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xUnlock(REAL(file), level); }

static int fault_check_reserved_lock(sqlite3_file *file, int *result) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), result);
}

static int fault_file_control(sqlite3_file *file, int operation, void *argument) {
    return REAL(file)->pMethods->xFileControl(REAL(file), operation, argument);
}

static int fault_sector_size(sqlite3_file *file) { return REAL(file)->pMethods->xSectorSize(REAL(file)); }

static int fault_device_characteristics(sqlite3_file *file) {
    return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}

static int fault_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **pointer) {
    return REAL(file)->pMethods->xShmMap(REAL(file), region, size, extend, pointer);
}

static int fault_shm_lock(sqlite3_file *file, int offset, int count, int flags) {
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, count, flags);
}

static void fault_shm_barrier(sqlite3_file *file) { REAL(file)->pMethods->xShmBarrier(REAL(file)); }

static int fault_shm_unmap(sqlite3_file *file, int delete_flag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}

static int fault_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **pointer) {
    return REAL(file)->pMethods->xFetch(REAL(file), offset, amount, pointer);
}

static int fault_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    return REAL(file)->pMethods->xUnfetch(REAL(file), offset, pointer);
}

static int fault_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    fault_file *wrapper = (fault_file *)file;
    wrapper->real = (sqlite3_file *)&wrapper[1];
    int result = root->xOpen(root, name, wrapper->real, flags, out_flags);
    // The unix VFS sets pMethods whenever the file needs closing, even on failure.
    wrapper->base.pMethods = wrapper->real->pMethods ? &fault_methods : 0;
    return result;
}

static int fault_delete(sqlite3_vfs *vfs, const char *name, int sync_directory) {
    (void)vfs;
    return root->xDelete(root, name, sync_directory);
}

static int fault_access(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    (void)vfs;
    return root->xAccess(root, name, flags, result);
}

static int fault_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *output) {
    (void)vfs;
    return root->xFullPathname(root, name, size, output);
}

static void *fault_dl_open(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return root->xDlOpen(root, name);
}

static void fault_dl_error(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    root->xDlError(root, size, message);
}

static void (*fault_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return root->xDlSym(root, handle, symbol);
}

static void fault_dl_close(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    root->xDlClose(root, handle);
}

static int fault_randomness(sqlite3_vfs *vfs, int size, char *output) {
    (void)vfs;
    return root->xRandomness(root, size, output);
}

static int fault_sleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return root->xSleep(root, microseconds);
}

static int fault_current_time(sqlite3_vfs *vfs, double *now) {
    (void)vfs;
    return root->xCurrentTime(root, now);
}

static int fault_get_last_error(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    return root->xGetLastError(root, size, message);
}

static int fault_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *now) {
    (void)vfs;
    return root->xCurrentTimeInt64(root, now);
}

int passkey_sqlite_faults_install(void) {
    static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
    int result = SQLITE_OK;
    pthread_mutex_lock(&install_lock);
    if (!root) {
        result = sqlite3_initialize();
        sqlite3_vfs *found = result == SQLITE_OK ? sqlite3_vfs_find(0) : 0;
        if (found && found->iVersion >= 2) {
            fault_methods = (sqlite3_io_methods){
                .iVersion = 3,
                .xClose = fault_close,
                .xRead = fault_read,
                .xWrite = fault_write,
                .xTruncate = fault_truncate,
                .xSync = fault_sync,
                .xFileSize = fault_file_size,
                .xLock = fault_lock,
                .xUnlock = fault_unlock,
                .xCheckReservedLock = fault_check_reserved_lock,
                .xFileControl = fault_file_control,
                .xSectorSize = fault_sector_size,
                .xDeviceCharacteristics = fault_device_characteristics,
                .xShmMap = fault_shm_map,
                .xShmLock = fault_shm_lock,
                .xShmBarrier = fault_shm_barrier,
                .xShmUnmap = fault_shm_unmap,
                .xFetch = fault_fetch,
                .xUnfetch = fault_unfetch,
            };
            fault_vfs = (sqlite3_vfs){
                .iVersion = 2,
                .szOsFile = (int)sizeof(fault_file) + found->szOsFile,
                .mxPathname = found->mxPathname,
                .zName = "passkey-faults",
                .xOpen = fault_open,
                .xDelete = fault_delete,
                .xAccess = fault_access,
                .xFullPathname = fault_full_pathname,
                .xDlOpen = fault_dl_open,
                .xDlError = fault_dl_error,
                .xDlSym = fault_dl_sym,
                .xDlClose = fault_dl_close,
                .xRandomness = fault_randomness,
                .xSleep = fault_sleep,
                .xCurrentTime = fault_current_time,
                .xGetLastError = fault_get_last_error,
                .xCurrentTimeInt64 = fault_current_time_int64,
            };
            root = found;
            result = sqlite3_vfs_register(&fault_vfs, 1);
            if (result != SQLITE_OK) root = 0;
        } else if (result == SQLITE_OK) {
            result = SQLITE_ERROR;
        }
    }
    pthread_mutex_unlock(&install_lock);
    return result;
}
