#include <sqlite3.h>

/// Whether closing the last connection checkpoints the WAL into the main file and removes it. sqlite3_db_config is
/// variadic, which Swift cannot call, hence this wrapper. Returns an SQLite result code.
static inline int passkey_sqlite3_checkpoint_on_close(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, (int *)0);
}
