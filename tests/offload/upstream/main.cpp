// The entry point of ordo's build of upstream's OffloadAPI unit tests (tests/offload/upstream):
// gtest first, then LLVM's command-line options (upstream's `--platform`), as LLVM's own unit
// test main does. Written for ordo; no upstream text.
#include <gtest/gtest.h>

#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "OffloadAPI unit tests\n");
  return RUN_ALL_TESTS();
}
