#include <sqlite3.h>

/// Whether closing the last connection checkpoints the WAL into the main file and removes it. sqlite3_db_config is
/// variadic, which Swift cannot call, hence this wrapper. Returns an SQLite result code.
static inline int passkey_sqlite3_checkpoint_on_close(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, (int *)0);
}

/// The first 32 KiB region of the connection's WAL index (the `-shm` file, https://sqlite.org/walformat.html), as
/// SQLite itself has mapped it for the main database, through the VFS's xShmMap without extending it. NULL when the
/// VFS has no shared memory or the region is not there. Call only while the main database is in WAL mode: the pointer
/// stays valid until the connection closes (or leaves WAL mode, which the store never does).
static inline const void *passkey_sqlite3_wal_index(sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file || !file->pMethods) {
        return 0;
    }
    if (file->pMethods->iVersion < 2 || !file->pMethods->xShmMap) return 0;
    void volatile *region = 0;
    if (file->pMethods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return 0;
    return (const void *)region;
}

/// Reads the WAL-index header (walformat.html §2.1: 48 bytes, kept twice) the way SQLite's readers do
/// (walIndexTryHdr): the first copy, a barrier, the second copy. Writers store the second copy first. Returns 1 and
/// the header in `header` when both copies agree, the header is initialized (isInit, byte 12) and its version is the
/// one the format describes (3007000); 0 otherwise, for example while a writer is between its two copies.
static inline int passkey_wal_index_header(const void *region, unsigned long long header[6]) {
    const volatile unsigned long long *copies = (const volatile unsigned long long *)region;
    unsigned long long second[6];
    for (int i = 0; i < 6; i++) header[i] = copies[i];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    for (int i = 0; i < 6; i++) second[i] = copies[6 + i];
    for (int i = 0; i < 6; i++) {
        if (header[i] != second[i]) return 0;
    }
    unsigned int version;
    unsigned char initialized;
    __builtin_memcpy(&version, (const unsigned char *)header, 4);
    __builtin_memcpy(&initialized, (const unsigned char *)header + 12, 1);
    return version == 3007000 && initialized != 0;
}
