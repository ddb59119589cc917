/* t.h past its case limit: three cases for a table of two must fail the file, not drop one
   (tests/CMakeLists.txt: unit/t_case_limit checks what it says). */
#define T_MAX_CASES 2
#include "t.h"

T_TEST(test_one) { T_CHECK(1); }
T_TEST(test_two) { T_CHECK(1); }
T_TEST(test_three) { T_CHECK(1); }

T_RUN_ALL()
