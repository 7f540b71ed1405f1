/* Fuzz target: fragmentation recipes (core/mm/fragment.c), as --fragment, THPEMU_FRAGMENT and
 * a trace's header give them, applied to a fresh 16 MiB pool; the pool must stay consistent
 * (mm_check) whatever the recipe did. The first 8 bytes are the seed. */
#include "fuzz.h"
#include "mm/internal.h" /* mm_check */
#include "mm_fakeenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fakeenv fe;
	uint64_t seed = 0;
	char err[512], *recipe;

	if (size >= sizeof(seed)) {
		memcpy(&seed, data, sizeof(seed));
		data += sizeof(seed);
		size -= sizeof(seed);
	}
	recipe = fuzz_str(data, size);
	if (fakeenv_init(&fe, "linux-3.1", 16ULL << 20, false, err, sizeof(err)) != 0)
		abort();
	if (mm_fragment(fe.mm, recipe, seed, err, sizeof(err), NULL) == 0)
		FUZZ_CHECK(mm_check(fe.mm, err, sizeof(err)) == 0);
	fakeenv_destroy(&fe);
	free(recipe);
	return 0;
}
