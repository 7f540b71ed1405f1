/* khugepaged, collapse and MADV_COLLAPSE (placeholder: implemented in the next commit). */
#include <errno.h>

#include "mm/internal.h"

int mm_anon_split_folio(struct mm *mm, uint32_t head)
{
	(void)mm;
	(void)head;
	return -ENOSYS;
}
