#ifndef PASSKEY_CFUZZERDRIVER_H
#define PASSKEY_CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// One fuzz input: libFuzzer's LLVMFuzzerTestOneInput signature.
typedef int (*passkey_fuzz_callback)(const uint8_t *data, size_t size);

/// Whether libFuzzer's driver is linked in: true only in the instrumented build that Tools/fuzz makes
/// (it links libclang_rt.fuzzer_no_main and forces LLVMFuzzerRunDriver in). Ordinary builds replay inputs.
int passkey_fuzzer_is_linked(void);

/// Runs libFuzzer with these command-line arguments. Returns -1 when libFuzzer is not linked in.
int passkey_fuzzer_run(int *argc, char ***argv, passkey_fuzz_callback callback);

#endif
