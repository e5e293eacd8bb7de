#include "CFuzzerDriver.h"

// A weak reference: ordinary builds link without libFuzzer and see NULL here. Swift cannot declare a
// weak import of a C function, which is the only reason this file exists.
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t))
    __attribute__((weak));

int passkey_fuzzer_is_linked(void) { return LLVMFuzzerRunDriver != NULL; }

int passkey_fuzzer_run(int *argc, char ***argv, passkey_fuzz_callback callback) {
    if (LLVMFuzzerRunDriver == NULL) {
        return -1;
    }
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
