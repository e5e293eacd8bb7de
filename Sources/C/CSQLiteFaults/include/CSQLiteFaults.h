#ifndef PASSKEY_SQLITE_FAULTS_H
#define PASSKEY_SQLITE_FAULTS_H

#include <stddef.h>

/// A SQLite VFS that wraps the default one and makes its file calls fail on demand, for fuzzing the store with I/O
/// faults: a read, write, truncate or sync fails as a real disk's would (SQLITE_IOERR_*, or SQLITE_FULL for a
/// write), before it touches the file. Which calls fail is a plan of bytes, one consumed by each such call: a byte
/// whose low three bits are zero fails its call (one call in eight for random bytes); bit 3 makes a failing write
/// SQLITE_FULL. Past the plan's end nothing fails.

/// Registers the VFS ("passkey-faults") as SQLite's default, once; later calls do nothing. Every connection the
/// process opens afterwards goes through it. Returns an SQLite result code.
int passkey_sqlite_faults_install(void);

/// Replaces the calling thread's plan (each thread has its own) with a copy of `count` bytes (at most 65,536 are
/// kept), starting at its first byte, not paused.
void passkey_sqlite_faults_plan(const unsigned char *bytes, size_t count);

/// Ends the calling thread's plan: nothing it calls fails until the next one.
void passkey_sqlite_faults_clear(void);

/// While `paused` is nonzero, nothing the calling thread calls fails and its plan stays where it is.
void passkey_sqlite_faults_pause(int paused);

/// How many of the calling thread's calls failed since it started.
unsigned long long passkey_sqlite_faults_injected(void);

#endif
