/* The two entry points libFuzzer calls. Its own FuzzerInterface.h is not installed with clang,
   and without a prototype every target trips the build's -Wmissing-prototypes. */
#ifndef NQ_FUZZ_H
#define NQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
