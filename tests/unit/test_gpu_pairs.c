/* test_gpu_search.c's cases with the search's level m-2 and last row counted in closed form
   (NQ_PAIRS, gpu_pairs): the same solutions and nodes as the CPU kernels. */
#define NQ_PAIRS 1
#include "test_gpu_search.c"
